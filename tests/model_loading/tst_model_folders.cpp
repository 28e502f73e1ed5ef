// ComfyUI-style model folders: listing by kind (models/io/model_folders.h), what each file holds
// from its header (model_file_info.h), extra_model_paths.yaml, and Load Wan Model's picking of
// its files there (app/nodes/model/model_files.h): by content, ambiguity named, embedded tokenizer
// (ComfyUI's spiece_model tensor or a GGUF's tokenizer metadata).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>

#include "engine/run_options.h"
#include "models/io/model_file_info.h"
#include "models/io/model_folders.h"
#include "nodes/model/model_files.h"
#include "model_folder_files.h"

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

namespace fs = std::filesystem;
namespace mio = vidgraph::model_io;
using vidgraph::nodes::locate_model_files;
using vidgraph::nodes::model_files_from_params;

namespace {

// ComfyUI/models with the 5B template's files, a Wan2.1 VAE, a Flux T5 and a LoRA.
std::string make_comfy(const QTemporaryDir& dir, bool tokenizer_inside = true) {
  const fs::path models = fs::path(dir.path().toStdString()) / "ComfyUI" / "models";
  for (const char* sub : {"diffusion_models/wan", "vae", "text_encoders", "loras", "checkpoints"}) {
    fs::create_directories(models / sub);
  }
  write_sparse_safetensors((models / "diffusion_models/wan/wan2.2_ti2v_5B_fp16.safetensors").string(), dit_5b_tensors());
  write_sparse_safetensors((models / "vae/wan2.2_vae.safetensors").string(), vae_tensors(48));
  write_sparse_safetensors((models / "vae/wan_2.1_vae.safetensors").string(), vae_tensors(16));
  write_sparse_safetensors((models / "text_encoders/umt5_xxl_fp16.safetensors").string(), umt5_tensors(tokenizer_inside));
  write_sparse_safetensors((models / "text_encoders/t5xxl_fp16.safetensors").string(),
                           {{"shared.weight", "F16", {32128, 4096}},
                            {"encoder.block.0.layer.0.SelfAttention.q.weight", "F16", {4096, 4096}}});
  write_sparse_safetensors((models / "loras/wan_lora.safetensors").string(),
                           {{"diffusion_model.blocks.0.self_attn.q.lora_down.weight", "BF16", {16, 3072}}});
  std::ofstream(models / "loras/readme.txt") << "not a weight file";
  std::ofstream(models / "diffusion_models/quant.gguf") << "GGUF\3\0\0\0";
  return models.string();
}

std::string error_of(const vidgraph::engine::Result<vidgraph::nodes::ModelFiles>& r) {
  return r.ok() ? std::string("(no error)") : r.error().message;
}

}  // namespace

class tst_model_folders : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void listsByKind();
  void tellsWhatFilesHold();
  void readsExtraModelPaths();
  void rejectsBadYaml();
  void yamlIsBounded();
  void walkIsBounded();
  void rootBasePathIsBounded();
  void picksByContent();
  void ambiguousFilesAreNamed();
  void embeddedTokenizerNeedsNoFile();
  void ggufEncoderBringsItsTokenizer();
  void paramsAndRunDefault();
};

void tst_model_folders::listsByKind() {
  QTemporaryDir dir;
  const std::string models = make_comfy(dir);
  fs::create_directories(fs::path(models) / "unet");
  write_sparse_safetensors(models + "/unet/old.safetensors", dit_5b_tensors());
  QVERIFY(mio::is_comfy_models_folder(models));
  // The install folder works too, and both diffusion_models and the older unet are DiT folders.
  const mio::ModelFolders folders = mio::comfy_model_folders(fs::path(models).parent_path().string());
  const std::vector<std::string> dits = mio::list_model_files(folders, mio::ModelKind::Dit);
  QCOMPARE(dits.size(), size_t(3));  // wan/ subfolder searched, *.gguf listed, unet/ last
  QVERIFY(dits[0].find("quant.gguf") != std::string::npos);
  QVERIFY(dits[1].find("wan/wan2.2_ti2v_5B_fp16") != std::string::npos);
  QVERIFY(dits[2].find("unet/old") != std::string::npos);
  QCOMPARE(mio::list_model_files(folders, mio::ModelKind::Lora).size(), size_t(1));  // readme.txt skipped
  QCOMPARE(mio::list_model_files(folders, mio::ModelKind::Vae).size(), size_t(2));
}

