// Tests app/nodes/media and size_rules with real files, real OpenCV and real FFmpeg.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "nodes/frames.h"
#include "nodes/media/contact_sheet.h"
#include "nodes/media/image_io.h"
#include "nodes/media/image_resize.h"
#include "nodes/output_path.h"
#include "nodes/media/video_export.h"
#include "nodes/media/video_probe.h"
#include "nodes/size_rules.h"
#include "lanczos_reference.h"

namespace fs = std::filesystem;
using namespace vidgraph::nodes;
using namespace vidgraph::nodes::media;

Q_DECLARE_METATYPE(VideoFormat)

namespace {

// A moving diagonal gradient: frame f, pixel (y, x) = (x*4 + f*8, y*4, 128 + f*4), clipped.
Frames gradient_clip(int count, int width, int height) {
  Frames frames{count, width, height, {}};
  frames.rgb.resize(frames.frame_bytes() * count);
  for (int f = 0; f < count; ++f) {
    std::uint8_t* p = frames.frame(f);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x, p += 3) {
        p[0] = static_cast<std::uint8_t>(std::min(255, x * 4 + f * 8));
        p[1] = static_cast<std::uint8_t>(std::min(255, y * 4));
        p[2] = static_cast<std::uint8_t>(std::min(255, 128 + f * 4));
      }
    }
  }
  return frames;
}

double mean_abs_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b) {
  if (a.size() != b.size() || a.empty()) return 1e9;
  double sum = 0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += std::abs(int(a[i]) - int(b[i]));
  return sum / a.size();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Two-colour image: left half red, right half blue.
Image halves(int width, int height) {
  Image image{width, height, std::vector<std::uint8_t>(std::size_t(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      std::uint8_t* p = &image.rgb[(std::size_t(y) * width + x) * 3];
      p[0] = x < width / 2 ? 255 : 0;
      p[2] = x < width / 2 ? 0 : 255;
    }
  }
  return image;
}

// A photo-like test card: smooth gradients and a sinusoid everywhere, plus 1-pixel black/white
// column stripes (period 2) in the left third, where a shrink without antialiasing aliases.
Image test_card(int width, int height) {
  Image image{width, height, {}};
  image.rgb.resize(std::size_t(width) * height * 3);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      std::uint8_t* p = &image.rgb[(std::size_t(y) * width + x) * 3];
      const bool stripes = x < width / 3;
      p[0] = stripes ? std::uint8_t((x % 2) * 255) : std::uint8_t(x * 255 / width);
      p[1] = std::uint8_t(y * 255 / height);
      p[2] = std::uint8_t(128 + 100 * std::sin(x * 0.05) * std::cos(y * 0.03));
    }
  }
  return image;
}

// Standard deviation of channel `c` over the columns [x0, x1) of every row.
double channel_std(const std::uint8_t* rgb, int width, int height, int x0, int x1, int c) {
  double sum = 0, sq = 0;
  const double n = double(x1 - x0) * height;
  for (int y = 0; y < height; ++y) {
    for (int x = x0; x < x1; ++x) {
      const double v = rgb[(std::size_t(y) * width + x) * 3 + c];
      sum += v;
      sq += v * v;
    }
  }
  return std::sqrt(std::max(0.0, sq / n - (sum / n) * (sum / n)));
}

const std::uint8_t* pixel(const Image& image, int x, int y) {
  return &image.rgb[(std::size_t(y) * image.width + x) * 3];
}

bool dir_is_empty(const QString& path) {
  return fs::is_empty(path.toStdString());
}

}  // namespace

