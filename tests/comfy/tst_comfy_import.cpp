// ComfyUI import suite (app/interop): files the tests write in the structure of the Wan2.2 templates,
// UI and API formats → Vidgraph documents with the right node types, params and links; the A14B
// two-expert graph with its Lightning group or its plain group; bypassed LoRAs; the approximation
// sentences; unknown nodes kept or left out; another model family refused; a subgraph imported as a subgraph;
// vidgraph-run validate / run on imported files (end to end on the tiny model).
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "interop/comfy_import.h"
#include "interop/comfy_solvers.h"
#include "engine/subgraph.h"
#include "comfy_fixtures.h"
#include "process_run.h"

using namespace vidgraph;
using comfy_test::json;
using comfy_test::UiGraph;
namespace fs = std::filesystem;

namespace {

const QString kRunner = QStringLiteral(VIDGRAPH_BINARY_DIR) + "/bin/vidgraph-run";

comfy::ComfyImport import_or_fail(const json& root) {
  auto r = comfy::import_comfy_json(root, "test.json");
  if (!r.ok()) throw std::runtime_error(r.error().message);
  return std::move(r.value());
}

const engine::Node& node_of(const engine::GraphDocument& doc, const std::string& id) {
  const engine::Node* n = doc.find_node(id);
  if (!n) throw std::runtime_error("no node '" + id + "' in the imported document");
  return *n;
}

std::vector<std::string> types_of(const engine::GraphDocument& doc) {
  std::vector<std::string> out;
  for (const engine::Node& n : doc.nodes()) out.push_back(n.id + ":" + n.type);
  std::sort(out.begin(), out.end());
  return out;
}

bool linked(const engine::GraphDocument& doc, const std::string& to, const std::string& input, const std::string& from,
            const std::string& output) {
  const auto& inputs = node_of(doc, to).inputs;
  const auto it = inputs.find(input);
  return it != inputs.end() && it->second.node == from && it->second.output == output;
}

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return l.find(part) != std::string::npos; });
}

bool lists(const std::vector<comfy::ReportEntry>& entries, const std::string& id, const std::string& type,
           const std::string& part = "") {
  return std::any_of(entries.begin(), entries.end(), [&](const comfy::ReportEntry& e) {
    return e.id == id && e.type == type && e.sentence.find(part) != std::string::npos;
  });
}