void tst_model_folders::tellsWhatFilesHold() {
  QTemporaryDir dir;
  const std::string models = make_comfy(dir);
  const mio::ModelFileInfo dit = mio::inspect_model_file(models + "/diffusion_models/wan/wan2.2_ti2v_5B_fp16.safetensors");
  QCOMPARE(dit.format, std::string("safetensors"));
  QCOMPARE(dit.detected, std::string("wan2.2-ti2v-5b"));
  QCOMPARE(dit.dtype, std::string("F16"));
  QCOMPARE(dit.tensors, int64_t(3));
  QVERIFY(dit.bytes > uint64_t(3072) * 3072 * 2);
  QCOMPARE(mio::inspect_model_file(models + "/vae/wan2.2_vae.safetensors").detected, std::string("wan2.2-vae"));
  QCOMPARE(mio::inspect_model_file(models + "/vae/wan_2.1_vae.safetensors").detected, std::string("wan2.1-vae"));
  const mio::ModelFileInfo te = mio::inspect_model_file(models + "/text_encoders/umt5_xxl_fp16.safetensors");
  QCOMPARE(te.detected, std::string("umt5-xxl"));
  QVERIFY(te.has_tokenizer);
  QCOMPARE(mio::inspect_model_file(models + "/text_encoders/t5xxl_fp16.safetensors").detected, std::string("t5"));
  const mio::ModelFileInfo lora = mio::inspect_model_file(models + "/loras/wan_lora.safetensors");
  QCOMPARE(lora.detected, std::string("lora"));
  QCOMPARE(lora.model, std::string("LoRA for Wan2.2-TI2V-5B"));
  // An A14B LoRA in ComfyUI's names (lightx2v's high-noise file) and a diffusers-named 1.3B LoRA.
  const std::string pair = models + "/loras/wan2.2_t2v_lightx2v_4steps_lora_v1.1_high_noise.safetensors";
  write_sparse_safetensors(pair, {{"diffusion_model.blocks.0.self_attn.q.lora_down.weight", "BF16", {64, 5120}},
                                  {"diffusion_model.blocks.0.self_attn.q.lora_up.weight", "BF16", {5120, 64}}});
  QCOMPARE(mio::inspect_model_file(pair).model,
           std::string("LoRA for Wan2.2-A14B or Wan2.1-14B (high-noise expert)"));
  const std::string small = models + "/loras/wan21_small.safetensors";
  write_sparse_safetensors(small, {{"transformer.blocks.0.attn1.to_q.lora_A.weight", "F32", {8, 1536}}});
  QCOMPARE(mio::inspect_model_file(small).model, std::string("LoRA for Wan2.1-T2V-1.3B"));
  QCOMPARE(mio::inspect_model_file(models + "/diffusion_models/quant.gguf").format, std::string("gguf"));
  std::ofstream(models + "/vae/broken.safetensors") << "<html>login</html>";
  const mio::ModelFileInfo broken = mio::inspect_model_file(models + "/vae/broken.safetensors");
  QVERIFY2(broken.error.find("HTML") != std::string::npos, broken.error.c_str());
}