class tst_media : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void sizeRules_data();
  void sizeRules();
  void loadFormats_data();
  void loadFormats();
  void loadErrors_data();
  void loadErrors();
  void loadUnreadable();
  void resizeCropKeepsCentre();
  void resizeCropRejectsBadSize();
  void lanczosMatchesDefinition();
  void lanczosAntialiasesStripes();
  void exportRoundTrip_data();
  void exportRoundTrip();
  void exportRefusesOverwrite();
  void exportOverwritesWhenTold();
  void exportMissingFolder();
  void exportReadOnlyFolder();
  void exportDiskFull();
  void exportCancelLeavesNothing();
  void exportRejectsBadOptions_data();
  void exportRejectsBadOptions();
  void contactSheet();
  void probeMissingFile();
};

void tst_media::sizeRules_data() {
  QTest::addColumn<int>("width");
  QTest::addColumn<int>("height");
  QTest::addColumn<int>("area");
  QTest::addColumn<int>("want_w");
  QTest::addColumn<int>("want_h");
  QTest::newRow("16:9 -> 1248x704 (reference)") << 1920 << 1080 << kWanMaxArea << 1248 << 704;
  QTest::newRow("exact 1280x704") << 1280 << 704 << kWanMaxArea << 1280 << 704;
  QTest::newRow("portrait 704x1280") << 704 << 1280 << kWanMaxArea << 704 << 1280;
  QTest::newRow("portrait 9:16") << 1080 << 1920 << kWanMaxArea << 704 << 1248;
  QTest::newRow("square tie -> height first") << 1000 << 1000 << kWanMaxArea << 960 << 928;
  QTest::newRow("4:3") << 640 << 480 << kWanMaxArea << 1088 << 800;
  QTest::newRow("tiny area") << 300 << 200 << 160 * 96 << 160 << 96;
  QTest::newRow("non-positive") << 0 << 100 << kWanMaxArea << 0 << 0;
}

void tst_media::sizeRules() {
  QFETCH(int, width);
  QFETCH(int, height);
  QFETCH(int, area);
  QFETCH(int, want_w);
  QFETCH(int, want_h);
  const OutputSize got = best_output_size(width, height, area);
  QCOMPARE(got.width, want_w);
  QCOMPARE(got.height, want_h);
  if (want_w > 0) {
    QVERIFY(is_valid_output_size(got.width, got.height));
    QVERIFY(got.width * got.height <= area);
  }
}

void tst_media::loadFormats_data() {
  QTest::addColumn<QString>("extension");
  QTest::addColumn<double>("tolerance");
  QTest::newRow("png") << ".png" << 0.0;
  QTest::newRow("jpeg") << ".jpg" << 8.0;
  QTest::newRow("webp") << ".webp" << 8.0;
  QTest::newRow("webp lossless") << ".webp" << 0.0;
}

void tst_media::loadFormats() {
  QFETCH(QString, extension);
  QFETCH(double, tolerance);
  QTemporaryDir dir;
  const std::string path = dir.filePath("image" + extension).toStdString();
  const Image source = halves(64, 48);
  cv::Mat rgb(48, 64, CV_8UC3, const_cast<std::uint8_t*>(source.rgb.data())), bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<int> params;
  const bool lossless = QTest::currentDataTag() == QString("webp lossless");  // VP8L, else VP8
  if (extension == ".webp") params = {cv::IMWRITE_WEBP_QUALITY, lossless ? 101 : 100};
  if (extension == ".jpg") params = {cv::IMWRITE_JPEG_QUALITY, 98};
  QVERIFY(cv::imwrite(path, bgr, params));
  // The size comes from the header alone (what the pixel budget is checked against).
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::int64_t header_w = 0, header_h = 0;
  QVERIFY(image_header_size(bytes.data(), bytes.size(), &header_w, &header_h));
  QCOMPARE(header_w, std::int64_t(64));
  QCOMPARE(header_h, std::int64_t(48));
  Image loaded;
  std::string error;
  QVERIFY2(load_image(path, &loaded, &error), error.c_str());
  QCOMPARE(loaded.width, 64);
  QCOMPARE(loaded.height, 48);
  QVERIFY(mean_abs_diff(loaded.rgb, source.rgb) <= tolerance);
  // Channel order is RGB: the top-left pixel is red.
  QVERIFY(pixel(loaded, 2, 2)[0] > 200 && pixel(loaded, 2, 2)[2] < 60);
}

