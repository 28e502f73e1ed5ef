// Still-image input and output for the nodes (OpenCV imgcodecs/imgproc behind the scenes).
// Contract: images are vidgraph::nodes::Image (uint8 RGB, [H, W, 3]); functions return false and
// fill `error` with a sentence naming the file and what to do; they never throw on bad input.
// Readable formats: PNG, JPEG, WebP (recognised by their bytes, not by the file name).
#pragma once

#include <string>

#include "nodes/frames.h"

namespace vidgraph::nodes::media {

// Reads an image file into RGB. Missing, unreadable, unsupported and corrupt files each get their
// own message.
bool load_image(const std::string& path, Image* out, std::string* error);

// Decodes an in-memory PNG/JPEG/WebP file. `what` names the source in error messages.
bool decode_image(const void* bytes, std::size_t size, const std::string& what, Image* out,
                  std::string* error);

// Scales `in` by max(width / in.width, height / in.height) with Lanczos filtering, then cuts the
// centred `width` x `height` window (the reference's TI2V image path). Both sides must be > 0.
bool resize_center_crop(const Image& in, int width, int height, Image* out, std::string* error);

// Encodes RGB as PNG bytes.
bool encode_png(const Image& image, std::string* png_bytes, std::string* error);

// Writes a PNG through a temporary file and a rename; refuses to replace `path` unless `overwrite`.
bool write_png(const std::string& path, const Image& image, bool overwrite, std::string* error);

}  // namespace vidgraph::nodes::media
