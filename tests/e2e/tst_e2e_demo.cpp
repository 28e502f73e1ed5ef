// The shipped demo makes a real video: the README's main job (vidgraph-run on demo.vgflow with the
// trained demo model) gives an MP4 whose first frame is the sample image, whose frames follow each
// other smoothly and move, and whose motion follows the prompt (the camera panning right moves the
// picture left, and the other way round). vidgraph-train-demo --quick trains a model that passes
// looser checks of the same kind. The text-to-video demo gives the prompt's background, and its
// shape in the named colour (in most frames) moving the named way.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include <QtCore/QFile>
#include <QtCore/QJsonDocument>
#include <QtCore/QJsonObject>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "demo_checks.h"
#include "nodes/frames.h"
#include "nodes/media/clip_reader.h"
#include "nodes/media/frame_metrics.h"
#include "nodes/media/image_io.h"
#include "process_run.h"

namespace fs = std::filesystem;
using namespace vidgraph;
namespace media = vidgraph::nodes::media;

namespace {

const QString kBinary = QStringLiteral(VIDGRAPH_BINARY_DIR);
const QString kDemo = kBinary + "/share/vidgraph/workflows/demo.vgflow";
const QString kDemoT2v = kBinary + "/share/vidgraph/workflows/demo-t2v.vgflow";
const std::string kSample = VIDGRAPH_BINARY_DIR "/share/vidgraph/samples/landscape.png";
const QString kPanRight = QStringLiteral("the camera pans right over the landscape");
const QString kPanLeft = QStringLiteral("the camera pans left over the landscape");

// Runs `program` with `args`; false (its stderr in the log) unless it exits 0 in time.
bool run_ok(const QString& program, const QStringList& args, int timeout_ms) {
  const test_common::ProcessOutcome r = test_common::run_process(program, args, timeout_ms);
  if (r.exit_code != 0) qWarning("%s exited %d: %s", qPrintable(program), r.exit_code, qPrintable(r.err.right(4000)));
  return r.exit_code == 0;
}

// Runs a demo workflow with `sets` (NODE.PARAM=VALUE) and reads back every frame of its MP4.
nodes::Frames demo_video(const QString& out_dir, const QStringList& sets, const QString& workflow = kDemo,
                         const QString& mp4_name = "demo.mp4") {
  QStringList args{"run", workflow, "--output-dir", out_dir};
  for (const QString& s : sets) args << "--set" << s;
  nodes::Frames frames;
  if (!run_ok(kBinary + "/bin/vidgraph-run", args, 300000)) return frames;
  const std::string mp4 = (out_dir + "/" + mp4_name).toStdString();
  media::ClipInfo info;
  std::string error;
  if (!media::probe_clip(mp4, &info, &error)) qWarning("%s", error.c_str());
  media::ClipRead read;
  read.count = info.frame_count;
  if (!media::read_clip(mp4, read, &frames, &error)) qWarning("%s", error.c_str());
  return frames;
}

double psnr(const std::uint8_t* a, const std::uint8_t* b, int width, int height) {
  return media::psnr_from_mse(media::frame_mse(a, b, width, height));
}

// The sample image as Load Image fits it into the demo's 160x96.
nodes::Image fitted_sample(int width, int height) {
  nodes::Image original, fitted;
  std::string error;
  if (!media::load_image(kSample, &original, &error) ||
      !media::resize_center_crop(original, width, height, &fitted, &error)) {
    qWarning("%s", error.c_str());
  }
  return fitted;
}

struct VideoScores {
  double first_frame = 0;  // dB against the fitted sample image
  double consecutive_mean = 0, consecutive_min = std::numeric_limits<double>::infinity();  // dB
  double first_last = 0;   // dB
};

VideoScores score(const nodes::Frames& f) {
  VideoScores s;
  const nodes::Image sample = fitted_sample(f.width, f.height);
  s.first_frame = psnr(f.frame(0), sample.rgb.data(), f.width, f.height);
  double mse_sum = 0;
  for (int i = 1; i < f.count; ++i) {
    const double mse = media::frame_mse(f.frame(i - 1), f.frame(i), f.width, f.height);
    mse_sum += mse;
    s.consecutive_min = std::min(s.consecutive_min, media::psnr_from_mse(mse));
  }
  s.consecutive_mean = media::psnr_from_mse(mse_sum / (f.count - 1));
  s.first_last = psnr(f.frame(0), f.frame(f.count - 1), f.width, f.height);
  qInfo("first frame %.2f dB, consecutive mean %.2f dB (lowest %.2f dB), first vs last %.2f dB", s.first_frame,
        s.consecutive_mean, s.consecutive_min, s.first_last);
  return s;
}

// The horizontal shift (pixels, -32..32) that best maps the last frame's content onto the first's:
// negative when the picture moved left. Compared on luma over the overlap of the two frames.
int horizontal_shift(const nodes::Frames& f) {
  const std::uint8_t* a = f.frame(0);
  const std::uint8_t* b = f.frame(f.count - 1);
  auto luma = [&](const std::uint8_t* p, int x, int y) {
    const std::uint8_t* q = p + (static_cast<std::size_t>(y) * f.width + x) * 3;
    return 0.299 * q[0] + 0.587 * q[1] + 0.114 * q[2];
  };
  int best = 0;
  double best_error = std::numeric_limits<double>::infinity();
  for (int shift = -32; shift <= 32; ++shift) {
    double sum = 0;
    int n = 0;
    for (int y = 0; y < f.height; ++y) {
      for (int x = std::max(0, -shift); x < std::min(f.width, f.width - shift); ++x) {
        const double d = luma(b, x, y) - luma(a, x + shift, y);
        sum += d * d;
        ++n;
      }
    }
    if (sum / n < best_error) best_error = sum / n, best = -shift;
  }
  return best;
}

}  // namespace