void tst_media::loadErrors_data() {
  QTest::addColumn<QString>("name");
  QTest::addColumn<QByteArray>("content");  // "<none>": do not create; "<dir>": a folder
  QTest::addColumn<QString>("expected");
  std::string png;
  QVERIFY(encode_png(halves(32, 32), &png, nullptr));
  const QByteArray valid(png.data(), int(png.size()));
  QByteArray corrupt = valid;
  for (int i = 40; i < corrupt.size(); ++i) corrupt[i] = char(0x5a);
  QTest::newRow("missing") << "missing.png" << QByteArray("<none>") << "does not exist";
  QTest::newRow("folder") << "folder.png" << QByteArray("<dir>") << "is a folder";
  QTest::newRow("empty") << "empty.png" << QByteArray() << "is empty";
  QTest::newRow("text") << "notes.png" << QByteArray("hello, not an image") << "not a PNG, JPEG or WebP";
  QTest::newRow("corrupt png") << "corrupt.png" << corrupt << "corrupt";
  QTest::newRow("truncated png") << "cut.png" << valid.left(valid.size() / 2) << "corrupt";
  QTest::newRow("bad jpeg") << "bad.jpg" << QByteArray("\xff\xd8\xff\xe0garbage", 11) << "corrupt";
  QTest::newRow("bad webp") << "bad.webp" << QByteArray("RIFF\x10\0\0\0WEBPVP8 zzzz", 20) << "corrupt";
}

void tst_media::loadErrors() {
  QFETCH(QString, name);
  QFETCH(QByteArray, content);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  const std::string path = dir.filePath(name).toStdString();
  if (content == "<dir>") fs::create_directory(path);
  else if (content != "<none>") write_bytes(path, content.toStdString());
  Image image;
  std::string error;
  QVERIFY(!load_image(path, &image, &error));
  QVERIFY2(error.find(expected.toStdString()) != std::string::npos, error.c_str());
  QVERIFY2(error.find(path) != std::string::npos, "the message names the file");
}

void tst_media::loadUnreadable() {
  if (::geteuid() == 0) QSKIP("running as root: permissions do not stop reads");
  QTemporaryDir dir;
  const std::string path = dir.filePath("locked.png").toStdString();
  QVERIFY(write_png(path, halves(8, 8), false, nullptr));
  ::chmod(path.c_str(), 0);
  Image image;
  std::string error;
  QVERIFY(!load_image(path, &image, &error));
  QVERIFY2(error.find("cannot be read") != std::string::npos, error.c_str());
}

void tst_media::resizeCropKeepsCentre() {
  // 200x100 red|blue, target 64x64: scaled to 128x64, the centred 64 columns are 32 red + 32 blue.
  Image out;
  std::string error;
  QVERIFY2(resize_center_crop(halves(200, 100), 64, 64, &out, &error), error.c_str());
  QCOMPARE(out.width, 64);
  QCOMPARE(out.height, 64);
  QVERIFY(pixel(out, 10, 32)[0] > 240 && pixel(out, 10, 32)[2] < 15);
  QVERIFY(pixel(out, 54, 32)[2] > 240 && pixel(out, 54, 32)[0] < 15);
  // A tall target crops the sides: 64x128 from 200x100 keeps only the middle 64 of 256 columns.
  QVERIFY(resize_center_crop(halves(200, 100), 64, 128, &out, &error));
  QCOMPARE(out.height, 128);
  QVERIFY(pixel(out, 5, 5)[0] > 240 && pixel(out, 58, 5)[2] > 240);
}

