// Tests the built-in node types that need no model: every descriptor is complete and its params
// validated; Save/Load Latent, Preview Video and (with media) Load Image and Export Video run through a
// NodeContext (no engine) on real files. The model nodes are in tst_nodes_model.cpp; shared fixtures in
// nodes_test_fixture.h.
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "engine/engine.h"
#include "engine/node_context.h"
#include "engine/registry.h"
#include "engine/workflow_file.h"
#include "nodes/register_nodes.h"
#include "nodes/session.h"
#include "nodes/sampling/latent.h"
#include "models/wan/wan_config.h"
#include "nodes/value_types.h"
#include "nodes_test_fixture.h"
#ifdef VIDGRAPH_HAVE_MEDIA
#include "nodes/media/image_io.h"
#include "nodes/media/video_probe.h"
#endif

namespace fs = std::filesystem;
using namespace vidgraph;
using namespace vidgraph::nodes;
using nodes_test::make_context;
using nodes_test::Recorder;

namespace {

Video gradient_video(int count, int width, int height) {
  Video video;
  video.frames = Frames{count, width, height, {}};
  video.frames.rgb.resize(video.frames.frame_bytes() * count);
  for (std::size_t i = 0; i < video.frames.rgb.size(); ++i) {
    video.frames.rgb[i] = static_cast<std::uint8_t>((i * 7) % 251);
  }
  return video;
}

}  // namespace

class tst_nodes : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void everyTypeRegistered();
  void descriptorsComplete();
  void paramsValidated_data();
  void paramsValidated();
  void promptDefaults();
  void latentRoundTripExact();
  void writersKeyedByOutputPath();
  void saveLatentRefusesOverwrite();
  void loadLatentErrors_data();
  void loadLatentErrors();
  void previewEmitsAndWritesSheet();
#ifdef VIDGRAPH_HAVE_MEDIA
  void loadImageFitsSizeRules();
  void loadImageErrors();
  void loadImageFingerprintFollowsFile();
  void exportEmbedsWorkflow();
  void exportCancelLeavesNoFile();
  void exportRefusesExisting();
#endif

 private:
  const engine::NodeType& type(const char* name) const { return nodes_test::find_type(registry_, name); }
  vidgraph::nodes::Session session_;  // as the front ends open it: the plugin and the built-in types
  engine::Registry& registry_ = session_.registry();
};

void tst_nodes::everyTypeRegistered() {
  const std::vector<std::string> names = builtin_node_names();
  QVERIFY(names.size() >= 4);
  QCOMPARE(registry_.size(), names.size());
  for (const std::string& name : names) QVERIFY2(registry_.find(name), name.c_str());
#ifdef VIDGRAPH_HAVE_MEDIA
  QVERIFY(registry_.find("LoadImage"));
  QVERIFY(registry_.find("ExportVideo"));
#endif
}

void tst_nodes::descriptorsComplete() {
  for (const engine::NodeType* t : registry_.list()) {
    const QByteArray name = QByteArray::fromStdString(t->name);
    QVERIFY2(!t->description.empty(), name);
    QVERIFY2(!t->display_name.empty(), name);
    QVERIFY2(!t->category.empty(), name);
    QVERIFY2(t->version >= 1, name);
    QVERIFY2(!t->outputs.empty(), name);
    for (const auto& p : t->inputs) QVERIFY2(!p.description.empty() && !p.type.empty(), name);
    for (const auto& p : t->outputs) QVERIFY2(!p.description.empty() && !p.type.empty(), name);
    for (const auto& p : t->params) {
      const QByteArray what = name + "." + QByteArray::fromStdString(p.name);
      QVERIFY2(!p.description.empty(), what);
      QVERIFY2(p.check(p.default_value).ok(), what);
      if (p.kind == engine::ParamKind::Int || p.kind == engine::ParamKind::Float) {
        QVERIFY2(p.min && p.max, what + " has a range");
      }
      if (p.kind == engine::ParamKind::Enum) QVERIFY2(p.choices.size() >= 2, what);
    }
  }
}