class tst_e2e_demo : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void shippedDemoMovesTheImage();
  void promptsGiveDifferentMotion();
  void fastDemoFollowsThePrompt();
  void textToVideoFollowsThePrompt_data();
  void textToVideoFollowsThePrompt();
  void trainDemoQuickReproduces();

 private:
  QTemporaryDir dir_;
};

void tst_e2e_demo::shippedDemoMovesTheImage() {
  const nodes::Frames video = demo_video(dir_.filePath("demo"), {});
  QVERIFY2(video.count == 25 && video.width == 160 && video.height == 96, "the demo did not write 25 frames of 160x96");
  const VideoScores s = score(video);
  QVERIFY2(s.first_frame >= 22.0, "the first frame is not the sample image (PSNR < 22 dB)");
  QVERIFY2(s.consecutive_min >= 22.0, "two consecutive frames differ too much (PSNR < 22 dB)");
  QVERIFY2(s.first_last < 30.0, "the video is static (first vs last frame PSNR >= 30 dB)");
}

void tst_e2e_demo::promptsGiveDifferentMotion() {
  const nodes::Frames right = demo_video(dir_.filePath("right"), {"prompt.positive=" + kPanRight});
  const nodes::Frames left = demo_video(dir_.filePath("left"), {"prompt.positive=" + kPanLeft});
  QVERIFY(right.count == 25 && left.count == 25);
  const int right_shift = horizontal_shift(right), left_shift = horizontal_shift(left);
  qInfo("'pans right' moved the picture %d px, 'pans left' %d px", right_shift, left_shift);
  QVERIFY2(right_shift < 0, "'the camera pans right' did not move the picture left");
  QVERIFY2(left_shift > 0, "'the camera pans left' did not move the picture right");
  const double between = psnr(right.frame(24), left.frame(24), 160, 96);
  QVERIFY2(between < 25.0, "the two prompts' last frames are nearly the same");
}

// demo-fast.vgflow: the shipped distilled student (3 steps, no guidance) animates the image as the
// demo does: first frame kept, smooth, moving, and the way each pan prompt says.
void tst_e2e_demo::fastDemoFollowsThePrompt() {
  const QString fast = kBinary + "/share/vidgraph/workflows/demo-fast.vgflow";
  const nodes::Frames right = demo_video(dir_.filePath("fast-right"), {"prompt.positive=" + kPanRight}, fast,
                                         "demo-fast.mp4");
  const nodes::Frames left = demo_video(dir_.filePath("fast-left"), {"prompt.positive=" + kPanLeft}, fast,
                                        "demo-fast.mp4");
  QVERIFY2(right.count == 25 && left.count == 25, "demo-fast did not write 25 frames");
  for (const nodes::Frames* video : {&right, &left}) {
    const VideoScores s = score(*video);
    QVERIFY2(s.first_frame >= 22.0, "the first frame is not the sample image (PSNR < 22 dB)");
    QVERIFY2(s.consecutive_min >= 22.0, "two consecutive frames differ too much (PSNR < 22 dB)");
    QVERIFY2(s.first_last < 30.0, "the video is static (first vs last frame PSNR >= 30 dB)");
  }
  const int right_shift = horizontal_shift(right), left_shift = horizontal_shift(left);
  qInfo("demo-fast: 'pans right' moved the picture %d px, 'pans left' %d px", right_shift, left_shift);
  QVERIFY2(right_shift < 0, "'the camera pans right' did not move the picture left");
  QVERIFY2(left_shift > 0, "'the camera pans left' did not move the picture right");
}