void tst_media::lanczosMatchesDefinition() {
  // 1600x1200 -> 640x480 (2.5x shrink, 16-tap kernels), and a 2x enlargement of a crop.
  const Image card = test_card(1600, 1200);
  const Image out = resize_lanczos(card, 640, 480);
  QCOMPARE(out.width, 640);
  QCOMPARE(out.height, 480);
  const std::vector<std::uint8_t> expected = lanczos_reference::resize(card.rgb, 1600, 1200, 640, 480);
  int worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(int(out.rgb[i]) - int(expected[i])));
  QVERIFY2(worst <= 1, std::to_string(worst).c_str());

  const Image small = test_card(90, 70);
  const Image up = resize_lanczos(small, 180, 105);
  const std::vector<std::uint8_t> expected_up = lanczos_reference::resize(small.rgb, 90, 70, 180, 105);
  worst = 0;
  for (std::size_t i = 0; i < expected_up.size(); ++i) worst = std::max(worst, std::abs(int(up.rgb[i]) - int(expected_up[i])));
  QVERIFY2(worst <= 1, std::to_string(worst).c_str());
  // resize_center_crop at the image's own aspect is this resize.
  Image fitted;
  std::string error;
  QVERIFY2(resize_center_crop(card, 640, 480, &fitted, &error), error.c_str());
  QVERIFY(fitted.rgb == out.rgb);
}

void tst_media::lanczosAntialiasesStripes() {
  // 1-pixel stripes average to flat grey when shrunk 2.5x; a fixed 8-tap Lanczos (OpenCV's
  // INTER_LANCZOS4) turns them into coarse moire bands instead.
  const Image card = test_card(1600, 1200);
  const Image out = resize_lanczos(card, 640, 480);
  const double ours = channel_std(out.rgb.data(), 640, 480, 20, 190, 0);
  cv::Mat opencv;
  cv::resize(cv::Mat(1200, 1600, CV_8UC3, const_cast<std::uint8_t*>(card.rgb.data())), opencv,
             cv::Size(640, 480), 0, 0, cv::INTER_LANCZOS4);
  const double aliased = channel_std(opencv.data, 640, 480, 20, 190, 0);
  qInfo("stripe std: antialiased %.2f, INTER_LANCZOS4 %.2f", ours, aliased);
  QVERIFY2(ours < 2.0, std::to_string(ours).c_str());
  QVERIFY2(aliased > 20.0, std::to_string(aliased).c_str());
}

void tst_media::resizeCropRejectsBadSize() {
  Image out;
  std::string error;
  QVERIFY(!resize_center_crop(halves(10, 10), 0, 32, &out, &error));
  QVERIFY(error.find("not positive") != std::string::npos);
  QVERIFY(!resize_center_crop(Image{}, 32, 32, &out, &error));
}

void tst_media::exportRoundTrip_data() {
  QTest::addColumn<VideoFormat>("format");
  QTest::addColumn<double>("fps");
  QTest::addColumn<QString>("codec");
  QTest::addColumn<double>("tolerance");
  QTest::newRow("mp4 24fps") << VideoFormat::Mp4 << 24.0 << "h264" << 3.0;
  QTest::newRow("mp4 30fps") << VideoFormat::Mp4 << 30.0 << "h264" << 3.0;
  QTest::newRow("webm 24fps") << VideoFormat::WebM << 24.0 << "vp9" << 3.0;
  QTest::newRow("png 12fps") << VideoFormat::PngSequence << 12.0 << "png" << 0.0;
}

