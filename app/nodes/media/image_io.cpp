// Implements image_io.h with OpenCV (BGR inside OpenCV, RGB at the boundary).
#include "image_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "nodes/input_file.h"
#include "nodes/output_path.h"
#include "image_resize.h"

namespace vidgraph::nodes::media {

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

std::uint32_t be16(const unsigned char* p) { return (std::uint32_t(p[0]) << 8) | p[1]; }
std::uint32_t be32(const unsigned char* p) { return (be16(p) << 16) | be16(p + 2); }
std::uint32_t le16(const unsigned char* p) { return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8); }
std::uint32_t le24(const unsigned char* p) { return le16(p) | (std::uint32_t(p[2]) << 16); }

// PNG: the IHDR chunk comes first (signature, length, "IHDR", width, height; big-endian).
bool png_size(const unsigned char* b, std::size_t n, std::int64_t* w, std::int64_t* h) {
  if (n < 24 || std::memcmp(b + 12, "IHDR", 4) != 0) return false;
  *w = be32(b + 16);
  *h = be32(b + 20);
  return true;
}

// JPEG: walk the marker segments up to the first start-of-frame (SOF0..SOF15 but DHT, JPG, DAC).
bool jpeg_size(const unsigned char* b, std::size_t n, std::int64_t* w, std::int64_t* h) {
  std::size_t i = 2;
  while (i + 4 <= n) {
    if (b[i] != 0xff) return false;
    const unsigned marker = b[i + 1];
    if (marker == 0xff) { ++i; continue; }  // fill byte
    if (marker == 0x01 || (marker >= 0xd0 && marker <= 0xd7)) { i += 2; continue; }  // no length
    if (marker == 0xd9 || marker == 0xda) return false;  // end of image or scan before any SOF
    const std::size_t len = be16(b + i + 2);
    const bool sof = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 && marker != 0xcc;
    if (sof) {
      if (len < 7 || i + 9 > n) return false;
      *h = be16(b + i + 5);
      *w = be16(b + i + 7);
      return true;
    }
    i += 2 + len;
  }
  return false;
}

// WebP: the first chunk after "RIFF....WEBP" is VP8 (lossy), VP8L (lossless) or VP8X (extended).
bool webp_size(const unsigned char* b, std::size_t n, std::int64_t* w, std::int64_t* h) {
  if (n < 30) return false;
  const unsigned char* d = b + 20;  // chunk payload
  if (std::memcmp(b + 12, "VP8 ", 4) == 0) {
    if (d[3] != 0x9d || d[4] != 0x01 || d[5] != 0x2a) return false;
    *w = le16(d + 6) & 0x3fff;
    *h = le16(d + 8) & 0x3fff;
    return true;
  }
  if (std::memcmp(b + 12, "VP8L", 4) == 0) {
    if (d[0] != 0x2f) return false;
    const std::uint32_t bits = le16(d + 1) | (std::uint32_t(le16(d + 3)) << 16);
    *w = (bits & 0x3fff) + 1;
    *h = ((bits >> 14) & 0x3fff) + 1;
    return true;
  }
  if (std::memcmp(b + 12, "VP8X", 4) == 0) {
    *w = std::int64_t(le24(d + 4)) + 1;
    *h = std::int64_t(le24(d + 7)) + 1;
    return true;
  }
  return false;
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

// Reads the regular file `path` whole. Opened with O_NONBLOCK and checked with fstat on the open
// descriptor, so a FIFO or device swapped in after a caller's stat() can neither block nor stream.
bool read_regular_file(const std::string& path, std::vector<unsigned char>* bytes, std::string* error) {
  const std::string shown = printable_text(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return fail(error, "Image file '" + shown + "' does not exist; check the path.");
    return fail(error, "Image file '" + shown + "' cannot be read: " + std::strerror(err) +
                           "; check its permissions.");
  }
  struct stat st {};
  std::string message;
  if (::fstat(fd, &st) != 0) {
    message = "Image file '" + shown + "' cannot be inspected: " + std::strerror(errno) + ".";
  } else if (S_ISDIR(st.st_mode)) {
    message = "Image path '" + shown + "' is a folder, not a file; choose an image file.";
  } else if (!S_ISREG(st.st_mode)) {
    message = "Image path '" + shown + "' is " + file_kind_name(st.st_mode) +
              ", not a regular file; choose an image file (PNG, JPEG or WebP).";
  } else if (st.st_size > kMaxImageFileBytes) {
    message = "Image file '" + shown + "' is " + std::to_string(st.st_size >> 20) +
              " MiB, more than the 1024 MiB that Load Image reads; scale the image down.";
  }
  bytes->resize(message.empty() ? std::size_t(st.st_size) : 0);
  std::size_t done = 0;
  while (message.empty() && done < bytes->size()) {
    const ssize_t got = ::read(fd, bytes->data() + done, bytes->size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) message = "Reading image file '" + shown + "' failed: " + std::strerror(errno) + ".";
    if (got <= 0) break;  // a file that shrank while being read is decoded as far as it goes
    done += std::size_t(got);
  }
  ::close(fd);
  bytes->resize(done);
  if (!message.empty()) return fail(error, std::move(message));
  return true;
}

}  // namespace