void tst_model_folders::readsExtraModelPaths() {
  QTemporaryDir dir;
  const fs::path root = dir.path().toStdString();
  fs::create_directories(root / "store/wan");
  qputenv("VIDGRAPH_TEST_STORE", QByteArray::fromStdString((root / "store").string()));
  std::ofstream(root / "extra_model_paths.yaml") << R"(# as ComfyUI's example
a1111:
    base_path: $VIDGRAPH_TEST_STORE
    checkpoints: models/Stable-diffusion
    vae: models/VAE
    loras: |
         models/Lora
         models/LyCORIS
empty_section:
comfy:
    is_default: true
    diffusion_models: |
                 wan
                 /abs/unet
    clip: ${VIDGRAPH_TEST_STORE}/clip
)";
  const mio::ModelFolders f = mio::read_extra_model_paths((root / "extra_model_paths.yaml").string());
  const std::string store = (root / "store").string();
  QCOMPARE(f.folders.at(mio::ModelKind::Vae), std::vector<std::string>{store + "/models/VAE"});
  QCOMPARE(f.folders.at(mio::ModelKind::Lora),
           (std::vector<std::string>{store + "/models/Lora", store + "/models/LyCORIS"}));
  // No base_path: relative to the yaml file's folder; absolute lines stay.
  QCOMPARE(f.folders.at(mio::ModelKind::Dit), (std::vector<std::string>{(root / "wan").string(), "/abs/unet"}));
  QCOMPARE(f.folders.at(mio::ModelKind::TextEncoder), std::vector<std::string>{store + "/clip"});
}

