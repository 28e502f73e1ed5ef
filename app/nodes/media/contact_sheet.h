// Contact sheet: a grid of evenly spaced frames of a clip in one PNG, for Preview Video and the
// CLI's "write a contact sheet" option. Frames in: uint8 RGB [F, H, W, 3].
#pragma once

#include <string>

#include "nodes/frames.h"
#include "nodes/output_path.h"

namespace vidgraph::nodes::media {

struct ContactSheetOptions {
  int columns = 4;        // tiles per row, >= 1
  int max_frames = 16;    // frames shown, evenly spaced from first to last, >= 1
  int tile_width = 256;   // each tile's width in pixels (height keeps the aspect), >= 8
  int gap = 2;            // pixels between tiles (dark grey)
};

// The sheet as an image. Returns false with a sentence on bad input.
bool make_contact_sheet(const Frames& frames, const ContactSheetOptions& options, Image* out,
                        std::string* error);

// Builds the sheet and writes it as PNG at `target` (its kind must be Png) through a temporary
// file published by the target's naming; `written` (optional) receives the path published.
bool write_contact_sheet(const Frames& frames, const OutputTarget& target,
                         const ContactSheetOptions& options, std::string* error,
                         std::string* written = nullptr);

}  // namespace vidgraph::nodes::media
