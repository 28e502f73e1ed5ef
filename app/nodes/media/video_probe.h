// Decode-back helper: reads an exported video (MP4/WebM through FFmpeg) or PNG-sequence folder
// and reports what a test or a user wants to check — frame count (by decoding every frame), size,
// fps, codec and the container metadata (the embedded workflow is `metadata["comment"]`;
// for a PNG sequence the keys of its metadata.json, the workflow under "comment" too).
// Optionally returns the decoded frames as uint8 RGB [F, H, W, 3].
#pragma once

#include <map>
#include <memory>
#include <string>

#include "nodes/frames.h"

namespace vidgraph::nodes::media {

struct VideoInfo {
  int frame_count = 0;
  int width = 0;
  int height = 0;
  double fps = 0.0;
  std::string codec;         // e.g. "h264", "vp9", "png"
  std::string pixel_format;  // e.g. "yuv420p", "rgb24"
  std::map<std::string, std::string> metadata;  // container tags, keys lower-cased
  Frames frames;                                // filled only when asked
};

// Fills `info`; returns false with a sentence naming the file on failure.
bool probe_video(const std::string& path, VideoInfo* info, std::string* error,
                 bool keep_frames = false);

// The same decode one frame at a time, so a caller holds one frame instead of the clip (vidgraph-run
// compare walks two videos in step). open() fills `info` as probe_video does, except frame_count
// (known only once every frame is decoded: count the next() calls) and frames.
class FrameStream {
 public:
  static std::unique_ptr<FrameStream> open(const std::string& path, VideoInfo* info, std::string* error);
  virtual ~FrameStream() = default;
  // The next frame as uint8 RGB into `image` (or only decoded and counted when null). False at the
  // end with `error` left empty, or on failure with a sentence naming the file in `error`.
  virtual bool next(Image* image, std::string* error) = 0;
};

}  // namespace vidgraph::nodes::media