void tst_nodes::paramsValidated_data() {
  QTest::addColumn<QString>("node");
  QTest::addColumn<QString>("param");
  QTest::addColumn<QByteArray>("value");  // JSON
  QTest::addColumn<bool>("valid");
  // Every numeric param: just inside and just outside its range; enums: a choice and a non-choice.
  for (const engine::NodeType* t : registry_.list()) {
    for (const auto& p : t->params) {
      const std::string row = t->name + "." + p.name;
      const QString node = QString::fromStdString(t->name);
      const QString param = QString::fromStdString(p.name);
      if (p.min && p.max) {
        const bool is_int = p.kind != engine::ParamKind::Float;
        auto num = [is_int](double v) {
          return is_int ? QByteArray::number(qint64(v)) : QByteArray::number(v, 'g', 17);
        };
        QTest::newRow((row + " min").c_str()) << node << param << num(*p.min) << true;
        // An exclusive max (a plugin's [0, 1)) is refused itself; the value just below it is fine.
        QTest::newRow((row + " max").c_str()) << node << param << num(*p.max) << !p.max_exclusive;
        if (p.max_exclusive) {
          QTest::newRow((row + " below max").c_str()) << node << param << num(*p.max - 0.001) << true;
        }
        QTest::newRow((row + " below").c_str()) << node << param << num(*p.min - 1) << false;
        QTest::newRow((row + " above").c_str()) << node << param << num(*p.max + 1) << false;
      }
      if (p.kind == engine::ParamKind::Enum) {
        QTest::newRow((row + " choice").c_str())
            << node << param << QByteArray::fromStdString("\"" + p.choices.front() + "\"") << true;
        QTest::newRow((row + " other").c_str()) << node << param << QByteArray("\"nope\"") << false;
      }
      if (p.kind == engine::ParamKind::Bool) {
        QTest::newRow((row + " wrong type").c_str()) << node << param << QByteArray("\"yes\"") << false;
      }
    }
  }
}

void tst_nodes::paramsValidated() {
  QFETCH(QString, node);
  QFETCH(QString, param);
  QFETCH(QByteArray, value);
  QFETCH(bool, valid);
  const engine::ParamSpec* spec = type(node.toUtf8().constData()).find_param(param.toStdString());
  QVERIFY(spec);
  QCOMPARE(spec->check(nlohmann::json::parse(value.toStdString())).ok(), valid);
}

void tst_nodes::promptDefaults() {
  const engine::NodeType& t = type("Prompt");
  QCOMPARE(t.find_param("negative")->default_value.get<std::string>(), wan::default_negative_prompt());
  QVERIFY(wan::default_negative_prompt().rfind("色调艳丽", 0) == 0);
  Recorder rec;
  for (const char* negative : {"", "blurry"}) {
    auto ctx = make_context(t, {{"positive", "a cat"}, {"negative", negative}}, {}, {}, &rec);
    auto out = t.compute(ctx);
    QVERIFY(out.ok());
    const PromptText* text = engine::value_as<PromptText>(out->at("prompt"));
    QVERIFY(text);
    QCOMPARE(text->positive, std::string("a cat"));
    QCOMPARE(text->negative, std::string(*negative ? negative : wan::default_negative_prompt()));
  }
}

void tst_nodes::writersKeyedByOutputPath() {
  engine::RunOptions a, b;
  a.output_dir = "/tmp/vidgraph-run-a";
  b.output_dir = "/tmp/vidgraph-run-b";
  for (const auto& [name, param] : {std::pair<std::string, std::string>{"SaveLatent", "filename"},
                                    {"PreviewVideo", "contact_sheet"},
#ifdef VIDGRAPH_HAVE_MEDIA
                                    {"ExportVideo", "filename"},
#endif  // VIDGRAPH_HAVE_MEDIA
                                   }) {
    const engine::NodeType& t = type(name.c_str());
    QVERIFY2(t.fingerprint, name.c_str());
    const nlohmann::json params = t.params_with_defaults({{param, "{output}/out.file"}});
    // Another output folder (a sweep's next run) is another cache key; the same one is not.
    QVERIFY2(t.fingerprint(params, a) != t.fingerprint(params, b), name.c_str());
    QCOMPARE(t.fingerprint(params, a), t.fingerprint(params, a));
    QCOMPARE(t.fingerprint(params, a), std::string("/tmp/vidgraph-run-a/out.file"));
  }
}

