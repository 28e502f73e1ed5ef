// Procedural demo scenes: short seeded clips whose caption says what moves and how, from one small
// vocabulary shared by the demo-model training (vidgraph-train-demo) and Make Demo Dataset.
//
// Two kinds of scene:
// - shapes: "a red circle moving right on a dark blue background" — a square or circle of one of
//   five colours on a plain background, moving left/right/up/down, growing, shrinking or bouncing;
// - camera: "the camera pans left over the landscape", "the camera zooms in on a green checkered
//   pattern" — a pan (1 px per frame) or zoom (x1 <-> x0.7) over a picture: a crop of one of the
//   given images (named in the caption), or a procedural checkered, striped or gradient pattern.
//   The view is mirrored at the picture's edges when a pan leaves it.
// A plan is drawn from a std::mt19937 with explicit arithmetic on its outputs (same seed, same
// plans and pixels on every platform). Frames: uint8 RGB [T, H, W, 3].
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vidgraph::train {

struct SceneColour {
  const char* name;
  std::uint8_t rgb[3];
};

// The colours of shapes and patterns, and the plain backgrounds of shape scenes.
const std::vector<SceneColour>& scene_shape_colours();
const std::vector<SceneColour>& scene_backgrounds();

struct SceneImage {
  std::string name;  // as the caption says it: "landscape" -> "... over the landscape"
  at::Tensor rgb;    // uint8 [H, W, 3], ideally at least the clip's size
};

struct SceneOptions {
  int frames = 25, width = 160, height = 96;
  bool shapes = true;  // shape scenes
  bool camera = true;  // camera scenes (over patterns, and over `images` when given)
  std::vector<SceneImage> images;
  double full_view = 0.34;  // share of image camera scenes that start on the whole image (no crop)
};

enum class SceneKind { Shape, Camera };
enum class SceneMotion { Left, Right, Up, Down, Grow, Shrink, Bounce, ZoomIn, ZoomOut };
enum class ScenePicture { Image, Checkered, Striped, Gradient };

struct ScenePlan {
  SceneKind kind = SceneKind::Shape;
  SceneMotion motion = SceneMotion::Right;
  bool circle = false;       // shape: circle or square
  int colour = 0;            // index into scene_shape_colours (shape, pattern)
  int background = 0;        // index into scene_backgrounds (shape scenes)
  ScenePicture picture = ScenePicture::Checkered;
  int image = 0;             // index into SceneOptions::images (picture Image)
  double crop_scale = 1.0;   // image crop: side as a share of the largest crop of the clip's aspect
  double crop_x = 0.5, crop_y = 0.5;  // crop centre's position within the free room, 0..1
  std::string image_name;    // copied from the options, for the caption
  std::string caption() const;
};

// Draws the next plan; throws std::invalid_argument when the options allow no scene or sizes are bad.
ScenePlan plan_scene(std::mt19937& random, const SceneOptions& options);

// The clip of `plan`: uint8 [frames, height, width, 3].
at::Tensor render_scene(const ScenePlan& plan, const SceneOptions& options);

// uint8 [T, H, W, 3] -> float [3, T, H, W] in [-1, 1] (the VAE's video layout without the batch).
at::Tensor scene_video(const at::Tensor& frames);

}  // namespace vidgraph::train
