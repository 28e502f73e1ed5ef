// Dataset clips for training: a video file (MP4, WebM or anything else FFmpeg demuxes) or a folder
// of PNG frames (sorted by name). Two steps, so a dataset is checked cheaply before it is decoded:
//   probe_clip  reads the container header and counts the video packets (one per frame for H.264
//               and VP9) without decoding pixels; for a PNG folder it counts the files and reads the
//               first frame's size from its header;
//   read_clip   decodes frames first, first + stride, ... until `count` frames are kept, and stops
//               decoding there (a long clip is never decoded whole).
// Functions return false with a sentence naming the clip in `error`; they never throw on bad input.
#pragma once

#include <functional>
#include <string>

#include "nodes/frames.h"

namespace vidgraph::nodes::media {

struct ClipInfo {
  int frame_count = 0;
  int width = 0;
  int height = 0;
  double fps = 0.0;
  bool png_sequence = false;
};

bool probe_clip(const std::string& path, ClipInfo* info, std::string* error);

struct ClipRead {
  int first = 0;   // index of the first frame kept
  int stride = 1;  // keep every stride-th frame after it
  int count = 1;   // frames to keep
  std::function<bool()> cancelled;  // optional: polled per decoded frame
};

// Fills `out` with exactly read.count frames, or returns false (too few frames names the counts).
bool read_clip(const std::string& path, const ClipRead& read, Frames* out, std::string* error);

}  // namespace vidgraph::nodes::media