void tst_nodes::latentRoundTripExact() {
  QTemporaryDir dir;
  Latent latent;
  latent.samples = at::randn({1, 48, 3, 4, 6});
  latent.info["seed"] = "42";
  Recorder rec;
  engine::RunOptions options;
  options.output_dir = dir.path().toStdString();
  const engine::NodeType& save = type("SaveLatent");
  auto save_ctx = make_context(save, {{"filename", "{output}/z.safetensors"}},
                               {{"latent", engine::make_value(kLatentType, latent, latent.bytes())}},
                               options, &rec);
  auto saved = save.compute(save_ctx);
  QVERIFY2(saved.ok(), saved.ok() ? "" : saved.error().message.c_str());
  const std::string path = *engine::value_as<std::string>(saved->at("path"));
  QVERIFY(fs::exists(path));
  const engine::NodeType& load = type("LoadLatent");
  auto load_ctx = make_context(load, {{"path", path}}, {}, options, &rec);
  auto loaded = load.compute(load_ctx);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
  const Latent* back = engine::value_as<Latent>(loaded->at("latent"));
  QVERIFY(back);
  QVERIFY(at::equal(back->samples, latent.samples));
  QCOMPARE(back->info.at("seed"), std::string("42"));
}

void tst_nodes::saveLatentRefusesOverwrite() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("z.safetensors").toStdString();
  std::ofstream(path) << "keep";
  Latent latent;
  latent.samples = at::randn({1, 4, 1, 2, 2});
  Recorder rec;
  const engine::NodeType& save = type("SaveLatent");
  auto ctx = make_context(save, {{"filename", path}, {"naming", "fail"}},
                          {{"latent", engine::make_value(kLatentType, latent)}}, {}, &rec);
  auto out = save.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY(out.error().message.find("already exists") != std::string::npos);
  QCOMPARE(out.error().node_id, std::string("n1"));
  QCOMPARE(fs::file_size(path), std::uintmax_t(4));
}

void tst_nodes::loadLatentErrors_data() {
  QTest::addColumn<QByteArray>("content");
  QTest::addColumn<QString>("expected");
  QTest::newRow("missing") << QByteArray("<none>") << "does not exist";
  QTest::newRow("garbage") << QByteArray("not safetensors at all") << "Could not read the latent";
}

void tst_nodes::loadLatentErrors() {
  QFETCH(QByteArray, content);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  const std::string path = dir.filePath("z.safetensors").toStdString();
  if (content != "<none>") std::ofstream(path) << content.toStdString();
  Recorder rec;
  const engine::NodeType& load = type("LoadLatent");
  auto ctx = make_context(load, {{"path", path}}, {}, {}, &rec);
  auto out = load.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find(expected.toStdString()) != std::string::npos,
           out.error().message.c_str());
}

void tst_nodes::previewEmitsAndWritesSheet() {
  QTemporaryDir dir;
  const engine::NodeType& t = type("PreviewVideo");
  Recorder rec;
  engine::RunOptions options;
  options.output_dir = dir.path().toStdString();
  const Video video = gradient_video(5, 32, 16);
  nlohmann::json params = nlohmann::json::object();
#ifdef VIDGRAPH_HAVE_MEDIA
  params["contact_sheet"] = "{output}/sheet.png";
#endif
  auto ctx = make_context(t, params, {{"video", engine::make_value(kVideoType, video)}}, options, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  QCOMPARE(int(rec.previews.size()), 1);
  QCOMPARE(rec.previews[0].type, std::string(kVideoType));
  QCOMPARE(engine::value_as<Video>(rec.previews[0])->frames.count, 5);
#ifdef VIDGRAPH_HAVE_MEDIA
  Image sheet;
  std::string error;
  QVERIFY2(media::load_image(dir.filePath("sheet.png").toStdString(), &sheet, &error), error.c_str());
  QVERIFY(sheet.width > 4 * 256);
#endif
}


#ifdef VIDGRAPH_HAVE_MEDIA
void tst_nodes::loadImageFitsSizeRules() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("wide.png").toStdString();
  Image image{320, 180, std::vector<std::uint8_t>(320 * 180 * 3, 90)};
  QVERIFY(media::write_png(path, image, false, nullptr));
  const engine::NodeType& t = type("LoadImage");
  Recorder rec;
  struct Case { nlohmann::json params; int w; int h; };
  const std::vector<Case> cases = {
      {{{"path", path}}, 1248, 704},                                   // reference default area
      {{{"path", path}, {"max_area", 160 * 96}}, 160, 96},             // tiny demo budget
      {{{"path", path}, {"width", 64}, {"height", 64}}, 64, 64},       // explicit size
  };
  for (const Case& c : cases) {
    auto ctx = make_context(t, c.params, {}, {}, &rec);
    auto out = t.compute(ctx);
    QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
    const Image* fitted = engine::value_as<Image>(out->at("image"));
    QCOMPARE(fitted->width, c.w);
    QCOMPARE(fitted->height, c.h);
  }
  auto bad = make_context(t, {{"path", path}, {"width", 50}, {"height", 64}}, {}, {}, &rec);
  auto out = t.compute(bad);
  QVERIFY(!out.ok());
  QVERIFY(out.error().message.find("multiples of 32") != std::string::npos);
}