std::string write_file(const QTemporaryDir& dir, const std::string& name, const json& j) {
  const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
  std::ofstream(path, std::ios::binary) << j.dump(2);
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The 5B text-to-video graph as the tests expect it, whichever format it came from.
void check_ti2v_5b(const engine::GraphDocument& doc) {
  const std::vector<std::string> expected = {"decode:VAEDecode", "encode:EncodeText", "export:ExportVideo",
                                             "model:LoadWanModel", "prompt:Prompt", "sampler:WanSampler"};
  QCOMPARE(types_of(doc), expected);
  const json& s = node_of(doc, "sampler").params;
  QCOMPARE(s["width"].get<int>(), 1280);
  QCOMPARE(s["height"].get<int>(), 704);
  QCOMPARE(s["frames"].get<int>(), 121);
  QCOMPARE(s["steps"].get<int>(), 30);
  QCOMPARE(s["seed"].get<int>(), 42);
  QCOMPARE(s["guidance"].get<double>(), 5.0);
  QCOMPARE(s["shift"].get<double>(), 8.0);
  QCOMPARE(s["scheduler"].get<std::string>(), std::string("unipc"));
  QCOMPARE(s["attention"].get<std::string>(), std::string("full"));
  const json& p = node_of(doc, "prompt").params;
  QCOMPARE(p["positive"].get<std::string>(), std::string(comfy_test::kPositive));
  QCOMPARE(p["negative"].get<std::string>(), std::string(comfy_test::kNegative));
  QCOMPARE(node_of(doc, "decode").params["fps"].get<double>(), 24.0);
  const json& e = node_of(doc, "export").params;
  QCOMPARE(e["filename"].get<std::string>(), std::string("{output}/video-ComfyUI.mp4"));
  QCOMPARE(e["format"].get<std::string>(), std::string("mp4"));
  QCOMPARE(e["fps"].get<double>(), 24.0);
  QVERIFY(linked(doc, "encode", "text_encoder", "model", "text_encoder"));
  QVERIFY(linked(doc, "encode", "prompt", "prompt", "prompt"));
  QVERIFY(linked(doc, "sampler", "model", "model", "model"));
  QVERIFY(linked(doc, "sampler", "conditioning", "encode", "conditioning"));
  QVERIFY(linked(doc, "decode", "latent", "sampler", "latent"));
  QVERIFY(linked(doc, "decode", "vae", "model", "vae"));
  QVERIFY(linked(doc, "export", "video", "decode", "video"));
  QVERIFY(node_of(doc, "sampler").inputs.count("image") == 0);
  const json& files = node_of(doc, "model").extra["comfyui_files"];
  QCOMPARE(files["dit"].get<std::string>(), std::string("wan2.2_ti2v_5B_fp16.safetensors"));
  QCOMPARE(files["vae"].get<std::string>(), std::string("wan2.2_vae.safetensors"));
  QCOMPARE(files["text_encoder"].get<std::string>(), std::string("umt5_xxl_fp8_e4m3fn_scaled.safetensors"));
  QVERIFY2(!node_of(doc, "model").params.contains("dit"), "ComfyUI's bare names are not file params");
}

// The 5B graph with its prompts and sampler inside a subgraph named "Sampling", instance node 70
// (inputs model, clip, latent; output LATENT), as newer templates wrap their pipeline; `promoted`
// lists the widgets the instance shows, with `values` its widgets_values.
json sampling_subgraph_file(const json& promoted = nullptr, const json& values = json::array()) {
  UiGraph outer;
  outer.node(37, "UNETLoader", {"wan2.2_ti2v_5B_fp16.safetensors", "default"}, {}, {"MODEL"});
  outer.node(38, "CLIPLoader", {"umt5_xxl_fp8_e4m3fn_scaled.safetensors", "wan", "default"}, {}, {"CLIP"});
  outer.node(39, "VAELoader", {"wan2.2_vae.safetensors"}, {}, {"VAE"});
  outer.node(48, "ModelSamplingSD3", {8}, {{"model", "MODEL"}}, {"MODEL"});
  outer.link(37, 0, 48, "model");
  outer.node(55, "Wan22ImageToVideoLatent", {1280, 704, 121, 1}, {{"vae", "VAE"}, {"start_image", "IMAGE"}}, {"LATENT"});
  outer.link(39, 0, 55, "vae");
  const std::string sub_id = "9f0c2a8e-5b1d-4c7e-a3f6-1d2e3f4a5b6c";
  outer.node(70, sub_id, json::array(), {{"model", "MODEL"}, {"clip", "CLIP"}, {"latent", "LATENT"}}, {"LATENT"});
  outer.link(48, 0, 70, "model");
  outer.link(38, 0, 70, "clip");
  outer.link(55, 0, 70, "latent");
  comfy_test::add_video_out(outer, 70, 39, 24);
  UiGraph inner;
  inner.node(6, "CLIPTextEncode", {comfy_test::kPositive}, {{"clip", "CLIP"}}, {"CONDITIONING"});
  inner.node(7, "CLIPTextEncode", {comfy_test::kNegative}, {{"clip", "CLIP"}}, {"CONDITIONING"});
  inner.node(3, "KSampler", {42, "fixed", 30, 5, "uni_pc", "simple", 1},
             {{"model", "MODEL"}, {"positive", "CONDITIONING"}, {"negative", "CONDITIONING"}, {"latent_image", "LATENT"}},
             {"LATENT"});
  json inner_file = inner.file();
  json links = json::array();
  int link_id = 500;
  auto wire = [&](int from, int from_slot, int to, int to_slot, const std::string& type) {
    links.push_back({{"id", link_id}, {"origin_id", from}, {"origin_slot", from_slot}, {"target_id", to},
                     {"target_slot", to_slot}, {"type", type}});
    for (json& n : inner_file["nodes"]) {
      if (n["id"] == to && to_slot < static_cast<int>(n["inputs"].size())) n["inputs"][to_slot]["link"] = link_id;
    }
    ++link_id;
  };
  wire(-10, 1, 6, 0, "CLIP");
  wire(-10, 1, 7, 0, "CLIP");
  wire(-10, 0, 3, 0, "MODEL");
  wire(6, 0, 3, 1, "CONDITIONING");
  wire(7, 0, 3, 2, "CONDITIONING");
  wire(-10, 3, 3, 3, "LATENT");  // input 2 is a promoted widget the instance does not list
  wire(3, 0, -20, 0, "LATENT");
  json file = outer.file();
  file["definitions"]["subgraphs"] = json::array({{{"id", sub_id}, {"name", "Sampling"},
                                                   {"inputs", {{{"name", "model"}}, {{"name", "clip"}}, {{"name", "text"}}, {{"name", "latent"}}}},
                                                   {"outputs", {{{"name", "LATENT"}}}},
                                                   {"nodes", inner_file["nodes"]}, {"links", links}}});
  for (json& n : file["nodes"]) {
    if (n["id"] != 70 || promoted.is_null()) continue;
    n["properties"]["proxyWidgets"] = promoted;
    n["widgets_values"] = values;
  }
  return file;
}

// The A14B I2V graph as newer templates shape it: the pipeline in a subgraph "Wan22_I2V" (instance
// 80), the high-noise stage's seed from a PrimitiveInt, and a Switch, driven by a PrimitiveBoolean,
// choosing whether the high-noise expert goes through a LoRA.
json a14b_i2v_subgraph_file(bool lora_on) {
  UiGraph g = comfy_test::a14b_i2v_ui();
  json kept = json::array();
  for (const json& l : g.links) {
    if (!(l[3] == 54 && l[4] == 0)) kept.push_back(l);  // 54's model comes from the switch instead
  }
  g.links = kept;
  g.node(72, "LoraLoaderModelOnly", {"lightx2v_high.safetensors", 1.0}, {{"model", "MODEL"}}, {"MODEL"});
  g.node(73, "PrimitiveBoolean", {lora_on}, {}, {"BOOLEAN"});
  g.node(71, "ComfySwitchNode", {!lora_on}, {{"on_false", "MODEL"}, {"on_true", "MODEL"}, {"switch", "BOOLEAN"}}, {"MODEL"});
  g.node(70, "PrimitiveInt", {7, "fixed"}, {}, {"INT"});
  g.link(37, 0, 72, "model");
  g.link(37, 0, 71, "on_false");
  g.link(72, 0, 71, "on_true");
  g.link(73, 0, 71, "switch");  // the primitive wins over the switch's own (opposite) value
  g.link(71, 0, 54, "model");
  g.at(57)["inputs"].push_back({{"name", "noise_seed"}, {"type", "INT"}, {"link", nullptr}});
  g.link(70, 0, 57, "noise_seed");
  return comfy_test::wrap_in_subgraph(g, {6, 7, 50, 54, 55, 57, 58, 70, 71, 72, 73}, 80,
                                      "5d1e0c3b-8a7f-4e2d-9c6b-1a2b3c4d5e6f", "Wan22_I2V");
}

// The A14B I2V graph as ComfyUI's first-last-frame template shapes it: WanFirstLastFrameToVideo
// with a start and an end image (Load Image 62 and 68).
json a14b_flf2v_file(const std::string& type = "WanFirstLastFrameToVideo") {
  UiGraph g = comfy_test::a14b_i2v_ui();
  json& flf = g.at(50);
  flf["type"] = type;
  for (json& in : flf["inputs"]) {
    if (in["name"] == "clip_vision_output") in["name"] = "clip_vision_start_image";
  }
  flf["inputs"].push_back({{"name", "clip_vision_end_image"}, {"type", "CLIP_VISION_OUTPUT"}, {"link", nullptr}});
  flf["inputs"].push_back({{"name", "end_image"}, {"type", "IMAGE"}, {"link", nullptr}});
  g.node(68, "LoadImage", {"ending.png", "image"}, {}, {"IMAGE", "MASK"});
  g.link(68, 0, 50, "end_image");
  return g.file();
}

// `doc` with its instance `instance` expanded and the inner ids without their "<instance>/…/" path:
// the graph a flat import of the same file gives.
engine::GraphDocument without_instance(const engine::GraphDocument& doc, const std::string& instance) {
  auto expanded = engine::expand_subgraphs(doc);
  if (!expanded.ok()) throw std::runtime_error(expanded.error().message);
  const std::string prefix = instance + "/";  // and any nested instance's path after it
  auto strip = [&](std::string id) { return id.rfind(prefix, 0) == 0 ? id.substr(id.rfind('/') + 1) : id; };
  std::vector<engine::Node> nodes;
  for (engine::Node n : expanded->nodes()) {
    n.id = strip(n.id);
    for (auto& [port, link] : n.inputs) link.node = strip(link.node);
    nodes.push_back(std::move(n));
  }
  auto flat = engine::GraphDocument::build(nodes, json::object(), json::object(), nullptr);
  if (!flat.ok()) throw std::runtime_error(flat.error().to_string());
  return std::move(flat.value());
}

}  // namespace

class tst_ComfyImport : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void recognisesFormats();
  void ti2v5bUiFormat();
  void ti2v5bImageToVideo();
  void ti2v5bApiMatchesUi();
  void a14bLightningGroup();
  void a14bPlainGroup();
  void a14bBypassedLorasAreNotApplied();
  void a14bImageToVideoWebm();
  void a14bStagesThatDoNotMeet();
  void a14bFirstLastFrame_data();
  void a14bFirstLastFrame();
  void mutedLoraLeavesModelOpen();
  void animatedWebpApproximated();
  void approximatedSamplerSettings();
  void solverTable_data();
  void solverTable();
  void boundaryBetweenSteps();
  void unknownNodesKeptOrLeftOut();
  void otherFamilyRefused();
  void subgraphImportedAsSubgraph();
  void nestedSubgraphsImportNested();
  void a14bI2vSubgraphWithPrimitivesAndSwitch();
  void rerouteFollowed();
  void noVideoOutputRefused();
  void wrongFieldTypesAreErrors();
  void cliValidatesComfyFiles();
  void cliRunsImported5bEndToEnd();
  void cliRunsImportedSubgraph();
  void cliRunsImportedA14bI2v_data();
  void cliRunsImportedA14bI2v();
  void cliConfinesComfyWorkflowWrites();
};

