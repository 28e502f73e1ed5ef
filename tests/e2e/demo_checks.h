// The demo model's text-to-video checks, shared by the e2e_demo suite and vidgraph-demo-passes: a
// prompt of the demo scenes' vocabulary ("a red circle moving right on a dark blue background")
// passes when its video shows that background (nearest named colour of the first frame's border),
// a shape in at least 12 frames, in the named colour in most of them, moving more than 10 px the
// named way (its centroid, last quarter of those frames against the first).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "nodes/frames.h"

namespace vidgraph::demo_checks {

struct DemoPrompt {
  std::string colour;      // a name of train::scene_shape_colours()
  std::string background;  // a name of train::scene_backgrounds()
  int direction = 0;       // -1 left, +1 right
};

// What the prompt asks for; nullopt when it is not a left/right shape prompt of the vocabulary.
std::optional<DemoPrompt> parse_demo_prompt(const std::string& prompt);

struct DemoCheck {
  std::string background;      // the one seen
  int frames_with_shape = 0;
  int named = 0;               // frames whose shape is the named colour
  std::string colours;         // the nearest named colour of each frame showing the shape
  double dx = 0;               // pixels
  std::vector<std::string> failed;  // a sentence per failed check; empty = passed
  bool passed() const { return failed.empty(); }
};

DemoCheck check_video(const nodes::Frames& video, const DemoPrompt& prompt);

}  // namespace vidgraph::demo_checks