void tst_nodes::loadImageErrors() {
  QTemporaryDir dir;
  const std::string corrupt = dir.filePath("bad.png").toStdString();
  std::ofstream(corrupt, std::ios::binary) << "\x89PNG\r\n\x1a\n" << std::string(64, 'x');
  const engine::NodeType& t = type("LoadImage");
  Recorder rec;
  for (const std::string& path : {corrupt, dir.filePath("none.png").toStdString()}) {
    auto ctx = make_context(t, {{"path", path}}, {}, {}, &rec);
    auto out = t.compute(ctx);
    QVERIFY(!out.ok());
    QVERIFY2(out.error().message.find(path) != std::string::npos, out.error().message.c_str());
  }
}

void tst_nodes::loadImageFingerprintFollowsFile() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("a.png").toStdString();
  QVERIFY(media::write_png(path, Image{8, 8, std::vector<std::uint8_t>(192, 1)}, false, nullptr));
  const engine::NodeType& t = type("LoadImage");
  QVERIFY(t.fingerprint);
  const nlohmann::json params = t.params_with_defaults({{"path", path}});
  const std::string before = t.fingerprint(params, {});
  QVERIFY(!before.empty());
  QVERIFY(media::write_png(path, Image{16, 8, std::vector<std::uint8_t>(384, 2)}, true, nullptr));
  QVERIFY(t.fingerprint(params, {}) != before);
}

void tst_nodes::exportEmbedsWorkflow() {
  QTemporaryDir dir;
  const engine::NodeType& t = type("ExportVideo");
  Recorder rec;
  engine::RunOptions options;
  options.output_dir = dir.path().toStdString();
  options.workflow_json = R"({"format":"vidgraph-workflow","version":1,"nodes":[]})";
  auto ctx = make_context(t, {{"filename", "{output}/clip.mp4"}, {"fps", 12.0}},
                          {{"video", engine::make_value(kVideoType, gradient_video(6, 32, 32))}},
                          options, &rec);
  auto out = t.compute(ctx);
  QVERIFY2(out.ok(), out.ok() ? "" : out.error().message.c_str());
  const std::string path = *engine::value_as<std::string>(out->at("path"));
  QCOMPARE(path, dir.filePath("clip.mp4").toStdString());
  media::VideoInfo info;
  std::string error;
  QVERIFY2(media::probe_video(path, &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 6);
  QCOMPARE(info.fps, 12.0);
  QCOMPARE(info.metadata["comment"], options.workflow_json);
  QCOMPARE(rec.progress.back().first, std::int64_t(6));
}

void tst_nodes::exportCancelLeavesNoFile() {
  QTemporaryDir dir;
  const engine::NodeType& t = type("ExportVideo");
  Recorder rec;
  rec.cancel = true;
  auto ctx = make_context(t, {{"filename", dir.filePath("clip.mp4").toStdString()}},
                          {{"video", engine::make_value(kVideoType, gradient_video(6, 32, 32))}},
                          {}, &rec);
  auto out = t.compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY(fs::is_empty(dir.path().toStdString()));
}

void tst_nodes::exportRefusesExisting() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("clip.mp4").toStdString();
  const engine::NodeType& t = type("ExportVideo");
  Recorder rec;
  const engine::Value video = engine::make_value(kVideoType, gradient_video(2, 32, 32));
  auto first = make_context(t, {{"filename", path}}, {{"video", video}}, {}, &rec);
  QVERIFY(t.compute(first).ok());
  const auto first_size = fs::file_size(path);
  auto refuse = make_context(t, {{"filename", path}, {"naming", "fail"}}, {{"video", video}}, {}, &rec);
  auto out = t.compute(refuse);
  QVERIFY(!out.ok());
  QVERIFY(out.error().message.find("already exists") != std::string::npos);
  engine::RunOptions options;
  options.overwrite = true;  // the runner's --overwrite: replaces the MP4 this writer made
  const engine::Value longer = engine::make_value(kVideoType, gradient_video(6, 32, 32));
  auto allow = make_context(t, {{"filename", path}, {"naming", "fail"}}, {{"video", longer}}, options, &rec);
  QVERIFY(t.compute(allow).ok());
  QVERIFY(fs::file_size(path) != first_size);
}
#endif  // VIDGRAPH_HAVE_MEDIA

QTEST_GUILESS_MAIN(tst_nodes)
#include "tst_nodes.moc"