// Text to video: the background, the shape's colour (in most frames) and its direction follow the prompt.
void tst_e2e_demo::textToVideoFollowsThePrompt_data() {
  QTest::addColumn<QString>("prompt");
  QTest::addColumn<QString>("colour");
  QTest::addColumn<QString>("background");
  QTest::addColumn<int>("direction");  // -1 left, +1 right
  QTest::newRow("green left") << "a green square moving left on a black background" << "green" << "black" << -1;
  QTest::newRow("red right") << "a red circle moving right on a dark blue background" << "red" << "dark blue" << +1;
}

void tst_e2e_demo::textToVideoFollowsThePrompt() {
  QFETCH(QString, prompt);
  QFETCH(QString, colour);
  QFETCH(QString, background);
  QFETCH(int, direction);
  const auto wanted = demo_checks::parse_demo_prompt(prompt.toStdString());
  QVERIFY(wanted.has_value());
  QCOMPARE(QString::fromStdString(wanted->colour), colour);
  QCOMPARE(QString::fromStdString(wanted->background), background);
  QCOMPARE(wanted->direction, direction);
  const nodes::Frames video = demo_video(dir_.filePath("t2v-" + QString::number(direction)),
                                         {"prompt.positive=" + prompt}, kDemoT2v, "demo-t2v.mp4");
  QVERIFY2(video.count == 25 && video.width == 160 && video.height == 96,
           "the t2v demo did not write 25 frames of 160x96");
  const demo_checks::DemoCheck check = demo_checks::check_video(video, *wanted);
  qInfo("shape in %d frames (%d of them %s: %s) on a %s background, moved %.1f px", check.frames_with_shape,
        check.named, qPrintable(colour), check.colours.c_str(), check.background.c_str(), check.dx);
  std::string failed;
  for (const std::string& f : check.failed) failed += (failed.empty() ? "" : "; ") + f;
  QVERIFY2(check.passed(), qPrintable("'" + prompt + "' gave " + QString::fromStdString(failed)));
}

void tst_e2e_demo::trainDemoQuickReproduces() {
  const QString model = dir_.filePath("quick-model");
  QVERIFY(run_ok(kBinary + "/bin/vidgraph-train-demo",
                 {model, "--quick", "--caption-dropout", "0.1", "--tokenizer",
                  kBinary + "/share/vidgraph/models/wan22-demo/spiece.model", "--image", QString::fromStdString(kSample)},
                 780000));
  for (const char* file : {"config.json", "diffusion_pytorch_model.safetensors.index.json", "vae.safetensors",
                           "text_encoder.safetensors", "spiece.model", "training.json"}) {
    QVERIFY2(fs::is_regular_file(fs::path(model.toStdString()) / file), file);
  }
  QFile record(model + "/training.json");
  QVERIFY(record.open(QIODevice::ReadOnly));
  const QJsonObject training = QJsonDocument::fromJson(record.readAll()).object();
  QCOMPARE(training["dit"].toObject()["caption_dropout"].toDouble(), 0.1);
  const double colour_error = training["shape_colour_error"].toDouble(-1);
  qInfo("quick VAE: shape colour error %.1f", colour_error);
  QVERIFY2(colour_error > 0 && colour_error < 442, "training.json has no shape colour error in RGB units");
  const nodes::Frames video = demo_video(dir_.filePath("quick"), {"model.model_path=" + model});
  QVERIFY(video.count == 25);
  const VideoScores s = score(video);
  QVERIFY2(s.first_frame >= 14.0, "the quick model's first frame is not the sample image (PSNR < 14 dB)");
  QVERIFY2(s.consecutive_mean >= 14.0, "the quick model's frames do not follow each other (mean PSNR < 14 dB)");
}

QTEST_GUILESS_MAIN(tst_e2e_demo)
#include "tst_e2e_demo.moc"