void tst_ComfyImport::recognisesFormats() {
  QCOMPARE(comfy::comfy_format_of(comfy_test::ti2v_5b_ui().file()), comfy::ComfyFormat::Ui);
  QCOMPARE(comfy::comfy_format_of(comfy_test::ti2v_5b_api()), comfy::ComfyFormat::Api);
  QCOMPARE(comfy::comfy_format_of(json{{"format", "vidgraph-workflow"}, {"version", 1}, {"nodes", json::array()},
                                       {"links", json::array()}}),
           comfy::ComfyFormat::None);
  QCOMPARE(comfy::comfy_format_of(json{{"foo", 1}}), comfy::ComfyFormat::None);
  QCOMPARE(comfy::comfy_format_of(json{{"1", {{"class_type", "KSampler"}}}}), comfy::ComfyFormat::None);
  QCOMPARE(comfy::comfy_format_of(json::array()), comfy::ComfyFormat::None);
}

void tst_ComfyImport::ti2v5bUiFormat() {
  const comfy::ComfyImport imported = import_or_fail(comfy_test::ti2v_5b_ui().file());
  check_ti2v_5b(imported.document);
  const comfy::ImportReport& r = imported.report;
  QCOMPARE(r.format, comfy::ComfyFormat::Ui);
  for (const char* id : {"37", "38", "39", "48", "6", "7", "55", "3", "8", "60", "61"}) {
    QVERIFY2(r.has(id), id);
  }
  // The template's uni_pc is the one setting without an exact equivalent.
  QCOMPARE(r.approximated.size(), std::size_t(1));
  QVERIFY(lists(r.approximated, "3", "KSampler", "sampler uni_pc is UniPC of order 3, bh1 variant"));
  QVERIFY(lists(r.unsupported, "59", "MarkdownNote", "no comments"));
  QCOMPARE(imported.document.extra()["comfyui"]["notes"][0]["text"].get<std::string>(),
           std::string("Put the model files in ComfyUI/models."));
  const auto lines = comfy::report_sentences(r);
  QVERIFY(any_contains(lines, "Muted or bypassed nodes that no output needs were left out"));
  QVERIFY(any_contains(lines, "56 (LoadImage)"));
  QVERIFY(any_contains(lines, "model_path=<ComfyUI>/models"));
  QVERIFY(imported.document.editor()["nodes"].contains("sampler"));
}

void tst_ComfyImport::ti2v5bImageToVideo() {
  const comfy::ComfyImport imported = import_or_fail(comfy_test::ti2v_5b_ui(0).file());
  const engine::GraphDocument& doc = imported.document;
  QCOMPARE(node_of(doc, "image").type, std::string("LoadImage"));
  QCOMPARE(node_of(doc, "image").params["path"].get<std::string>(), std::string("example.png"));
  QCOMPARE(node_of(doc, "image").params["width"].get<int>(), 1280);
  QCOMPARE(node_of(doc, "image").params["height"].get<int>(), 704);
  QVERIFY(linked(doc, "sampler", "image", "image", "image"));
  QVERIFY(linked(doc, "sampler", "vae", "model", "vae"));
}

void tst_ComfyImport::ti2v5bApiMatchesUi() {
  const comfy::ComfyImport api = import_or_fail(comfy_test::ti2v_5b_api());
  QCOMPARE(api.report.format, comfy::ComfyFormat::Api);
  check_ti2v_5b(api.document);
  const comfy::ComfyImport ui = import_or_fail(comfy_test::ti2v_5b_ui().file());
  for (const engine::Node& n : ui.document.nodes()) {
    const engine::Node& other = node_of(api.document, n.id);
    QCOMPARE(other.type, n.type);
    QCOMPARE(other.params.dump(), n.params.dump());
    QVERIFY2(other.inputs == n.inputs, n.id.c_str());
  }
  QCOMPARE(api.document.extra()["comfyui"]["format"].get<std::string>(), std::string("api"));
}

void tst_ComfyImport::a14bLightningGroup() {
  const comfy::ComfyImport imported = import_or_fail(comfy_test::a14b_t2v_ui(0, 4).file());
  const engine::GraphDocument& doc = imported.document;
  const std::vector<std::string> expected = {"decode:VAEDecode", "encode:EncodeText", "export:ExportVideo",
                                             "lora_high:LoadLoRA", "lora_low:LoadLoRA", "model:LoadWanModel",
                                             "prompt:Prompt", "sampler:WanSampler"};
  QCOMPARE(types_of(doc), expected);
  QVERIFY(linked(doc, "lora_high", "model", "model", "model"));
  QVERIFY(linked(doc, "lora_low", "model", "model", "low_noise_model"));
  QVERIFY(linked(doc, "sampler", "model", "lora_high", "model"));
  QVERIFY(linked(doc, "sampler", "low_noise_model", "lora_low", "model"));
  QCOMPARE(node_of(doc, "lora_high").params["path"].get<std::string>(),
           std::string("wan2.2_t2v_lightx2v_4steps_lora_v1.1_high_noise.safetensors"));
  QCOMPARE(node_of(doc, "lora_low").params["strength"].get<double>(), 1.0);
  const json& s = node_of(doc, "sampler").params;
  QCOMPARE(s["steps"].get<int>(), 4);
  QCOMPARE(s["guidance"].get<double>(), 1.0);
  QCOMPARE(s["guidance_low"].get<double>(), 1.0);
  QCOMPARE(s["shift"].get<double>(), 5.0);
  QCOMPARE(s["scheduler"].get<std::string>(), std::string("euler"));
  QCOMPARE(s["seed"].get<int>(), 42);
  QCOMPARE(s["width"].get<int>(), 1280);
  QCOMPARE(s["height"].get<int>(), 720);
  QCOMPARE(s["frames"].get<int>(), 81);
  // Steps 0-1 high (noise levels 1 and 0.9375 at shift 5), steps 2-3 low (0.833, 0.625).
  const double boundary = s["expert_boundary"].get<double>();
  QVERIFY2(boundary < 0.9375 && boundary > 0.8334, std::to_string(boundary).c_str());
  QCOMPARE(node_of(doc, "decode").params["fps"].get<double>(), 16.0);
  const json& files = node_of(doc, "model").extra["comfyui_files"];
  QCOMPARE(files["low_noise_dit"].get<std::string>(), std::string("wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors"));
  const auto lines = comfy::report_sentences(imported.report);
  QVERIFY(any_contains(lines, "switch after step 2 of 4"));
  QVERIFY(any_contains(lines, "203 (KSamplerAdvanced)"));  // the bypassed group, left out
  QVERIFY(!any_contains(lines, "is not named as the high-noise file's partner"));
  QVERIFY2(imported.report.approximated.empty(),
           imported.report.approximated.empty() ? "" : imported.report.approximated.front().sentence.c_str());
}

void tst_ComfyImport::a14bPlainGroup() {
  const comfy::ComfyImport imported = import_or_fail(comfy_test::a14b_t2v_ui(4, 0).file());
  const engine::GraphDocument& doc = imported.document;
  QVERIFY(!doc.find_node("lora_high") && !doc.find_node("lora_low"));
  QVERIFY(linked(doc, "sampler", "model", "model", "model"));
  QVERIFY(linked(doc, "sampler", "low_noise_model", "model", "low_noise_model"));
  const json& s = node_of(doc, "sampler").params;
  QCOMPARE(s["steps"].get<int>(), 20);
  QCOMPARE(s["guidance"].get<double>(), 3.5);
  QCOMPARE(s["guidance_low"].get<double>(), 3.5);
  QCOMPARE(s["shift"].get<double>(), 8.0);
  QCOMPARE(s["seed"].get<int>(), 7);
}