void tst_media::exportRoundTrip() {
  QFETCH(VideoFormat, format);
  QFETCH(double, fps);
  QFETCH(QString, codec);
  QFETCH(double, tolerance);
  QTemporaryDir dir;
  const Frames clip = gradient_clip(9, 64, 48);
  ExportOptions options;
  options.path = dir.filePath(QString("out") + video_format_extension(format)).toStdString();
  options.format = format;
  options.fps = fps;
  options.crf = 8;
  options.workflow_json = R"({"format":"vidgraph-workflow","version":1,"note":"ünïcode ✓"})";
  int last_progress = 0;
  options.progress = [&](int done, int total) { last_progress = done; return total == 9; };
  std::string error;
  QVERIFY2(export_video(clip, options, &error), error.c_str());
  QCOMPARE(last_progress, 9);
  VideoInfo info;
  QVERIFY2(probe_video(options.path, &info, &error, true), error.c_str());
  QCOMPARE(info.frame_count, 9);
  QCOMPARE(info.width, 64);
  QCOMPARE(info.height, 48);
  QVERIFY2(std::abs(info.fps - fps) < 0.05, std::to_string(info.fps).c_str());
  QCOMPARE(QString::fromStdString(info.codec), codec);
  if (format != VideoFormat::PngSequence) QCOMPARE(info.pixel_format, std::string("yuv420p"));
  QCOMPARE(info.metadata["comment"], options.workflow_json);
  QCOMPARE(info.frames.count, 9);
  const double diff = mean_abs_diff(info.frames.rgb, clip.rgb);
  QVERIFY2(diff <= tolerance, std::to_string(diff).c_str());
  // Only the output remains: no temporary siblings.
  QCOMPARE(std::distance(fs::directory_iterator(dir.path().toStdString()), fs::directory_iterator()), 1L);
}

void tst_media::exportRefusesOverwrite() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("clip.mp4").toStdString();
  write_bytes(path, "precious");
  ExportOptions options;
  options.path = path;
  options.naming = Naming::Fail;
  std::string error;
  QVERIFY(!export_video(gradient_clip(2, 32, 32), options, &error));
  QVERIFY2(error.find("already exists") != std::string::npos, error.c_str());
  QCOMPARE(read_bytes(path), std::string("precious"));
}

void tst_media::exportOverwritesWhenTold() {
  QTemporaryDir dir;
  const std::string path = dir.filePath("clip.mp4").toStdString();
  ExportOptions options;
  options.path = path;
  std::string error;
  QVERIFY2(export_video(gradient_clip(2, 32, 32), options, &error), error.c_str());
  options.naming = Naming::Overwrite;  // replaces the earlier MP4 it wrote
  QVERIFY2(export_video(gradient_clip(3, 32, 32), options, &error), error.c_str());
  VideoInfo info;
  QVERIFY2(probe_video(path, &info, &error), error.c_str());
  QCOMPARE(info.frame_count, 3);
}

void tst_media::exportMissingFolder() {
  QTemporaryDir dir;
  ExportOptions options;
  options.path = dir.filePath("no/such/folder/clip.mp4").toStdString();
  std::string error;
  QVERIFY(!export_video(gradient_clip(2, 32, 32), options, &error));
  QVERIFY2(error.find("does not exist") != std::string::npos, error.c_str());
}

void tst_media::exportReadOnlyFolder() {
  QTemporaryDir dir;
  std::string folder = dir.filePath("locked").toStdString();
  if (::geteuid() == 0) {
    // Root ignores permission bits; a read-only mount still refuses.
    folder = "/sys";
    if (::access(folder.c_str(), W_OK) == 0) QSKIP("running as root and no read-only mount found");
  } else {
    fs::create_directory(folder);
    ::chmod(folder.c_str(), 0555);
  }
  ExportOptions options;
  options.path = folder + "/clip.mp4";
  std::string error;
  QVERIFY(!export_video(gradient_clip(2, 32, 32), options, &error));
  QVERIFY2(error.find("Cannot write to output folder") != std::string::npos, error.c_str());
  QVERIFY(!fs::exists(options.path));
}

void tst_media::exportDiskFull() {
  if (!fs::exists("/dev/full")) QSKIP("no /dev/full on this system");
  ExportOptions options;
  options.path = "/dev/full";
  std::string error;
  QVERIFY(!encode_video_file(gradient_clip(24, 64, 64), options, "/dev/full", &error));
  QVERIFY2(error.find("disk is full") != std::string::npos, error.c_str());
}

