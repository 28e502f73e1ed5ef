// Still-image input and output for the nodes (OpenCV imgcodecs/imgproc behind the scenes).
// Contract: images are vidgraph::nodes::Image (uint8 RGB, [H, W, 3]); functions return false and
// fill `error` with a sentence naming the file and what to do; they never throw on bad input.
// Readable formats: PNG, JPEG, WebP (recognised by their bytes, not by the file name).
// Limits (so that no input can hang the process or take unbounded memory): only regular files are
// read (never a FIFO or a device), files up to kMaxImageFileBytes, and images up to
// kMaxImagePixels, checked from the file's header before any pixel is decoded.
#pragma once

#include <cstdint>
#include <string>

#include "nodes/frames.h"

namespace vidgraph::nodes::media {

// 100 megapixels: admits photos of today's cameras (a 24 MP JPEG, a 12000x8000 panorama); a bigger
// image would take > 300 MB per RGB copy and is refused with a message saying so.
constexpr std::int64_t kMaxImagePixels = 100'000'000;
constexpr const char* kMaxImagePixelsText = "100 megapixels";
// Image files larger than 1 GiB are refused before they are read (a 100 MP 16-bit PNG is ~600 MB).
constexpr std::int64_t kMaxImageFileBytes = std::int64_t(1) << 30;

// Width and height from the header of a PNG (IHDR), JPEG (first SOF) or WebP (VP8/VP8L/VP8X)
// file without decoding pixels; false when the bytes hold no such header.
bool image_header_size(const void* bytes, std::size_t size, std::int64_t* width, std::int64_t* height);

// Reads an image file into RGB. Missing, unreadable, non-regular (FIFO, device), too large,
// unsupported and corrupt files each get their own message.
bool load_image(const std::string& path, Image* out, std::string* error);

// Decodes an in-memory PNG/JPEG/WebP file, refusing (before decoding) images whose header says
// more than kMaxImagePixels. `what` names the source in error messages.
bool decode_image(const void* bytes, std::size_t size, const std::string& what, Image* out,
                  std::string* error);

// Scales `in` by max(width / in.width, height / in.height) (sides rounded as Python rounds) with
// PIL's antialiased Lanczos (image_resize.h), then cuts the
// centred `width` x `height` window (the reference's TI2V image path). Both sides must be > 0.
bool resize_center_crop(const Image& in, int width, int height, Image* out, std::string* error);

// Encodes RGB as PNG bytes.
bool encode_png(const Image& image, std::string* png_bytes, std::string* error);

// Writes a PNG through a temporary file and a rename; refuses to replace `path` unless `overwrite`
// (and then replaces only a PNG file).
bool write_png(const std::string& path, const Image& image, bool overwrite, std::string* error);

}  // namespace vidgraph::nodes::media