void tst_ComfyImport::a14bBypassedLorasAreNotApplied() {
  const comfy::ComfyImport imported = import_or_fail(comfy_test::a14b_t2v_ui(0, 4, 4).file());
  const engine::GraphDocument& doc = imported.document;
  QVERIFY2(!doc.find_node("lora_high") && !doc.find_node("lora_low"), "a bypassed LoRA is not applied");
  QVERIFY(linked(doc, "sampler", "model", "model", "model"));
  QVERIFY(linked(doc, "sampler", "low_noise_model", "model", "low_noise_model"));
  QCOMPARE(node_of(doc, "sampler").params["steps"].get<int>(), 4);
  QVERIFY(any_contains(comfy::report_sentences(imported.report), "101 (LoraLoaderModelOnly)"));
}

void tst_ComfyImport::a14bImageToVideoWebm() {
  const comfy::ComfyImport imported = import_or_fail(comfy_test::a14b_i2v_ui().file());
  const engine::GraphDocument& doc = imported.document;
  const std::vector<std::string> expected = {"decode:VAEDecode", "encode:EncodeText", "export:ExportVideo",
                                             "image:LoadImage", "model:LoadWanModel", "prompt:Prompt",
                                             "sampler:WanSampler"};
  QCOMPARE(types_of(doc), expected);
  QVERIFY(linked(doc, "sampler", "image", "image", "image"));
  QVERIFY(linked(doc, "sampler", "vae", "model", "vae"));
  QVERIFY(linked(doc, "sampler", "conditioning", "encode", "conditioning"));
  QVERIFY(linked(doc, "sampler", "low_noise_model", "model", "low_noise_model"));
  QCOMPARE(node_of(doc, "prompt").params["negative"].get<std::string>(), std::string(comfy_test::kNegative));
  QCOMPARE(node_of(doc, "image").params["width"].get<int>(), 832);
  QCOMPARE(node_of(doc, "image").params["height"].get<int>(), 480);
  const json& s = node_of(doc, "sampler").params;
  QCOMPARE(s["steps"].get<int>(), 20);
  QCOMPARE(s["seed"].get<int>(), 11);
  QCOMPARE(s["guidance_low"].get<double>(), 3.5);
  const json& e = node_of(doc, "export").params;
  QCOMPARE(e["format"].get<std::string>(), std::string("webm"));
  QCOMPARE(e["filename"].get<std::string>(), std::string("{output}/wan-i2v.webm"));
  QCOMPARE(e["crf"].get<int>(), 30);
  QCOMPARE(e["fps"].get<double>(), 16.0);
  QVERIFY(lists(imported.report.mapped, "50", "WanImageToVideo", "start image"));
  QVERIFY(lists(imported.report.mapped, "63", "SaveWEBM"));
  QVERIFY2(imported.report.approximated.empty(),
           imported.report.approximated.empty() ? "" : imported.report.approximated.front().sentence.c_str());
}

// WanFirstLastFrameToVideo (and WanFunInpaintToVideo, the same in ComfyUI): the start image is the
// sampler's image, the end image its last_image, both scaled to the video's size; the prompts pass
// through it as through WanImageToVideo.
void tst_ComfyImport::a14bFirstLastFrame_data() {
  QTest::addColumn<QString>("type");
  QTest::newRow("first-last") << "WanFirstLastFrameToVideo";
  QTest::newRow("fun inpaint") << "WanFunInpaintToVideo";
}

void tst_ComfyImport::a14bFirstLastFrame() {
  QFETCH(QString, type);
  const comfy::ComfyImport imported = import_or_fail(a14b_flf2v_file(type.toStdString()));
  const engine::GraphDocument& doc = imported.document;
  QVERIFY(linked(doc, "sampler", "image", "image", "image"));
  const auto& last = node_of(doc, "sampler").inputs.at("last_image");
  const engine::Node* end = doc.find_node(last.node);
  QVERIFY(end && end->type == "LoadImage" && last.node != "image");
  QVERIFY2(end->params["path"].get<std::string>().find("ending.png") != std::string::npos, end->params.dump().c_str());
  QCOMPARE(end->params["width"].get<int>(), 832);
  QCOMPARE(end->params["height"].get<int>(), 480);
  QVERIFY(linked(doc, "sampler", "conditioning", "encode", "conditioning"));
  QVERIFY(linked(doc, "sampler", "low_noise_model", "model", "low_noise_model"));
  QVERIFY(lists(imported.report.mapped, "50", type.toStdString(), "end image"));
  QVERIFY2(imported.report.approximated.empty(),
           imported.report.approximated.empty() ? "" : imported.report.approximated.front().sentence.c_str());
}

void tst_ComfyImport::a14bStagesThatDoNotMeet() {
  UiGraph g = comfy_test::a14b_t2v_ui(0, 4);
  g.at(58)["widgets_values"] = {"disable", 0, "fixed", 4, 2.5, "dpmpp_2m", "simple", 3, 10000, "disable"};
  g.at(55)["widgets_values"] = {8.0};
  const comfy::ComfyImport imported = import_or_fail(g.file());
  const auto& approx = imported.report.approximated;
  QVERIFY(lists(approx, "58", "KSamplerAdvanced", "not where the high-noise stage ends (2)"));
  QVERIFY(lists(approx, "58", "KSamplerAdvanced", "uses one solver, euler"));
  QVERIFY(lists(approx, "55", "ModelSamplingSD3", "Wan Sampler uses one shift, 5"));
  QCOMPARE(node_of(imported.document, "sampler").params["guidance_low"].get<double>(), 2.5);
}

void tst_ComfyImport::mutedLoraLeavesModelOpen() {
  UiGraph g = comfy_test::a14b_t2v_ui(0, 4, 2);  // the Lightning LoRAs muted: ComfyUI would not run it
  const comfy::ComfyImport imported = import_or_fail(g.file());
  const engine::GraphDocument& doc = imported.document;
  QVERIFY2(node_of(doc, "sampler").inputs.count("model") == 0, "a muted source gives nothing");
  QVERIFY(any_contains(comfy::report_sentences(imported.report), "101 (LoraLoaderModelOnly) is muted"));
}

void tst_ComfyImport::animatedWebpApproximated() {
  json api = comfy_test::ti2v_5b_api();
  api.erase("60");
  api["61"] = {{"class_type", "SaveAnimatedWEBP"},
               {"inputs", {{"filename_prefix", "ComfyUI"}, {"fps", 12}, {"lossless", false}, {"quality", 90},
                           {"method", "default"}, {"images", {"8", 0}}}}};
  const comfy::ComfyImport imported = import_or_fail(api);
  QVERIFY(lists(imported.report.approximated, "61", "SaveAnimatedWEBP", "no animated WebP"));
  QCOMPARE(node_of(imported.document, "export").params["format"].get<std::string>(), std::string("webm"));
  QCOMPARE(node_of(imported.document, "decode").params["fps"].get<double>(), 12.0);
}

