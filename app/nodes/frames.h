// Plain frame containers shared by the built-in nodes, the media helpers and the GUI.
// Contract: pixels are uint8 RGB, interleaved, row-major; a clip is laid out [F, H, W, 3]
// (frame-major, then rows, then columns, then channels). No LibTorch or OpenCV types here, so
// any layer (the GUI included) may include this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vidgraph::nodes {

// One RGB image, [H, W, 3] uint8.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // width * height * 3 bytes

  bool empty() const { return width <= 0 || height <= 0 || rgb.empty(); }
  std::size_t byte_size() const { return rgb.size(); }
};

// A clip of RGB frames, [F, H, W, 3] uint8.
struct Frames {
  int count = 0;
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // count * height * width * 3 bytes

  bool empty() const { return count <= 0 || width <= 0 || height <= 0; }
  std::size_t frame_bytes() const { return static_cast<std::size_t>(width) * height * 3; }
  const std::uint8_t* frame(int index) const { return rgb.data() + frame_bytes() * index; }
  std::uint8_t* frame(int index) { return rgb.data() + frame_bytes() * index; }
  // True when the buffer holds exactly count * height * width * 3 bytes.
  bool consistent() const {
    return !empty() && rgb.size() == frame_bytes() * static_cast<std::size_t>(count);
  }
};

}  // namespace vidgraph::nodes