bool image_header_size(const void* bytes, std::size_t size, std::int64_t* width, std::int64_t* height) {
  const auto* b = static_cast<const unsigned char*>(bytes);
  switch (sniff_format(b, size)) {
    case Format::Png: return png_size(b, size, width, height);
    case Format::Jpeg: return jpeg_size(b, size, width, height);
    case Format::Webp: return webp_size(b, size, width, height);
    case Format::Unknown: break;
  }
  return false;
}

bool decode_image(const void* bytes, std::size_t size, const std::string& what, Image* out,
                  std::string* error) {
  const auto* b = static_cast<const unsigned char*>(bytes);
  if (size == 0) return fail(error, "Image '" + what + "' is empty (0 bytes); choose a valid image.");
  const std::string shown = printable_text(what);
  const Format format = sniff_format(b, size);
  if (format == Format::Unknown) {
    return fail(error, "Image '" + shown + "' is not a PNG, JPEG or WebP file; convert it to one "
                       "of these formats.");
  }
  std::int64_t width = 0, height = 0;
  if (!image_header_size(b, size, &width, &height) || width <= 0 || height <= 0) {
    return fail(error, std::string("Image '") + shown + "' looks like " + format_name(format) +
                           " but its header gives no valid size (the file is corrupt or truncated); "
                           "re-export it or choose another image.");
  }
  if (width * height > kMaxImagePixels) {
    char mp[32];
    std::snprintf(mp, sizeof(mp), "%.1f", double(width) * double(height) / 1e6);
    return fail(error, "Image '" + shown + "' is " + std::to_string(width) + "x" +
                           std::to_string(height) + " (" + mp + " megapixels), more than the " +
                           kMaxImagePixelsText + " Load Image decodes; scale it down first (the "
                           "model uses about 0.9 megapixels).");
  }
  cv::Mat bgr;
  try {
    const cv::Mat buffer(1, static_cast<int>(size), CV_8UC1, const_cast<unsigned char*>(b));
    bgr = cv::imdecode(buffer, cv::IMREAD_COLOR);
  } catch (const cv::Exception&) {  // reported below as a sentence, not OpenCV's text
    bgr.release();
  }
  if (bgr.empty() || bgr.type() != CV_8UC3) {
    return fail(error, std::string("Image '") + shown + "' looks like " + format_name(format) +
                           " but could not be decoded (the file is corrupt or truncated); "
                           "re-export it or choose another image.");
  }
  *out = image_from_bgr(bgr);
  return true;
}

bool load_image(const std::string& path, Image* out, std::string* error) {
  if (path.empty()) return fail(error, "No image path was given; set the image file.");
  std::vector<unsigned char> bytes;
  if (!read_regular_file(path, &bytes, error)) return false;
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
  // Python's round() (ties to even), as the reference sizes the image before its crop.
  const int scaled_w = std::max(width, static_cast<int>(std::nearbyint(in.width * scale)));
  const int scaled_h = std::max(height, static_cast<int>(std::nearbyint(in.height * scale)));
  Image resized;
  try {
    if (scaled_w != in.width || scaled_h != in.height) resized = resize_lanczos(in, scaled_w, scaled_h);
  } catch (const std::bad_alloc&) {
    return fail(error, "Resizing the " + std::to_string(in.width) + "x" + std::to_string(in.height) +
                           " image to " + std::to_string(scaled_w) + "x" + std::to_string(scaled_h) +
                           " ran out of memory; choose a smaller size.");
  }
  const cv::Mat scaled = resized.empty() ? rgb_view(in) : rgb_view(resized);
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
  const OutputTarget target{path, overwrite ? Naming::Overwrite : Naming::Fail, OutputKind::Png};
  Published published = write_file_atomically(target, bytes.data(), bytes.size());
  if (!published.error.empty()) return fail(error, std::move(published.error));
  return true;
}

}  // namespace vidgraph::nodes::media