void tst_ComfyImport::approximatedSamplerSettings() {
  json api = comfy_test::ti2v_5b_api();
  api["3"]["inputs"]["sampler_name"] = "dpmpp_2m";
  api["3"]["inputs"]["scheduler"] = "karras";
  api["3"]["inputs"]["denoise"] = 0.8;
  api["3"]["inputs"]["seed"] = 18446744073709551615ull;
  api["55"]["inputs"]["batch_size"] = 2;
  api["7"]["inputs"]["text"] = "";
  api["37"]["inputs"]["weight_dtype"] = "fp8_e4m3fn_fast";
  const comfy::ComfyImport imported = import_or_fail(api);
  const auto& approx = imported.report.approximated;
  QVERIFY(lists(approx, "3", "KSampler", "sampler dpmpp_2m has no equivalent in Vidgraph; UniPC was used"));
  QVERIFY(lists(approx, "3", "KSampler", "scheduler karras"));
  QVERIFY(lists(approx, "3", "KSampler", "denoise 0.8"));
  QVERIFY(lists(approx, "3", "KSampler", "low 63 bits"));
  QVERIFY(lists(approx, "55", "Wan22ImageToVideoLatent", "batch_size 2"));
  QVERIFY(lists(approx, "7", "CLIPTextEncode", "reference negative prompt"));
  QVERIFY(lists(approx, "37", "UNETLoader", "keep_fp8"));
  QVERIFY2(!imported.report.has("3") || !lists(imported.report.mapped, "3", "KSampler"),
           "an approximated node is not also listed as mapped");
  const engine::GraphDocument& doc = imported.document;
  QCOMPARE(node_of(doc, "sampler").params["scheduler"].get<std::string>(), std::string("unipc"));
  QCOMPARE(node_of(doc, "sampler").params["seed"].get<long long>(), 9223372036854775807ll);
  QVERIFY(!node_of(doc, "prompt").params.contains("negative"));
  QCOMPARE(node_of(doc, "model").params["keep_fp8"].get<bool>(), true);
}

void tst_ComfyImport::solverTable_data() {
  QTest::addColumn<QString>("sampler");
  QTest::addColumn<QString>("scheduler");
  QTest::addColumn<QString>("solver");
  QTest::addColumn<int>("warnings");
  QTest::newRow("uni_pc_bh2 simple") << "uni_pc_bh2" << "simple" << "unipc" << 1;
  QTest::newRow("uni_pc simple") << "uni_pc" << "simple" << "unipc" << 1;
  QTest::newRow("euler simple") << "euler" << "simple" << "euler" << 0;
  QTest::newRow("euler_ancestral") << "euler_ancestral" << "simple" << "euler" << 1;
  QTest::newRow("lcm") << "lcm" << "simple" << "euler" << 1;
  QTest::newRow("dpmpp_2m karras") << "dpmpp_2m" << "karras" << "unipc" << 2;
  QTest::newRow("euler beta") << "euler" << "beta" << "euler" << 1;
}

void tst_ComfyImport::solverTable() {
  QFETCH(QString, sampler);
  QFETCH(QString, scheduler);
  QFETCH(QString, solver);
  QFETCH(int, warnings);
  const comfy::SolverChoice c = comfy::map_solver(sampler.toStdString(), scheduler.toStdString());
  QCOMPARE(QString::fromStdString(c.scheduler), solver);
  QCOMPARE(static_cast<int>(c.warnings.size()), warnings);
}

void tst_ComfyImport::boundaryBetweenSteps() {
  // shift 5, 4 steps: noise levels 1, 0.9375, 0.8333, 0.625 → midpoint of the 2nd and 3rd.
  QVERIFY(std::abs(comfy::boundary_for_split(2, 4, 5.0) - (0.9375 + 2.5 / 3.0) / 2.0) < 1e-9);
  // shift 8, 20 steps, split 10: between sigma(0.55) and sigma(0.5).
  const double b = comfy::boundary_for_split(10, 20, 8.0);
  QVERIFY(b < 8 * 0.55 / (1 + 7 * 0.55) && b > 8 * 0.5 / (1 + 7 * 0.5));
  QCOMPARE(comfy::boundary_for_split(0, 4, 5.0), 1.0);
  QCOMPARE(comfy::boundary_for_split(4, 4, 5.0), 0.001);
}

void tst_ComfyImport::unknownNodesKeptOrLeftOut() {
  UiGraph g = comfy_test::ti2v_5b_ui();
  // An unmapped filter between the decode and the video (needed), and a stray one (not needed).
  g.node(90, "ImageSharpen", {1, 1.0, 0.5}, {{"image", "IMAGE"}}, {"IMAGE"});
  g.node(91, "PreviewAny", json::array(), {{"source", "*"}}, {});
  json file = g.file();
  for (json& n : file["nodes"]) {
    if (n["id"] == 60) n["inputs"][0]["link"] = 900;  // CreateVideo reads the filter
    if (n["id"] == 90) n["inputs"][0]["link"] = 901;  // the filter reads the decode
  }
  file["links"].push_back({900, 90, 0, 60, 0, "IMAGE"});
  file["links"].push_back({901, 8, 0, 90, 0, "IMAGE"});
  const comfy::ComfyImport imported = import_or_fail(file);
  const engine::GraphDocument& doc = imported.document;
  const engine::Node& kept = node_of(doc, "comfy_90");
  QCOMPARE(kept.type, std::string("ComfyUI:ImageSharpen"));
  QVERIFY(linked(doc, "comfy_90", "image", "decode", "video"));
  QVERIFY(linked(doc, "export", "video", "comfy_90", "out0"));
  QVERIFY(lists(imported.report.unsupported, "90", "ImageSharpen", "kept as the unknown node 'comfy_90'"));
  QVERIFY(!doc.find_node("comfy_91"));
  QVERIFY(lists(imported.report.unsupported, "91", "PreviewAny", "left out"));
  QCOMPARE(doc.extra()["comfyui"]["unused_nodes"][0]["type"].get<std::string>(), std::string("PreviewAny"));
}

