// Inputs users give to nodes never hang the process, never take unbounded memory, and fail with a
// sentence naming the input: special files (FIFO, /dev/zero), oversized images (from the header,
// before decoding), oversized prompts, non-UTF-8 paths, VAE decodes that do not fit in memory, and
// model folders whose fingerprint must not walk unrelated trees. Real files in a QTemporaryDir.
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "engine/engine.h"
#include "engine/registry.h"
#include "models/vae/vae_checkpoint.h"
#include "models/vae/vae_tiling.h"
#include "nodes/model/model_files.h"
#include "nodes/model/model_handles.h"
#include "nodes/sampling/latent.h"
#include "nodes/session.h"
#include "nodes/value_types.h"
#include "nodes_test_fixture.h"

#ifdef VIDGRAPH_HAVE_MEDIA
#include "nodes/media/image_io.h"
#endif

using namespace vidgraph;
using namespace vidgraph::nodes;
using namespace vidgraph::nodes_test;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
}

std::uint32_t crc32(const std::string& bytes) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

std::string be32(std::uint32_t v) {
  return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)};
}

// A PNG whose IHDR claims width x height (8-bit RGB) with one tiny IDAT: a valid header, no pixels.
std::string png_header_only(std::uint32_t width, std::uint32_t height) {
  auto chunk = [](const std::string& type, const std::string& data) {
    return be32(std::uint32_t(data.size())) + type + data + be32(crc32(type + data));
  };
  const std::string ihdr = be32(width) + be32(height) + std::string("\x08\x02\x00\x00\x00", 5);
  return std::string("\x89PNG\r\n\x1a\n", 8) + chunk("IHDR", ihdr) +
         chunk("IDAT", std::string("\x78\x9c\x03\x00\x00\x00\x00\x01", 8)) + chunk("IEND", "");
}

engine::ValueMap vae_inputs(const at::Tensor& latent) {
  VaeHandle vae{vae::make_seeded_vae(vae::WanVaeConfig::tiny(), 3), "tiny", c10::Device(c10::kCPU), at::kFloat};
  Latent lat;
  lat.samples = latent;
  return {{"vae", engine::make_value(kVaeType, std::move(vae), 1)},
          {"latent", engine::make_value(kLatentType, std::move(lat), 1)}};
}

}  // namespace

class tst_nodes_inputs : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void specialFilesRefused_data();
  void specialFilesRefused();
  void imagePixelBudgetFromHeader();
  void promptSizeLimit();
  void nonUtf8PathNamesParam();
  void vaeDecodeTilesWhenOverBudget();
  void vaeDecodeRefusesWithoutAllocating();
  void modelFingerprintReadsOnlyWeights();
  void modelFolderSpecialWeightRefused();

 private:
  const engine::NodeType& type(const char* name) const { return find_type(registry_, name); }
  vidgraph::nodes::Session session_;  // as the front ends open it: the plugin and the built-in types
  engine::Registry& registry_ = session_.registry();
};

// /dev/zero, /dev/urandom, a FIFO and a link to /dev/zero: refused from stat(), never opened (a
// FIFO open blocks until a writer comes; /dev/zero never ends).
void tst_nodes_inputs::specialFilesRefused_data() {
  QTest::addColumn<QString>("node");
  QTest::addColumn<QString>("path");
  QTest::addColumn<QString>("kind");
  for (const char* node : {"LoadImage", "LoadLatent"}) {
    QTest::addRow("%s /dev/zero", node) << node << "/dev/zero" << "character device";
    QTest::addRow("%s /dev/urandom", node) << node << "/dev/urandom" << "character device";
    QTest::addRow("%s fifo", node) << node << "<fifo>" << "FIFO";
    QTest::addRow("%s link to /dev/zero", node) << node << "<link>" << "character device";
  }
}