void tst_model_folders::rejectsBadYaml() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("extra_model_paths.yaml").toStdString();
  auto error = [&](const std::string& text) {
    std::ofstream(path) << text;
    try {
      mio::read_extra_model_paths(path);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  QVERIFY(error("a: [unclosed").find("is not valid YAML") != std::string::npos);
  QVERIFY(error("a:\n  vae:\n    - x\n").find("'a.vae'") != std::string::npos);
  QVERIFY(error("- a\n- b\n").find("does not hold sections") != std::string::npos);
  QVERIFY(error("").find("(no error)") != std::string::npos);
  try {
    mio::read_extra_model_paths(dir.filePath("missing.yaml").toStdString());
    QFAIL("a missing file was read");
  } catch (const std::exception& e) {
    QVERIFY2(std::string(e.what()).find("missing.yaml' does not exist") != std::string::npos, e.what());
  }
}

// Issue #41: a 48 MB model paths file took 2.9 GB as yaml-cpp nodes; aliases repeat blocks for free.
void tst_model_folders::yamlIsBounded() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("extra_model_paths.yaml").toStdString();
  auto error = [&] {
    try {
      mio::read_extra_model_paths(path);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  {
    std::ofstream big(path);
    big << "comfy:\n  vae: vae\n";
    const std::string comment = "# " + std::string(1000, 'x') + "\n";
    for (size_t written = 0; written <= mio::kMaxModelPathsYamlBytes; written += comment.size()) big << comment;
  }
  const std::string too_big = error();
  QVERIFY2(too_big.find("'" + path + "' is ") != std::string::npos, too_big.c_str());
  QVERIFY2(too_big.find("over the 1024 KiB a model paths file may have") != std::string::npos, too_big.c_str());
  // Just under the cap is read.
  fs::resize_file(path, mio::kMaxModelPathsYamlBytes);
  QVERIFY2(error() == "(no error)", error().c_str());
  // One block of 100 folders aliased by 100 sections: 10,000 folder lines from a 2 KB file.
  std::string yaml = "a: &x\n  vae: |\n";
  for (int i = 0; i < 100; ++i) yaml += "    f" + std::to_string(i) + "\n";
  for (int i = 0; i < 100; ++i) yaml += "s" + std::to_string(i) + ": *x\n";
  std::ofstream(path, std::ios::trunc) << yaml;
  QVERIFY2(error().find("lists more than 4096 folders") != std::string::npos, error().c_str());
}

// The walk never enters /proc, /sys or /dev, stops at its depth, entry and file bounds, and says so.
void tst_model_folders::walkIsBounded() {
  QTemporaryDir dir;
  const fs::path root = fs::path(dir.path().toStdString()) / "vae";
  fs::path deep = root;
  fs::create_directories(root);
  for (int level = 0; level <= 5; ++level) {
    std::ofstream(deep / ("level" + std::to_string(level) + ".safetensors")) << "x";
    deep /= "d" + std::to_string(level + 1);
    fs::create_directories(deep);
  }
  fs::create_directory_symlink("/proc", root / "proc_link");
  fs::create_directory_symlink("/sys", root / "sys_link");
  mio::ModelFolders folders;
  folders.add(mio::ModelKind::Vae, root.string());
  mio::ScanLimits limits;
  limits.depth = 3;
  std::vector<std::string> notes;
  const std::vector<std::string> files = mio::list_model_files(folders, mio::ModelKind::Vae, &notes, limits);
  QCOMPARE(files.size(), size_t(4));  // levels 0-3
  auto said = [&](const std::string& text) {
    for (const std::string& note : notes)
      if (note.find(text) != std::string::npos) return true;
    return false;
  };
  QVERIFY2(said("Skipped '/proc', '/sys' under '" + root.string() + "': system folders hold no model files"),
           notes.empty() ? "(no notes)" : notes[0].c_str());
  QVERIFY(said("Skipped 1 folders deeper than 3 levels under '" + root.string() + "'"));

  // Entries and files: 20 weight files in one folder.
  const fs::path flat = fs::path(dir.path().toStdString()) / "loras";
  fs::create_directories(flat);
  for (int i = 0; i < 20; ++i) std::ofstream(flat / ("l" + std::to_string(i) + ".safetensors")) << "x";
  folders.add(mio::ModelKind::Lora, flat.string());
  notes.clear();
  limits = {};
  limits.entries = 10;
  QCOMPARE(mio::list_model_files(folders, mio::ModelKind::Lora, &notes, limits).size(), size_t(10));
  QVERIFY2(said("Stopped listing loras files after looking at 10 folder entries under '" + flat.string()),
           notes.empty() ? "(no notes)" : notes[0].c_str());
  notes.clear();
  limits = {};
  limits.files = 5;
  QCOMPARE(mio::list_model_files(folders, mio::ModelKind::Lora, &notes, limits).size(), size_t(5));
  QVERIFY(said("Stopped listing loras files at 5 files under '" + flat.string()));
  // Within the bounds nothing is said.
  notes.clear();
  QCOMPARE(mio::list_model_files(folders, mio::ModelKind::Lora, &notes).size(), size_t(20));
  QVERIFY(notes.empty());
}

// Issue #41: `base_path: /` walked the whole file system, /proc included. Now the walk skips the
// system folders and stops at its entry bound, saying both (/dev sorts early enough to be reached
// within the bound; /proc is checked through a link above).
void tst_model_folders::rootBasePathIsBounded() {
  QTemporaryDir dir;
  const std::string yaml = dir.filePath("extra_model_paths.yaml").toStdString();
  std::ofstream(yaml) << "everything:\n  base_path: /\n  vae: .\n";
  const mio::ModelFolders folders = mio::read_extra_model_paths(yaml);
  QCOMPARE(folders.folders.at(mio::ModelKind::Vae), std::vector<std::string>{"/"});
  mio::ScanLimits limits;
  limits.entries = 20000;  // the default is 200,000; a smaller walk keeps the test quick
  std::vector<std::string> notes;
  QElapsedTimer timer;
  timer.start();
  mio::list_model_files(folders, mio::ModelKind::Vae, &notes, limits);
  qInfo("walked / in %lld ms; notes: %zu", timer.elapsed(), notes.size());
  std::string all;
  for (const std::string& note : notes) all += note + "\n";
  // Links into a system folder (/run/shm, /dev/fd) are named by the system folder they lead to.
  const std::regex skipped("Skipped ('/[a-z]+', )*'/dev'(, '/[a-z]+')* under '/': system folders hold no model files\\.");
  QVERIFY2(std::regex_search(all, skipped), all.c_str());
  QVERIFY2(all.find("Stopped listing vae files after looking at 20000 folder entries under '/'") != std::string::npos,
           all.c_str());
}

void tst_model_folders::picksByContent() {
  QTemporaryDir dir;
  const std::string models = make_comfy(dir);
  auto files = locate_model_files(models, {}, mio::comfy_model_folders(models));
  QVERIFY2(files.ok(), error_of(files).c_str());
  QCOMPARE(files->dit, models + "/diffusion_models/wan/wan2.2_ti2v_5B_fp16.safetensors");
  QCOMPARE(files->vae, models + "/vae/wan2.2_vae.safetensors");  // not the Wan2.1 one
  QCOMPARE(files->text_encoder, models + "/text_encoders/umt5_xxl_fp16.safetensors");  // not Flux's T5
  QCOMPARE(files->tokenizer, std::string());  // the encoder carries it
}

void tst_model_folders::ambiguousFilesAreNamed() {
  QTemporaryDir dir;
  const std::string models = make_comfy(dir);
  write_sparse_safetensors(models + "/text_encoders/umt5_xxl_fp8_e4m3fn_scaled.safetensors", umt5_tensors(true));
  auto files = locate_model_files(models, {}, mio::comfy_model_folders(models));
  const std::string message = error_of(files);
  QVERIFY2(message.find("Several umT5-XXL text encoder files") != std::string::npos, message.c_str());
  QVERIFY(message.find("umt5_xxl_fp16.safetensors") != std::string::npos);
  QVERIFY(message.find("umt5_xxl_fp8_e4m3fn_scaled.safetensors") != std::string::npos);
  QVERIFY(message.find("set the text_encoder param") != std::string::npos);
  // Naming the file settles it.
  vidgraph::nodes::ModelFiles given;
  given.text_encoder = models + "/text_encoders/umt5_xxl_fp16.safetensors";
  QVERIFY(locate_model_files(models, given, mio::comfy_model_folders(models)).ok());
  // No VAE of the kind at all: the files seen are listed.
  fs::remove(models + "/vae/wan2.2_vae.safetensors");
  fs::remove(models + "/vae/wan_2.1_vae.safetensors");
  write_sparse_safetensors(models + "/vae/sdxl_vae.safetensors", {{"decoder.conv_in.weight", "F32", {512, 4, 3, 3}}});
  const std::string none = error_of(locate_model_files(models, given, mio::comfy_model_folders(models)));
  QVERIFY2(none.find("No Wan2.2 VAE found in '" + models + "/vae'") != std::string::npos, none.c_str());
  QVERIFY(none.find("sdxl_vae.safetensors (safetensors)") != std::string::npos);
  QVERIFY(none.find("set the vae param") != std::string::npos);
}

void tst_model_folders::embeddedTokenizerNeedsNoFile() {
  QTemporaryDir dir;
  const std::string models = make_comfy(dir, /*tokenizer_inside=*/false);
  const std::string message = error_of(locate_model_files(models, {}, mio::comfy_model_folders(models)));
  QVERIFY2(message.find("No tokenizer found") != std::string::npos, message.c_str());
  QVERIFY(message.find("set the tokenizer param") != std::string::npos);
  // An explicit encoder that carries `spiece_model`, no folder at all: no tokenizer file needed.
  write_sparse_safetensors(models + "/te_with_tokenizer.safetensors", umt5_tensors(true));
  vidgraph::nodes::ModelFiles given;
  given.dit = models + "/diffusion_models/wan/wan2.2_ti2v_5B_fp16.safetensors";
  given.vae = models + "/vae/wan2.2_vae.safetensors";
  given.text_encoder = models + "/te_with_tokenizer.safetensors";
  auto files = locate_model_files("", given);
  QVERIFY2(files.ok(), error_of(files).c_str());
  QCOMPARE(files->tokenizer, std::string());
}

// city96's umT5 GGUF in text_encoders/: told apart by its llama.cpp names and shape, and its
// tokenizer metadata stands for the tokenizer file; the same file without that metadata needs one.
void tst_model_folders::ggufEncoderBringsItsTokenizer() {
  QTemporaryDir dir;
  const std::string models = make_comfy(dir, /*tokenizer_inside=*/false);
  fs::remove(models + "/text_encoders/umt5_xxl_fp16.safetensors");
  const std::string gguf = models + "/text_encoders/umt5-xxl-encoder-Q8_0.gguf";
  write_sparse_umt5_gguf(gguf, /*with_tokenizer=*/true);
  const mio::ModelFileInfo info = mio::inspect_model_file(gguf);
  QVERIFY2(info.error.empty(), info.error.c_str());
  QCOMPARE(info.format, std::string("gguf"));
  QCOMPARE(info.detected, std::string("umt5-xxl"));
  QCOMPARE(info.dtype, std::string("F16"));
  QVERIFY(info.has_tokenizer);
  auto files = locate_model_files(models, {}, mio::comfy_model_folders(models));
  QVERIFY2(files.ok(), error_of(files).c_str());
  QCOMPARE(files->text_encoder, gguf);
  QCOMPARE(files->tokenizer, std::string());

  write_sparse_umt5_gguf(gguf, /*with_tokenizer=*/false);
  QVERIFY(!mio::inspect_model_file(gguf).has_tokenizer);
  const std::string message = error_of(locate_model_files(models, {}, mio::comfy_model_folders(models)));
  QVERIFY2(message.find("No tokenizer found") != std::string::npos, message.c_str());
}

void tst_model_folders::paramsAndRunDefault() {
  QTemporaryDir dir;
  const std::string models = make_comfy(dir);
  const std::string yaml = dir.filePath("extra_model_paths.yaml").toStdString();
  std::ofstream(yaml) << "comfyui:\n  base_path: ComfyUI/models\n  diffusion_models: diffusion_models\n"
                         "  vae: vae\n  text_encoders: text_encoders\n";
  vidgraph::engine::RunOptions options;
  // model_path as the ComfyUI models folder.
  auto from_folder = model_files_from_params({{"model_path", models}}, options);
  QVERIFY2(from_folder.ok(), error_of(from_folder).c_str());
  QCOMPARE(from_folder->vae, models + "/vae/wan2.2_vae.safetensors");
  // Only the yaml, as a param and then as the run's default (RunOptions::model_paths_file, which the
  // front ends fill from $VIDGRAPH_MODEL_PATHS; the nodes never read the environment: a variable set
  // to a missing file here changes nothing).
  qputenv("VIDGRAPH_MODEL_PATHS", QByteArray::fromStdString(dir.filePath("absent.yaml").toStdString()));
  auto from_yaml = model_files_from_params({{"model_paths_file", yaml}}, options);
  QVERIFY2(from_yaml.ok(), error_of(from_yaml).c_str());
  QCOMPARE(fs::path(from_yaml->dit).filename().string(), std::string("wan2.2_ti2v_5B_fp16.safetensors"));
  auto without = model_files_from_params(nlohmann::json::object(), options);
  QVERIFY(!without.ok());
  QVERIFY2(error_of(without).find("absent.yaml") == std::string::npos, error_of(without).c_str());
  vidgraph::engine::RunOptions with_default = options;
  with_default.model_paths_file = yaml;
  auto from_default = model_files_from_params(nlohmann::json::object(), with_default);
  QVERIFY2(from_default.ok(), error_of(from_default).c_str());
  QCOMPARE(from_default->text_encoder, from_yaml->text_encoder);
  // The node's own param wins over the run's default.
  with_default.model_paths_file = dir.filePath("absent.yaml").toStdString();
  auto param_wins = model_files_from_params({{"model_paths_file", yaml}}, with_default);
  QVERIFY2(param_wins.ok(), error_of(param_wins).c_str());
  auto bad_default = model_files_from_params(nlohmann::json::object(), with_default);
  QVERIFY2(error_of(bad_default).find("absent.yaml' does not exist") != std::string::npos, error_of(bad_default).c_str());
  qunsetenv("VIDGRAPH_MODEL_PATHS");
  auto bad = model_files_from_params({{"model_paths_file", dir.filePath("nope.yaml").toStdString()}}, options);
  QVERIFY2(error_of(bad).find("nope.yaml' does not exist") != std::string::npos, error_of(bad).c_str());
}

QTEST_GUILESS_MAIN(tst_model_folders)
#include "tst_model_folders.moc"