void tst_ComfyImport::otherFamilyRefused() {
  const json sdxl = {
      {"4", {{"class_type", "CheckpointLoaderSimple"}, {"inputs", {{"ckpt_name", "sd_xl_base_1.0.safetensors"}}}}},
      {"5", {{"class_type", "EmptyLatentImage"}, {"inputs", {{"width", 1024}, {"height", 1024}, {"batch_size", 1}}}}},
      {"6", {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", "a castle"}, {"clip", {"4", 1}}}}}},
      {"7", {{"class_type", "CLIPTextEncode"}, {"inputs", {{"text", ""}, {"clip", {"4", 1}}}}}},
      {"3", {{"class_type", "KSampler"}, {"inputs", {{"seed", 1}, {"steps", 20}, {"cfg", 7}, {"sampler_name", "euler"}, {"scheduler", "normal"}, {"denoise", 1}, {"model", {"4", 0}}, {"positive", {"6", 0}}, {"negative", {"7", 0}}, {"latent_image", {"5", 0}}}}}},
      {"8", {{"class_type", "VAEDecode"}, {"inputs", {{"samples", {"3", 0}}, {"vae", {"4", 2}}}}}},
      {"9", {{"class_type", "SaveImage"}, {"inputs", {{"filename_prefix", "ComfyUI"}, {"images", {"8", 0}}}}}}};
  auto r = comfy::import_comfy_json(sdxl, "sdxl.json");
  QVERIFY(!r.ok());
  const std::string& m = r.error().message;
  QVERIFY2(m.find("Vidgraph runs Wan2.2 / Wan2.1 video workflows") != std::string::npos, m.c_str());
  QVERIFY2(m.find("CheckpointLoaderSimple") != std::string::npos, m.c_str());
  QVERIFY2(m.rfind("sdxl.json: ", 0) == 0, m.c_str());
  // HunyuanVideo shares EmptyHunyuanLatentVideo with Wan's templates; its text encoders give it away.
  json hunyuan = comfy_test::ti2v_5b_api();
  hunyuan.erase("55");
  hunyuan["55"] = {{"class_type", "EmptyHunyuanLatentVideo"}, {"inputs", {{"width", 848}, {"height", 480}, {"length", 73}, {"batch_size", 1}}}};
  hunyuan["38"] = {{"class_type", "DualCLIPLoader"}, {"inputs", {{"clip_name1", "clip_l.safetensors"}, {"clip_name2", "llava_llama3_fp8_scaled.safetensors"}, {"type", "hunyuan_video"}}}};
  auto h = comfy::import_comfy_json(hunyuan, "hunyuan.json");
  QVERIFY(!h.ok());
  QVERIFY2(h.error().message.find("DualCLIPLoader") != std::string::npos, h.error().message.c_str());
}

void tst_ComfyImport::subgraphImportedAsSubgraph() {
  const comfy::ComfyImport imported = import_or_fail(sampling_subgraph_file());
  const engine::GraphDocument& doc = imported.document;
  const std::vector<std::string> top = {"Sampling:Subgraph", "decode:VAEDecode", "export:ExportVideo",
                                        "model:LoadWanModel"};
  QCOMPARE(types_of(doc), top);  // the Load Wan Model stays outside, where --set model.* finds it
  auto def = engine::find_subgraph(doc, engine::instance_subgraph(node_of(doc, "Sampling")));
  QVERIFY2(def.ok(), def.ok() ? "" : def.error().message.c_str());
  QCOMPARE(def->name, std::string("Sampling"));
  QCOMPARE(def->nodes.size(), std::size_t(3));  // prompt, encode, sampler
  QVERIFY(linked(doc, "Sampling", "model", "model", "model"));
  QVERIFY(linked(doc, "decode", "latent", "Sampling", "latent"));
  check_ti2v_5b(without_instance(doc, "Sampling"));  // the same graph as a flat import
  QVERIFY(any_contains(comfy::report_sentences(imported.report),
                       "ComfyUI subgraph 'Sampling' (node 70) is the subgraph instance 'Sampling' of 3 nodes."));
  QVERIFY(imported.report.has("70-6") && imported.report.has("70-7"));
  // Widgets promoted to the instance (properties.proxyWidgets) are its params, with its values.
  const comfy::ComfyImport promoted = import_or_fail(sampling_subgraph_file(
      json::array({json::array({"6", "text"}), json::array({"3", "seed"}), json::array({"3", "control_after_generate"}),
                   json::array({"3", "denoise"})}),
      {"a promoted prompt", 99, "fixed", 1}));
  auto exposing = engine::find_subgraph(promoted.document, engine::instance_subgraph(node_of(promoted.document, "Sampling")));
  QVERIFY(exposing.ok());
  QCOMPARE(exposing->params.size(), std::size_t(2));
  QCOMPARE(exposing->params.at("positive").node, std::string("prompt"));
  QCOMPARE(exposing->params.at("seed").node, std::string("sampler"));
  const engine::GraphDocument flat = without_instance(promoted.document, "Sampling");
  QCOMPARE(node_of(flat, "prompt").params["positive"].get<std::string>(), std::string("a promoted prompt"));
  QCOMPARE(node_of(flat, "sampler").params["seed"].get<int>(), 99);
  QVERIFY(any_contains(comfy::report_sentences(promoted.report),
                       "with the params positive, seed. Its promoted widgets denoise have no Vidgraph param"));
}

// The Sampling instance wrapped in a subgraph "Outer" (instance 70, inner instance 5), each level
// promoting the sampler's seed.
void tst_ComfyImport::nestedSubgraphsImportNested() {
  json file = sampling_subgraph_file();
  const std::string sampling_id = file["definitions"]["subgraphs"][0]["id"];
  const std::string outer_id = "0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d";
  json body_node = {{"id", 5}, {"type", sampling_id}, {"mode", 0}, {"pos", {0, 0}},
                    {"inputs", json::array()}, {"outputs", {{{"name", "LATENT"}, {"type", "LATENT"}, {"links", {9}}}}},
                    {"widgets_values", {42}}, {"properties", {{"proxyWidgets", json::array({json::array({"3", "seed"})})}}}};
  json links = json::array();
  const std::vector<std::pair<std::string, std::string>> ports = {{"model", "MODEL"}, {"clip", "CLIP"}, {"latent", "LATENT"}};
  for (std::size_t k = 0; k < ports.size(); ++k) {
    body_node["inputs"].push_back({{"name", ports[k].first}, {"type", ports[k].second}, {"link", 10 + int(k)}});
    links.push_back({{"id", 10 + int(k)}, {"origin_id", -10}, {"origin_slot", k}, {"target_id", 5}, {"target_slot", k},
                     {"type", ports[k].second}});
  }
  links.push_back({{"id", 9}, {"origin_id", 5}, {"origin_slot", 0}, {"target_id", -20}, {"target_slot", 0}, {"type", "LATENT"}});
  file["definitions"]["subgraphs"].push_back({{"id", outer_id}, {"name", "Outer"},
                                              {"inputs", {{{"name", "model"}}, {{"name", "clip"}}, {{"name", "latent"}}}},
                                              {"outputs", {{{"name", "LATENT"}}}}, {"nodes", {body_node}}, {"links", links}});
  for (json& n : file["nodes"]) {
    if (n["id"] != 70) continue;
    n["type"] = outer_id;
    n["properties"]["proxyWidgets"] = json::array({json::array({"5", "seed"})});
    n["widgets_values"] = {7};
  }
  auto r = comfy::import_comfy_json(file, "nested.json");
  QVERIFY2(r.ok(), r.ok() ? "" : r.error().message.c_str());
  const comfy::ComfyImport& imported = r.value();
  const engine::GraphDocument& doc = imported.document;
  const std::vector<std::string> top = {"Outer:Subgraph", "decode:VAEDecode", "export:ExportVideo", "model:LoadWanModel"};
  QCOMPARE(types_of(doc), top);
  auto outer = engine::find_subgraph(doc, engine::instance_subgraph(node_of(doc, "Outer")));
  QVERIFY(outer.ok());
  QCOMPARE(outer->nodes.size(), std::size_t(1));
  QCOMPARE(outer->nodes[0].type, std::string(engine::kSubgraphType));
  QVERIFY(outer->params.count("seed"));
  QCOMPARE(outer->params.at("seed").node, outer->nodes[0].id);  // through the inner instance's own param
  QCOMPARE(outer->params.at("seed").param, std::string("seed"));
  const engine::GraphDocument flat = without_instance(doc, "Outer");
  QCOMPARE(node_of(flat, "sampler").params["seed"].get<int>(), 7);  // the outer instance's value
  QVERIFY(linked(flat, "sampler", "model", "model", "model"));
  QVERIFY(linked(flat, "decode", "latent", "sampler", "latent"));
  QVERIFY(any_contains(comfy::report_sentences(imported.report), "ComfyUI subgraph 'Outer' (node 70) is the subgraph "
                                                                 "instance 'Outer' of 1 nodes, with the params seed."));
}

void tst_ComfyImport::a14bI2vSubgraphWithPrimitivesAndSwitch() {
  for (const bool lora_on : {false, true}) {
    const comfy::ComfyImport imported = import_or_fail(a14b_i2v_subgraph_file(lora_on));
    const std::vector<std::string> top = {"Wan22_I2V:Subgraph", "decode:VAEDecode", "export:ExportVideo",
                                          "image:LoadImage", "model:LoadWanModel"};
    QCOMPARE(types_of(imported.document), top);
    const engine::GraphDocument flat = without_instance(imported.document, "Wan22_I2V");
    const json& s = node_of(flat, "sampler").params;
    QCOMPARE(s["seed"].get<int>(), 7);  // from the primitive, not the widget's 11
    QCOMPARE(s["width"].get<int>(), 832);
    QVERIFY(linked(flat, "sampler", "image", "image", "image"));
    const engine::Node* lora = flat.find_node("lora_high");
    QCOMPARE(lora != nullptr, lora_on);
    if (lora) {
      QCOMPARE(lora->params["path"].get<std::string>(), std::string("lightx2v_high.safetensors"));
      QVERIFY(linked(flat, "sampler", "model", "lora_high", "model"));
    } else {
      QVERIFY(linked(flat, "sampler", "model", "model", "model"));
    }
    QVERIFY(lists(imported.report.mapped, "80-71", "ComfySwitchNode", lora_on ? "its switch is on" : "its switch is off"));
  }
}

void tst_ComfyImport::rerouteFollowed() {
  json api = comfy_test::ti2v_5b_api();
  api["90"] = {{"class_type", "Reroute"}, {"inputs", {{"", json::array({"39", 0})}}}};
  api["8"]["inputs"]["vae"] = json::array({"90", 0});
  const comfy::ComfyImport imported = import_or_fail(api);
  QVERIFY(linked(imported.document, "decode", "vae", "model", "vae"));
  QVERIFY(!imported.report.has("90"));
}

void tst_ComfyImport::noVideoOutputRefused() {
  UiGraph g = comfy_test::ti2v_5b_ui();
  for (json& n : g.nodes) {
    if (n["type"] == "SaveVideo" || n["type"] == "VAEDecode") n["mode"] = 2;
  }
  auto r = comfy::import_comfy_json(g.file(), "muted.json");
  QVERIFY(!r.ok());
  QVERIFY2(r.error().message.find("no video output that runs") != std::string::npos, r.error().message.c_str());
}

// Found by fuzz_comfy: a node whose "type" is an array threw out of the import (std::terminate in
// the fuzzer; an exception through vidgraph-run's loader).
void tst_ComfyImport::wrongFieldTypesAreErrors() {
  for (const char* field : {"type", "mode", "widgets_values", "inputs", "outputs"}) {
    UiGraph g = comfy_test::ti2v_5b_ui();
    g.nodes[0][field] = json{{"not", json::array({1, 2})}};
    auto r = comfy::import_comfy_json(g.file(), "hand-edited.json");
    if (r.ok()) continue;  // a field the readers treat as optional may be skipped
    QVERIFY2(r.error().message.rfind("hand-edited.json: ", 0) == 0, r.error().message.c_str());
  }
  // Found by fuzz_comfy under UBSan: a mode of 1e40 reached a conversion to int.
  for (const json& mode : {json(1e40), json(2.5), json(std::uint64_t(1) << 40)}) {
    UiGraph g = comfy_test::ti2v_5b_ui();
    g.nodes[0]["mode"] = mode;
    auto r = comfy::import_comfy_json(g.file(), "hand-edited.json");
    QVERIFY(!r.ok());
    QVERIFY2(r.error().message.find("an integer was expected") != std::string::npos, r.error().message.c_str());
  }
  UiGraph g = comfy_test::ti2v_5b_ui();
  g.nodes[0]["type"] = json::array({"UNETLoader"});
  auto r = comfy::import_comfy_json(g.file(), "hand-edited.json");
  QVERIFY(!r.ok());
  QVERIFY2(r.error().message.find("hand-edited.json: a field of this ComfyUI workflow has a value ComfyUI never "
                                  "writes (type must be string, but is array)") == 0,
           r.error().message.c_str());
}

void tst_ComfyImport::cliValidatesComfyFiles() {
  if (!QFileInfo::exists(kRunner)) QSKIP("vidgraph-run is not built");
  QTemporaryDir dir;
  const std::string api = write_file(dir, "wan5b-api.json", comfy_test::ti2v_5b_api());
  const std::string ui = write_file(dir, "wan5b-ui.json", comfy_test::ti2v_5b_ui().file());
  const std::string a14b = write_file(dir, "a14b-lightning.json", comfy_test::a14b_t2v_ui(0, 4).file());
  for (const std::string& path : {api, ui, a14b}) {
    const std::string before = read_file(path);
    const auto r = test_common::run_process(kRunner, {"validate", QString::fromStdString(path)}, 120000);
    QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
    QVERIFY2((r.out + r.err).contains("Imported the ComfyUI"), qPrintable(r.out + r.err));
    QVERIFY2(read_file(path) == before, "the ComfyUI file is never written");
  }
  // Nothing was written beside the files (no converted copy, no temporary).
  QCOMPARE(static_cast<int>(std::distance(fs::directory_iterator(dir.path().toStdString()), fs::directory_iterator())), 3);
  // An unmapped node the output needs: validation names it.
  json bad = comfy_test::ti2v_5b_api();
  bad["90"] = {{"class_type", "ImageSharpen"}, {"inputs", {{"sharpen_radius", 1}, {"image", {"8", 0}}}}};
  bad["60"]["inputs"]["images"] = json::array({"90", 0});
  const auto invalid = test_common::run_process(kRunner, {"validate", QString::fromStdString(write_file(dir, "bad.json", bad))}, 120000);
  QVERIFY2(invalid.exit_code != 0, qPrintable(invalid.out + invalid.err));
  QVERIFY2((invalid.out + invalid.err).contains("ComfyUI:ImageSharpen"), qPrintable(invalid.out + invalid.err));
  // JSON that is neither format keeps the Vidgraph reader's error.
  const auto other = test_common::run_process(kRunner, {"validate", QString::fromStdString(write_file(dir, "other.json", json{{"foo", 1}}))}, 120000);
  QVERIFY(other.exit_code != 0);
  QVERIFY2((other.out + other.err).contains("not a Vidgraph workflow"), qPrintable(other.out + other.err));
  // Another family: the refusal sentence.
  const json sdxl = {{"4", {{"class_type", "CheckpointLoaderSimple"}, {"inputs", {{"ckpt_name", "x.safetensors"}}}}},
                     {"5", {{"class_type", "EmptyLatentImage"}, {"inputs", {{"width", 1024}, {"height", 1024}, {"batch_size", 1}}}}}};
  const auto refused = test_common::run_process(kRunner, {"validate", QString::fromStdString(write_file(dir, "sdxl.json", sdxl))}, 120000);
  QVERIFY(refused.exit_code != 0);
  QVERIFY2((refused.out + refused.err).contains("Vidgraph runs Wan2.2 / Wan2.1 video workflows"),
           qPrintable(refused.out + refused.err));
}

void tst_ComfyImport::cliRunsImported5bEndToEnd() {
  const QString tiny = QStringLiteral(VIDGRAPH_BINARY_DIR) + "/share/vidgraph/models/wan22-tiny";
  if (!QFileInfo::exists(kRunner) || !QFileInfo::exists(tiny + "/spiece.model")) {
    QSKIP("vidgraph-run or the tiny model (vidgraph_demo_model) is not built");
  }
  QTemporaryDir dir, out;
  const std::string flow = write_file(dir, "wan5b-api.json", comfy_test::ti2v_5b_api());
  const auto r = test_common::run_process(
      kRunner, {"run", QString::fromStdString(flow), "--output-dir", out.path(), "--set", "model.model_path=" + tiny,
                "--set", "model.device=cpu", "--set", "model.dtype=float32", "--set", "sampler.width=160", "--set",
                "sampler.height=96", "--set", "sampler.frames=5", "--set", "sampler.steps=2"},
      300000);
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  const std::string video = out.filePath("video-ComfyUI.mp4").toStdString();
  QVERIFY2(fs::exists(video), qPrintable(r.out + r.err));
  QVERIFY(read_file(video).substr(4, 4) == "ftyp");
}

// The subgraph import runs headless: the model by its top-level id, an inner param by its path,
// a promoted widget as the instance's param.
void tst_ComfyImport::cliRunsImportedSubgraph() {
  const QString tiny = QStringLiteral(VIDGRAPH_BINARY_DIR) + "/share/vidgraph/models/wan22-tiny";
  if (!QFileInfo::exists(kRunner) || !QFileInfo::exists(tiny + "/spiece.model")) {
    QSKIP("vidgraph-run or the tiny model (vidgraph_demo_model) is not built");
  }
  QTemporaryDir dir, out;
  const std::string flow = write_file(dir, "wan5b-subgraph.json",
                                      sampling_subgraph_file(json::array({json::array({"3", "seed"})}), {42}));
  const auto r = test_common::run_process(
      kRunner, {"run", QString::fromStdString(flow), "--output-dir", out.path(), "--json-events", "--set",
                "model.model_path=" + tiny, "--set", "model.device=cpu", "--set", "model.dtype=float32", "--set",
                "Sampling/sampler.width=160", "--set", "Sampling/sampler.height=96", "--set", "Sampling/sampler.frames=5",
                "--set", "Sampling/sampler.steps=2", "--set", "Sampling.seed=3"},
      300000);
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  QVERIFY2(r.out.contains("\"Sampling/sampler\""), qPrintable(r.out));  // inner nodes run under their paths
  const std::string video = out.filePath("video-ComfyUI.mp4").toStdString();
  QVERIFY2(fs::exists(video), qPrintable(r.out + r.err));
  QVERIFY(read_file(video).substr(4, 4) == "ftyp");
  const auto bad = test_common::run_process(kRunner, {"validate", QString::fromStdString(flow), "--set", "Sampling.steps=3"}, 120000);
  QVERIFY(bad.exit_code != 0);
  QVERIFY2((bad.out + bad.err).contains("exposes no param 'steps' (it exposes: seed)"), qPrintable(bad.out + bad.err));
}

// The A14B I2V subgraph file and the first-last-frame file run headless on the tiny random A14B
// I2V model to a WebM (the images: the sample).
void tst_ComfyImport::cliRunsImportedA14bI2v_data() {
  QTest::addColumn<bool>("first_last");
  QTest::addColumn<QStringList>("sets");
  QTest::newRow("subgraph") << false
                            << QStringList{"Wan22_I2V/sampler.width=160", "Wan22_I2V/sampler.height=96",
                                           "Wan22_I2V/sampler.frames=5", "Wan22_I2V/sampler.steps=4"};
  QTest::newRow("first and last frame")
      << true << QStringList{"image_2.width=160", "image_2.height=96", "sampler.width=160", "sampler.height=96",
                             "sampler.frames=5", "sampler.steps=4"};
}

void tst_ComfyImport::cliRunsImportedA14bI2v() {
  QFETCH(bool, first_last);
  QFETCH(QStringList, sets);
  const QString maker = QStringLiteral(VIDGRAPH_BINARY_DIR) + "/bin/vidgraph-make-random-model";
  const QString tokenizer = QStringLiteral(VIDGRAPH_BINARY_DIR) + "/share/vidgraph/models/wan22-tiny/spiece.model";
  if (!QFileInfo::exists(kRunner) || !QFileInfo::exists(maker) || !QFileInfo::exists(tokenizer)) {
    QSKIP("vidgraph-run, vidgraph-make-random-model or the tiny model's tokenizer is not built");
  }
  QTemporaryDir dir, out, model;
  const auto made = test_common::run_process(
      maker, {model.path(), "--config", "a14b-i2v", "--tiny", "--tokenizer", tokenizer}, 300000);
  QVERIFY2(made.exit_code == 0, qPrintable(made.out + made.err));
  const std::string flow =
      write_file(dir, "wan-a14b-i2v.json", first_last ? a14b_flf2v_file() : a14b_i2v_subgraph_file(false));
  const QString image = QStringLiteral(VIDGRAPH_SOURCE_DIR) + "/resources/samples/landscape.png";
  QStringList args{"run", QString::fromStdString(flow), "--output-dir", out.path(), "--set",
                   "model.model_path=" + model.path(), "--set", "model.device=cpu", "--set", "model.dtype=float32",
                   "--set", "image.path=" + image, "--set", "image.width=160", "--set", "image.height=96"};
  if (first_last) args << "--set" << "image_2.path=" + image;
  for (const QString& set : sets) args << "--set" << set;
  const auto r = test_common::run_process(kRunner, args, 300000);
  QVERIFY2(r.exit_code == 0, qPrintable(r.out + r.err));
  const std::string video = out.filePath("wan-i2v.webm").toStdString();
  QVERIFY2(fs::exists(video), qPrintable(r.out + r.err));
  QCOMPARE(read_file(video).substr(0, 4), std::string("\x1a\x45\xdf\xa3"));  // EBML: a WebM
}

// A ComfyUI workflow is treated as shared (most are downloaded): a place outside --output-dir stops
// the run before any node starts (exit 2), as for a workflow embedded in a shared video.
void tst_ComfyImport::cliConfinesComfyWorkflowWrites() {
  if (!QFileInfo::exists(kRunner)) QSKIP("vidgraph-run is not built");
  QTemporaryDir dir, out;
  const std::string flow = write_file(dir, "wan5b-api.json", comfy_test::ti2v_5b_api());
  const QString outside = dir.filePath("elsewhere/clip.mp4");
  const auto refused = test_common::run_process(
      kRunner, {"run", QString::fromStdString(flow), "--output-dir", out.path(), "--set", "export.filename=" + outside},
      120000);
  QVERIFY2(refused.exit_code == 2, qPrintable(QString::number(refused.exit_code) + refused.out + refused.err));
  QVERIFY2(refused.err.contains("outside the output folder") && refused.err.contains("--allow-outside-writes"),
           qPrintable(refused.err));
  QVERIFY(!QFileInfo::exists(dir.filePath("elsewhere")));
  // validate says what run would refuse, and accepts it when the user trusts the file.
  const QStringList validate{"validate", QString::fromStdString(flow), "--output-dir", out.path(), "--set",
                             "export.filename=" + outside};
  const auto invalid = test_common::run_process(kRunner, validate, 120000);
  QVERIFY2(invalid.exit_code != 0 && invalid.err.contains("outside the output folder"),
           qPrintable(QString::number(invalid.exit_code) + invalid.out + invalid.err));
  const auto trusted = test_common::run_process(kRunner, validate + QStringList{"--allow-outside-writes"}, 120000);
  QVERIFY2(trusted.exit_code == 0, qPrintable(trusted.out + trusted.err));
}

QTEST_GUILESS_MAIN(tst_ComfyImport)
#include "tst_comfy_import.moc"
