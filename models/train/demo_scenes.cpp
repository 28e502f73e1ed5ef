#include "models/train/demo_scenes.h"

#include <cmath>
#include <stdexcept>

#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/floor.h>
#include <ATen/ops/grid_sampler.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>

namespace vidgraph::train {

namespace {

constexpr double kPi = 3.14159265358979323846;
constexpr double kPanPixelsPerFrame = 1.0;
constexpr double kZoomEnd = 0.7;  // the view's side at the zoomed-in end, as a share of the start's

const char* motion_words(SceneMotion m, SceneKind kind) {
  switch (m) {
    case SceneMotion::Left: return kind == SceneKind::Shape ? "moving left" : "pans left";
    case SceneMotion::Right: return kind == SceneKind::Shape ? "moving right" : "pans right";
    case SceneMotion::Up: return kind == SceneKind::Shape ? "moving up" : "pans up";
    case SceneMotion::Down: return kind == SceneKind::Shape ? "moving down" : "pans down";
    case SceneMotion::Grow: return "growing";
    case SceneMotion::Shrink: return "shrinking";
    case SceneMotion::Bounce: return "bouncing";
    case SceneMotion::ZoomIn: return "zooms in on";
    case SceneMotion::ZoomOut: return "zooms out from";
  }
  return "";
}

// A uniform double in [0, 1) from one draw (24 bits, exact arithmetic).
double unit(std::mt19937& random) { return static_cast<double>(random() >> 8) / 16777216.0; }
int pick(std::mt19937& random, size_t n) { return static_cast<int>(random() % n); }

at::Tensor colour_of(const SceneColour& c) {
  return at::tensor(std::vector<float>{c.rgb[0] / 255.0f, c.rgb[1] / 255.0f, c.rgb[2] / 255.0f}).view({3, 1, 1});
}

// Clip pixel centres (x, y) of frame t -> picture coordinates (u, v) in clip pixels of the
// starting view, as the camera motion moves and scales the view.
std::pair<at::Tensor, at::Tensor> camera_coords(const ScenePlan& p, const SceneOptions& o, int t) {
  const auto f = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor x = at::arange(o.width, f).view({1, o.width}).expand({o.height, o.width});
  const at::Tensor y = at::arange(o.height, f).view({o.height, 1}).expand({o.height, o.width});
  const double a = o.frames > 1 ? static_cast<double>(t) / (o.frames - 1) : 0.0;
  const double shift = kPanPixelsPerFrame * t;
  switch (p.motion) {
    case SceneMotion::Left: return {x - shift, y};
    case SceneMotion::Right: return {x + shift, y};
    case SceneMotion::Up: return {x, y - shift};
    case SceneMotion::Down: return {x, y + shift};
    default: break;
  }
  const double s = p.motion == SceneMotion::ZoomIn ? 1.0 - (1.0 - kZoomEnd) * a : kZoomEnd + (1.0 - kZoomEnd) * a;
  const double cx = (o.width - 1) / 2.0, cy = (o.height - 1) / 2.0;
  return {(x - cx) * s + cx, (y - cy) * s + cy};
}

// Picture coordinates -> the image crop, bilinear, mirrored at the image's edges. [3, H, W] in 0..1.
at::Tensor sample_image(const ScenePlan& p, const SceneOptions& o, const at::Tensor& u, const at::Tensor& v) {
  const at::Tensor& rgb = o.images.at(p.image).rgb;
  const double iw = static_cast<double>(rgb.size(1)), ih = static_cast<double>(rgb.size(0));
  const double aspect = static_cast<double>(o.width) / o.height;
  double cw = iw, ch = iw / aspect;
  if (ch > ih) {
    ch = ih;
    cw = ih * aspect;
  }
  cw *= p.crop_scale;
  ch *= p.crop_scale;
  const double x0 = (iw - cw) * p.crop_x, y0 = (ih - ch) * p.crop_y;
  const at::Tensor gx = ((u + 0.5) * (cw / o.width) + x0) * (2.0 / iw) - 1.0;
  const at::Tensor gy = ((v + 0.5) * (ch / o.height) + y0) * (2.0 / ih) - 1.0;
  const at::Tensor grid = at::stack({gx, gy}, -1).unsqueeze(0);  // [1, H, W, 2]
  const at::Tensor image = rgb.permute({2, 0, 1}).unsqueeze(0).to(at::kFloat) / 255.0;
  // interpolation 0 = bilinear, padding 2 = reflection
  return at::grid_sampler(image, grid, 0, 2, false).squeeze(0);
}

// A two-tone pattern of the plan's colour over picture coordinates: [3, H, W] in 0..1.
at::Tensor sample_pattern(const ScenePlan& p, const SceneOptions& o, const at::Tensor& u, const at::Tensor& v) {
  const double cell = o.height / 6.0;
  at::Tensor mix;  // 1 = the colour, 0 = its dark tone
  switch (p.picture) {
    case ScenePicture::Checkered:
      mix = (at::floor(u / cell) + at::floor(v / cell)).remainder(2.0);
      break;
    case ScenePicture::Striped:
      mix = at::floor((u + v) / cell).remainder(2.0);
      break;
    default:  // wavy: smooth bands, so pans and zooms move visible structure
      mix = ((u * (2 * kPi / (3 * cell))).sin() * 0.5 + (v * (2 * kPi / (2 * cell)) + u * 0.05).cos() * 0.5) * 0.5 + 0.5;
      break;
  }
  const at::Tensor colour = colour_of(scene_shape_colours()[p.colour]);
  return colour * (0.2 + 0.8 * mix.unsqueeze(0));
}

// One frame of a shape scene: [3, H, W] in 0..1.
at::Tensor shape_frame(const ScenePlan& p, const SceneOptions& o, int t) {
  const double a = o.frames > 1 ? static_cast<double>(t) / (o.frames - 1) : 0.0;
  const double w = o.width, h = o.height;
  double cx = w / 2, cy = h / 2, r = h / 6;
  switch (p.motion) {
    case SceneMotion::Right: cx = w * (0.25 + 0.5 * a); break;
    case SceneMotion::Left: cx = w * (0.75 - 0.5 * a); break;
    case SceneMotion::Down: cy = h * (0.25 + 0.5 * a); break;
    case SceneMotion::Up: cy = h * (0.75 - 0.5 * a); break;
    case SceneMotion::Grow: r = h * (1.0 / 12 + a / 4); break;
    case SceneMotion::Shrink: r = h * (1.0 / 3 - a / 4); break;
    default:  // bounce twice on the floor at 0.8 h
      r = h / 8;
      cy = h * 0.8 - r - h * 0.45 * std::abs(std::sin(2 * kPi * a));
      break;
  }
  const auto f = at::TensorOptions().dtype(at::kFloat);
  const at::Tensor dx = (at::arange(o.width, f) + 0.5 - cx).view({1, o.width});
  const at::Tensor dy = (at::arange(o.height, f) + 0.5 - cy).view({o.height, 1});
  const at::Tensor inside = p.circle ? (dx * dx + dy * dy) <= r * r : (dx.abs() <= r) & (dy.abs() <= r);
  return at::where(inside.unsqueeze(0), colour_of(scene_shape_colours()[p.colour]),
                   colour_of(scene_backgrounds()[p.background]));
}

}  // namespace

const std::vector<SceneColour>& scene_shape_colours() {
  static const std::vector<SceneColour> colours = {{"red", {220, 40, 30}},    {"yellow", {240, 210, 40}},
                                                   {"white", {245, 245, 245}}, {"orange", {245, 140, 20}},
                                                   {"green", {40, 190, 60}},   {"blue", {40, 90, 230}}};
  return colours;
}

const std::vector<SceneColour>& scene_backgrounds() {
  static const std::vector<SceneColour> colours = {
      {"dark blue", {20, 30, 90}}, {"black", {10, 10, 10}}, {"grey", {110, 110, 110}}};
  return colours;
}

std::string ScenePlan::caption() const {
  if (kind == SceneKind::Shape) {
    return std::string("a ") + scene_shape_colours()[colour].name + (circle ? " circle " : " square ") +
           motion_words(motion, kind) + " on a " + scene_backgrounds()[background].name + " background";
  }
  const bool zoom = motion == SceneMotion::ZoomIn || motion == SceneMotion::ZoomOut;
  std::string subject;
  if (picture == ScenePicture::Image) {
    subject = "the " + image_name;
  } else {
    const char* pattern = picture == ScenePicture::Checkered ? " checkered" : picture == ScenePicture::Striped ? " striped" : " wavy";
    subject = std::string("a ") + scene_shape_colours()[colour].name + pattern + " pattern";
  }
  return std::string("the camera ") + motion_words(motion, kind) + (zoom ? " " : " over ") + subject;
}

ScenePlan plan_scene(std::mt19937& random, const SceneOptions& o) {
  if (o.frames < 1 || o.width < 8 || o.height < 8) {
    throw std::invalid_argument("demo scenes need at least 1 frame of 8x8 pixels");
  }
  if (!o.shapes && !o.camera) throw std::invalid_argument("demo scenes: both shapes and camera are off");
  for (const SceneImage& image : o.images) {
    if (image.rgb.dim() != 3 || image.rgb.size(2) != 3 || image.rgb.scalar_type() != at::kByte) {
      throw std::invalid_argument("demo scene image '" + image.name + "' is not uint8 [H, W, 3]");
    }
  }
  ScenePlan p;
  p.kind = o.shapes && (!o.camera || random() % 2 == 0) ? SceneKind::Shape : SceneKind::Camera;
  p.colour = pick(random, scene_shape_colours().size());
  if (p.kind == SceneKind::Shape) {
    p.circle = random() % 2 == 1;
    p.background = pick(random, scene_backgrounds().size());
    p.motion = static_cast<SceneMotion>(pick(random, 7));  // Left .. Bounce
    return p;
  }
  static const SceneMotion camera[] = {SceneMotion::Left, SceneMotion::Right, SceneMotion::Up,
                                       SceneMotion::Down, SceneMotion::ZoomIn, SceneMotion::ZoomOut};
  p.motion = camera[pick(random, std::size(camera))];
  // Half of the camera scenes look at an image when there are images.
  if (!o.images.empty() && random() % 2 == 0) {
    p.picture = ScenePicture::Image;
    p.image = pick(random, o.images.size());
    p.image_name = o.images[p.image].name;
    if (unit(random) >= o.full_view) {
      p.crop_scale = 0.5 + 0.5 * unit(random);
      p.crop_x = unit(random);
      p.crop_y = unit(random);
    }
  } else {
    p.picture = static_cast<ScenePicture>(1 + pick(random, 3));
  }
  return p;
}

at::Tensor render_scene(const ScenePlan& p, const SceneOptions& o) {
  std::vector<at::Tensor> frames;
  for (int t = 0; t < o.frames; ++t) {
    at::Tensor frame;
    if (p.kind == SceneKind::Shape) {
      frame = shape_frame(p, o, t);
    } else {
      const auto [u, v] = camera_coords(p, o, t);
      frame = p.picture == ScenePicture::Image ? sample_image(p, o, u, v) : sample_pattern(p, o, u, v);
    }
    frames.push_back(frame);
  }
  // [T, 3, H, W] in 0..1 -> uint8 [T, H, W, 3], rounded
  return (at::stack(frames, 0) * 255.0 + 0.5).clamp(0, 255).to(at::kByte).permute({0, 2, 3, 1}).contiguous();
}

at::Tensor scene_video(const at::Tensor& frames) {
  return frames.permute({3, 0, 1, 2}).to(at::kFloat) / 127.5 - 1.0;
}

}  // namespace vidgraph::train