void tst_media::exportCancelLeavesNothing() {
  for (VideoFormat format : {VideoFormat::Mp4, VideoFormat::PngSequence}) {
    QTemporaryDir dir;
    ExportOptions options;
    options.format = format;
    options.path = dir.filePath("cancelled").toStdString() + video_format_extension(format);
    options.progress = [](int done, int) { return done < 3; };
    std::string error;
    bool cancelled = false;
    QVERIFY(!export_video(gradient_clip(8, 32, 32), options, &error, &cancelled));
    QVERIFY(cancelled);
    QVERIFY2(dir_is_empty(dir.path()), "a cancelled export leaves no file behind");
  }
}

void tst_media::exportRejectsBadOptions_data() {
  QTest::addColumn<int>("width");
  QTest::addColumn<double>("fps");
  QTest::addColumn<int>("crf");
  QTest::addColumn<QString>("expected");
  QTest::newRow("odd width") << 33 << 24.0 << 19 << "even width";
  QTest::newRow("zero fps") << 32 << 0.0 << 19 << "fps must be";
  QTest::newRow("huge fps") << 32 << 1000.0 << 19 << "fps must be";
  QTest::newRow("crf too high") << 32 << 24.0 << 52 << "crf must be";
  QTest::newRow("crf negative") << 32 << 24.0 << -1 << "crf must be";
}

void tst_media::exportRejectsBadOptions() {
  QFETCH(int, width);
  QFETCH(double, fps);
  QFETCH(int, crf);
  QFETCH(QString, expected);
  QTemporaryDir dir;
  ExportOptions options;
  options.path = dir.filePath("bad.mp4").toStdString();
  options.fps = fps;
  options.crf = crf;
  std::string error;
  QVERIFY(!export_video(gradient_clip(2, width, 32), options, &error));
  QVERIFY2(error.find(expected.toStdString()) != std::string::npos, error.c_str());
  QVERIFY(dir_is_empty(dir.path()));
}

void tst_media::contactSheet() {
  // 8 solid frames of grey level 30*i; 4 shown -> frames 0, 2, 5, 7.
  Frames clip{8, 40, 20, {}};
  clip.rgb.resize(clip.frame_bytes() * 8);
  for (int f = 0; f < 8; ++f) std::fill(clip.frame(f), clip.frame(f) + clip.frame_bytes(), 30 * f);
  ContactSheetOptions options;
  options.columns = 2;
  options.max_frames = 4;
  options.tile_width = 20;
  QTemporaryDir dir;
  const std::string path = dir.filePath("sheet.png").toStdString();
  std::string error;
  const OutputTarget target{path, Naming::Fail, OutputKind::Png};
  QVERIFY2(write_contact_sheet(clip, target, options, &error), error.c_str());
  Image sheet;
  QVERIFY2(load_image(path, &sheet, &error), error.c_str());
  QCOMPARE(sheet.width, 2 * 20 + 3 * 2);
  QCOMPARE(sheet.height, 2 * 10 + 3 * 2);
  QCOMPARE(int(pixel(sheet, 2 + 5, 2 + 5)[0]), 0);
  QCOMPARE(int(pixel(sheet, 24 + 5, 2 + 5)[0]), 60);
  QCOMPARE(int(pixel(sheet, 2 + 5, 14 + 5)[0]), 150);
  QCOMPARE(int(pixel(sheet, 24 + 5, 14 + 5)[0]), 210);
  QVERIFY(!write_contact_sheet(clip, target, options, &error));
  QVERIFY(error.find("already exists") != std::string::npos);
}

void tst_media::probeMissingFile() {
  VideoInfo info;
  std::string error;
  QVERIFY(!probe_video("/nonexistent/video.mp4", &info, &error));
  QVERIFY(error.find("does not exist") != std::string::npos);
}

QTEST_GUILESS_MAIN(tst_media)
#include "tst_media.moc"
