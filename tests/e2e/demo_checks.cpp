// Implements demo_checks.h.
#include "demo_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "models/train/demo_scenes.h"

namespace vidgraph::demo_checks {

namespace {

// A text-to-video shape clip as the scenes draw it: the background is the median of each frame's
// border, the shape the pixels more than 60 (RGB distance) away from it.
struct ShapeTrack {
  std::array<double, 3> background{};        // first frame's, RGB
  std::vector<std::array<double, 3>> shape;  // mean RGB of the shape's pixels, in each frame showing it
  double dx = 0;  // shape centroid, last quarter of the frames showing it minus the first quarter, in pixels
};

std::array<double, 3> border_median(const nodes::Frames& f, int i) {
  const std::uint8_t* p = f.frame(i);
  auto at = [&](int x, int y) { return p + (static_cast<std::size_t>(y) * f.width + x) * 3; };
  std::array<std::vector<int>, 3> border;
  for (int x = 0; x < f.width; ++x) {
    for (int y : {0, f.height - 1}) for (int c = 0; c < 3; ++c) border[c].push_back(at(x, y)[c]);
  }
  for (int y = 0; y < f.height; ++y) {
    for (int x : {0, f.width - 1}) for (int c = 0; c < 3; ++c) border[c].push_back(at(x, y)[c]);
  }
  std::array<double, 3> bg{};
  for (int c = 0; c < 3; ++c) {
    std::nth_element(border[c].begin(), border[c].begin() + border[c].size() / 2, border[c].end());
    bg[c] = border[c][border[c].size() / 2];
  }
  return bg;
}

ShapeTrack track_shape(const nodes::Frames& f) {
  ShapeTrack track;
  std::vector<double> centroids;  // x, of each frame showing the shape
  for (int i = 0; i < f.count; ++i) {
    const std::array<double, 3> bg = border_median(f, i);
    if (i == 0) track.background = bg;
    const std::uint8_t* p = f.frame(i);
    double sum_x = 0;
    std::array<double, 3> sum_rgb{};
    int n = 0;
    for (int y = 0; y < f.height; ++y) {
      for (int x = 0; x < f.width; ++x) {
        const std::uint8_t* q = p + (static_cast<std::size_t>(y) * f.width + x) * 3;
        if (std::hypot(q[0] - bg[0], q[1] - bg[1], q[2] - bg[2]) <= 60) continue;
        sum_x += x, ++n;
        for (int c = 0; c < 3; ++c) sum_rgb[c] += q[c];
      }
    }
    if (n <= 20) continue;
    centroids.push_back(sum_x / n);
    track.shape.push_back({sum_rgb[0] / n, sum_rgb[1] / n, sum_rgb[2] / n});
  }
  const size_t quarter = std::max<size_t>(1, centroids.size() / 4);
  double first = 0, last = 0;
  int n_first = 0, n_last = 0;
  for (size_t k = 0; k < centroids.size(); ++k) {
    if (k < quarter) first += centroids[k], ++n_first;
    if (k >= centroids.size() - quarter) last += centroids[k], ++n_last;
  }
  if (n_first > 0 && n_last > 0) track.dx = last / n_last - first / n_first;
  return track;
}

// The name of the colour in `colours` nearest to `rgb`.
std::string nearest(const std::vector<train::SceneColour>& colours, const std::array<double, 3>& rgb) {
  std::string best;
  double best_distance = std::numeric_limits<double>::infinity();
  for (const train::SceneColour& c : colours) {
    const double d = std::hypot(rgb[0] - c.rgb[0], rgb[1] - c.rgb[1], rgb[2] - c.rgb[2]);
    if (d < best_distance) best_distance = d, best = c.name;
  }
  return best;
}

// The longest name of `colours` that `text` contains after `prefix` (or anywhere when empty).
std::string named_in(const std::string& text, const std::vector<train::SceneColour>& colours,
                     const std::string& before = "", const std::string& after = "") {
  std::string found;
  for (const train::SceneColour& c : colours) {
    const std::string phrase = before + c.name + after;
    if (text.find(phrase) != std::string::npos && std::string(c.name).size() > found.size()) found = c.name;
  }
  return found;
}

}  // namespace

std::optional<DemoPrompt> parse_demo_prompt(const std::string& prompt) {
  DemoPrompt p;
  p.colour = named_in(prompt, train::scene_shape_colours(), "a ", " ");
  if (p.colour.empty()) p.colour = named_in(prompt, train::scene_shape_colours(), "an ", " ");  // "an orange"
  p.background = named_in(prompt, train::scene_backgrounds(), "on a ", " background");
  p.direction = prompt.find("moving left") != std::string::npos    ? -1
                : prompt.find("moving right") != std::string::npos ? +1
                                                                   : 0;
  if (p.colour.empty() || p.background.empty() || p.direction == 0) return std::nullopt;
  return p;
}

DemoCheck check_video(const nodes::Frames& video, const DemoPrompt& prompt) {
  DemoCheck check;
  const ShapeTrack track = track_shape(video);
  check.frames_with_shape = static_cast<int>(track.shape.size());
  for (const auto& rgb : track.shape) {
    const std::string seen = nearest(train::scene_shape_colours(), rgb);
    check.colours += (check.colours.empty() ? "" : " ") + seen;
    check.named += seen == prompt.colour;
  }
  check.background = nearest(train::scene_backgrounds(), track.background);
  check.dx = track.dx;
  if (check.background != prompt.background) check.failed.push_back("a " + check.background + " background");
  if (check.frames_with_shape < 12) check.failed.push_back("no shape in most frames");
  if (2 * check.named <= check.frames_with_shape) check.failed.push_back("the shape is not " + prompt.colour + " in most frames");
  if (track.dx * prompt.direction <= 10) check.failed.push_back("the shape did not move the named way");
  return check;
}

}  // namespace vidgraph::demo_checks