void tst_nodes_inputs::specialFilesRefused() {
  QFETCH(QString, node);
  QFETCH(QString, path);
  QFETCH(QString, kind);
#ifndef VIDGRAPH_HAVE_MEDIA
  if (node == "LoadImage") QSKIP("built without media");
#endif
  QTemporaryDir dir;
  std::string p = path.toStdString();
  if (p == "<fifo>") {
    p = dir.filePath("in.png").toStdString();
    QCOMPARE(::mkfifo(p.c_str(), 0600), 0);
  } else if (p == "<link>") {
    p = dir.filePath("zero.png").toStdString();
    fs::create_symlink("/dev/zero", p);
  }
  const engine::NodeType& t = type(node.toUtf8().constData());
  Recorder rec;
  auto ctx = make_context(t, {{"path", p}}, {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  QVERIFY2(contains(message, "The path param names '" + p + "'"), message.c_str());
  QVERIFY2(contains(message, kind.toStdString()) && contains(message, "not a regular file"), message.c_str());
#ifdef VIDGRAPH_HAVE_MEDIA
  if (node == "LoadImage") {  // the media helper alone: opened without blocking, refused by fstat
    Image image;
    std::string error;
    QVERIFY(!media::load_image(p, &image, &error));
    QVERIFY2(contains(error, "not a regular file"), error.c_str());
  }
#endif
}

// A 30000 x 30000 PNG header (a 2.7 GB RGB decode): refused from IHDR with the budget named; the
// file is 57 bytes, so the decoder would otherwise allocate before failing on the missing pixels.
void tst_nodes_inputs::imagePixelBudgetFromHeader() {
#ifndef VIDGRAPH_HAVE_MEDIA
  QSKIP("built without media");
#else
  QTemporaryDir dir;
  const fs::path big = dir.filePath("big.png").toStdString();
  write_file(big, png_header_only(30000, 30000));
  const engine::NodeType& t = type("LoadImage");
  Recorder rec;
  auto ctx = make_context(t, {{"path", big.string()}}, {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  QVERIFY2(contains(message, "30000x30000 (900.0 megapixels)"), message.c_str());
  QVERIFY2(contains(message, "100 megapixels"), message.c_str());
  QVERIFY(contains(t.params.front().description, "100 megapixels"));
  std::int64_t w = 0, h = 0;
  const std::string header = png_header_only(10000, 10000);
  QVERIFY(media::image_header_size(header.data(), header.size(), &w, &h));
  QCOMPARE(w * h, media::kMaxImagePixels);  // exactly at the budget: the header check lets it by
#endif
}

// 100,000 characters pass (also when multi-byte), 100,001 are refused naming the param, the size
// and the limit; Encode Text's models-layer check says the same for prompts from elsewhere.
void tst_nodes_inputs::promptSizeLimit() {
  const engine::NodeType& t = type("Prompt");
  Recorder rec;
  auto ok = make_context(t, {{"positive", std::string(100000, 'a')}, {"negative", ""}}, {}, {}, &rec);
  QVERIFY(t.compute(ok).ok());
  std::string accents;
  for (int i = 0; i < 100000; ++i) accents += "\xc3\xa9";  // é: 200,000 bytes, 100,000 characters
  auto multi = make_context(t, {{"positive", "x"}, {"negative", accents}}, {}, {}, &rec);
  QVERIFY(t.compute(multi).ok());
  auto big = make_context(t, {{"positive", std::string(100001, 'a')}}, {}, {}, &rec);
  auto out = t.compute(big);
  QVERIFY(!out.ok());
  QVERIFY2(contains(out.error().message, "The positive param has 100001 characters"), out.error().message.c_str());
  QVERIFY(contains(out.error().message, "more than the 100000"));
  auto neg = make_context(t, {{"positive", "x"}, {"negative", accents + "e"}}, {}, {}, &rec);
  auto out_neg = t.compute(neg);
  QVERIFY(!out_neg.ok());
  QVERIFY2(contains(out_neg.error().message, "The negative param"), out_neg.error().message.c_str());
}

// A file name with a byte that is not UTF-8 (legal on Linux), run through the engine: the node
// fails naming its param, not with a JSON exception from hashing the params.
void tst_nodes_inputs::nonUtf8PathNamesParam() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("bad").toStdString() + "\xff.safetensors";
  write_file(path, "x");
  engine::GraphDocument doc;
  engine::Node node;
  node.id = "load";
  node.type = "LoadLatent";
  node.params = {{"path", path}};
  QVERIFY(doc.add_node(node).ok());
  engine::Engine engine(registry_);
  const engine::RunResult result = engine.run(doc, engine::RunRequest{});
  QCOMPARE(result.status, engine::RunStatus::Failed);
  QVERIFY(!result.errors.empty());
  const std::string message = result.errors.front().to_string();
  QVERIFY2(contains(message, "The path param") && contains(message, "not valid UTF-8"), message.c_str());
  QVERIFY2(contains(message, "\\xFF"), message.c_str());
  QVERIFY2(!contains(message, "json.exception"), message.c_str());
  fs::remove(path);  // QTemporaryDir cannot name it (Qt decodes file names as UTF-8)
}

// Tiny VAE, 1 frame of 24 x 24 latent cells: a budget between the tiled and the untiled estimate
// turns tiling on (logged) and the decode gives the tiled result.
void tst_nodes_inputs::vaeDecodeTilesWhenOverBudget() {
  const at::Tensor latent = at::zeros({1, 8, 1, 24, 24});
  const vae::VaeTiling tiling{8, 8, 2};
  const auto untiled = vae::estimate_decode_memory(vae::WanVaeConfig::tiny(), {1, 8, 1, 24, 24}, 4, std::nullopt);
  const auto tiled = vae::estimate_decode_memory(vae::WanVaeConfig::tiny(), {1, 8, 1, 24, 24}, 4, tiling);
  QVERIFY2(tiled.total() < untiled.total(), "tiling must lower the estimate");
  const double limit_gib = double(tiled.total() + untiled.total()) / 2 / double(1 << 30);
  const engine::NodeType& t = type("VAEDecode");
  std::vector<std::string> logs;
  engine::NodeContext::Hooks hooks;
  hooks.log = [&logs](engine::LogLevel, const std::string& line) { logs.push_back(line); };
  engine::NodeContext ctx("n1", t.name, vae_inputs(latent),
                          t.params_with_defaults({{"memory_limit_gib", limit_gib}, {"tile_size", 8},
                                                  {"tile_overlap", 2}}),
                          {}, hooks);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(logs.size(), std::size_t(1));
  QVERIFY2(contains(logs[0], "tiling turned on") && contains(logs[0], "memory_limit_gib"), logs[0].c_str());
  // Untiled with a budget above the estimate: no log line.
  logs.clear();
  engine::NodeContext roomy("n1", t.name, vae_inputs(latent),
                            t.params_with_defaults({{"memory_limit_gib", 64.0}}), {}, hooks);
  QVERIFY(t.compute(roomy).ok());
  QVERIFY(logs.empty());
}

// A latent of 65536 x 65536 cells (a 1M-pixel-wide video): refused from shapes with the numbers;
// the latent is a broadcast view (no memory), and the decoder is never entered.
void tst_nodes_inputs::vaeDecodeRefusesWithoutAllocating() {
  const at::Tensor latent = at::zeros({1, 8, 1, 1, 1}).expand({1, 8, 1, 65536, 65536});
  const engine::NodeType& t = type("VAEDecode");
  Recorder rec;
  auto ctx = make_context(t, {{"memory_limit_gib", 8.0}}, vae_inputs(latent), {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  QVERIFY2(contains(message, "even tiled") && contains(message, "budget of 8.00 GiB (memory_limit_gib)"),
           message.c_str());
  QVERIFY2(contains(message, "decoded video") && contains(message, "lower tile_size"), message.c_str());
  QVERIFY(rec.progress.empty());
}

// A model folder beside a big unrelated tree (an unreadable folder, a FIFO, many files): the
// fingerprint holds only the weights the loaders read; an unrelated change keeps it, a weight
// change alters it.
void tst_nodes_inputs::modelFingerprintReadsOnlyWeights() {
  QTemporaryDir dir;
  const fs::path root = dir.path().toStdString();
  for (const char* f : {"diffusion_pytorch_model.safetensors", "config.json", "Wan2.2_VAE.pth",
                        "models_t5_umt5-xxl-enc-bf16.pth", "google/umt5-xxl/spiece.model"}) {
    write_file(root / f, "weights");
  }
  for (int i = 0; i < 2000; ++i) write_file(root / "unrelated" / std::to_string(i % 20) / (std::to_string(i) + ".txt"), "x");
  QCOMPARE(::mkfifo((root / "unrelated" / "pipe").c_str(), 0600), 0);
  fs::create_directories(root / "locked");
  fs::permissions(root / "locked", fs::perms::none);
  const engine::NodeType& t = type("LoadWanModel");
  const nlohmann::json params = t.params_with_defaults({{"model_path", root.string()}});
  const std::string before = t.fingerprint(params, {});
  fs::permissions(root / "locked", fs::perms::owner_all);
  QVERIFY2(contains(before, "Wan2.2_VAE.pth=") && contains(before, "spiece.model="), before.c_str());
  QVERIFY2(!contains(before, "unrelated") && !contains(before, "locked"), before.c_str());
  write_file(root / "unrelated" / "3" / "3.txt", "changed, and longer");
  write_file(root / "notes.txt", "new unrelated file");
  QCOMPARE(t.fingerprint(params, {}), before);
  write_file(root / "Wan2.2_VAE.pth", "other weights");
  QVERIFY(t.fingerprint(params, {}) != before);
}

// A weight file that is a FIFO: Load Wan Model refuses it before any loader opens it.
void tst_nodes_inputs::modelFolderSpecialWeightRefused() {
  QTemporaryDir dir;
  const fs::path root = dir.path().toStdString();
  for (const char* f : {"diffusion_pytorch_model.safetensors", "models_t5_umt5-xxl-enc-bf16.pth",
                        "google/umt5-xxl/spiece.model"}) {
    write_file(root / f, "weights");
  }
  QCOMPARE(::mkfifo((root / "Wan2.2_VAE.pth").c_str(), 0600), 0);
  const engine::NodeType& t = type("LoadWanModel");
  Recorder rec;
  auto ctx = make_context(t, {{"model_path", root.string()}, {"device", "cpu"}}, {}, {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  const std::string& message = out.error().message;
  QVERIFY2(contains(message, "Wan2.2_VAE.pth") && contains(message, "FIFO"), message.c_str());
  QVERIFY2(contains(message, "model_path param"), message.c_str());
}

QTEST_GUILESS_MAIN(tst_nodes_inputs)
#include "tst_nodes_inputs.moc"
