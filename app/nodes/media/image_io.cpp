// Implements image_io.h with OpenCV (BGR inside OpenCV, RGB at the boundary).
#include "image_io.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "nodes/output_path.h"

namespace vidgraph::nodes::media {
namespace fs = std::filesystem;

namespace {

enum class Format { Png, Jpeg, Webp, Unknown };

Format sniff_format(const unsigned char* b, std::size_t n) {
  static const unsigned char png[] = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  if (n >= 8 && std::memcmp(b, png, 8) == 0) return Format::Png;
  if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return Format::Jpeg;
  if (n >= 12 && std::memcmp(b, "RIFF", 4) == 0 && std::memcmp(b + 8, "WEBP", 4) == 0) {
    return Format::Webp;
  }
  return Format::Unknown;
}

const char* format_name(Format f) {
  switch (f) {
    case Format::Png: return "PNG";
    case Format::Jpeg: return "JPEG";
    case Format::Webp: return "WebP";
    case Format::Unknown: break;
  }
  return "unknown";
}

bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

Image image_from_bgr(const cv::Mat& bgr) {
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  Image out;
  out.width = rgb.cols;
  out.height = rgb.rows;
  out.rgb.resize(static_cast<std::size_t>(rgb.cols) * rgb.rows * 3);
  cv::Mat view(rgb.rows, rgb.cols, CV_8UC3, out.rgb.data());
  rgb.copyTo(view);
  return out;
}

// A read-only OpenCV view of an Image (no copy).
cv::Mat rgb_view(const Image& image) {
  return cv::Mat(image.height, image.width, CV_8UC3, const_cast<std::uint8_t*>(image.rgb.data()));
}

bool valid_image(const Image& image) {
  return !image.empty() &&
         image.rgb.size() == static_cast<std::size_t>(image.width) * image.height * 3;
}

}  // namespace

bool decode_image(const void* bytes, std::size_t size, const std::string& what, Image* out,
                  std::string* error) {
  const auto* b = static_cast<const unsigned char*>(bytes);
  if (size == 0) return fail(error, "Image '" + what + "' is empty (0 bytes); choose a valid image.");
  const Format format = sniff_format(b, size);
  if (format == Format::Unknown) {
    return fail(error, "Image '" + what + "' is not a PNG, JPEG or WebP file; convert it to one "
                       "of these formats.");
  }
  cv::Mat bgr;
  try {
    const cv::Mat buffer(1, static_cast<int>(size), CV_8UC1, const_cast<unsigned char*>(b));
    bgr = cv::imdecode(buffer, cv::IMREAD_COLOR);
  } catch (const cv::Exception& e) {
    bgr.release();
  }
  if (bgr.empty() || bgr.type() != CV_8UC3) {
    return fail(error, std::string("Image '") + what + "' looks like " + format_name(format) +
                           " but could not be decoded (the file is corrupt or truncated); "
                           "re-export it or choose another image.");
  }
  *out = image_from_bgr(bgr);
  return true;
}

bool load_image(const std::string& path, Image* out, std::string* error) {
  std::error_code ec;
  if (path.empty()) return fail(error, "No image path was given; set the image file.");
  if (!fs::exists(path, ec)) {
    return fail(error, "Image file '" + path + "' does not exist; check the path.");
  }
  if (fs::is_directory(path, ec)) {
    return fail(error, "Image path '" + path + "' is a folder, not a file; choose an image file.");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return fail(error, "Image file '" + path + "' cannot be read: " + std::strerror(errno) +
                           "; check its permissions.");
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  if (in.bad()) {
    return fail(error, "Reading image file '" + path + "' failed part-way; check the disk.");
  }
  return decode_image(bytes.data(), bytes.size(), path, out, error);
}

bool resize_center_crop(const Image& in, int width, int height, Image* out, std::string* error) {
  if (!valid_image(in)) return fail(error, "Cannot resize an empty or inconsistent image.");
  if (width <= 0 || height <= 0) {
    return fail(error, "Target size " + std::to_string(width) + "x" + std::to_string(height) +
                           " is not positive; choose a width and height above zero.");
  }
  const double scale = std::max(static_cast<double>(width) / in.width,
                                static_cast<double>(height) / in.height);
  const int scaled_w = std::max(width, static_cast<int>(std::lround(in.width * scale)));
  const int scaled_h = std::max(height, static_cast<int>(std::lround(in.height * scale)));
  cv::Mat scaled;
  if (scaled_w == in.width && scaled_h == in.height) {
    scaled = rgb_view(in);
  } else {
    cv::resize(rgb_view(in), scaled, cv::Size(scaled_w, scaled_h), 0, 0, cv::INTER_LANCZOS4);
  }
  const int x = (scaled_w - width) / 2;
  const int y = (scaled_h - height) / 2;
  Image result;
  result.width = width;
  result.height = height;
  result.rgb.resize(static_cast<std::size_t>(width) * height * 3);
  cv::Mat view(height, width, CV_8UC3, result.rgb.data());
  scaled(cv::Rect(x, y, width, height)).copyTo(view);
  *out = std::move(result);
  return true;
}

bool encode_png(const Image& image, std::string* png_bytes, std::string* error) {
  if (!valid_image(image)) return fail(error, "Cannot write an empty or inconsistent image as PNG.");
  cv::Mat bgr;
  cv::cvtColor(rgb_view(image), bgr, cv::COLOR_RGB2BGR);
  std::vector<unsigned char> buffer;
  bool ok = false;
  try {
    ok = cv::imencode(".png", bgr, buffer);
  } catch (const cv::Exception&) {
    ok = false;
  }
  if (!ok) return fail(error, "PNG encoding failed; the image may be too large.");
  png_bytes->assign(reinterpret_cast<const char*>(buffer.data()), buffer.size());
  return true;
}

bool write_png(const std::string& path, const Image& image, bool overwrite, std::string* error) {
  std::string bytes;
  if (!encode_png(image, &bytes, error)) return false;
  std::string message = write_file_atomically(path, bytes.data(), bytes.size(), overwrite);
  if (!message.empty()) return fail(error, std::move(message));
  return true;
}

}  // namespace vidgraph::nodes::media
