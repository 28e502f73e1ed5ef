// Video export for the Export Video node: MP4 (H.264, yuv420p, CRF), WebM (VP9, CRF) through
// FFmpeg's libraries, or a PNG sequence folder. Contract:
// - input frames are vidgraph::nodes::Frames (uint8 RGB [F, H, W, 3]), or a FrameSource that makes
//   them one at a time (a long video need not be held); MP4/WebM need even sides;
// - the workflow JSON is embedded: as the container's `comment` tag (MP4 and WebM), or as
//   `metadata.json` beside the frames of a PNG sequence;
// - output is written to a temporary sibling in the target folder and published by its naming
//   policy (output_path.h), so a failed or cancelled export leaves no partial output and nothing
//   the writer did not produce is ever replaced;
// - failures return false with a sentence in `error` (unwritable folder and full disk named).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "nodes/frames.h"
#include "nodes/output_path.h"

namespace vidgraph::nodes::media {

enum class VideoFormat { Mp4, WebM, PngSequence };

// "mp4", "webm", "png" (the node's enum choices). Returns false for anything else.
bool parse_video_format(const std::string& name, VideoFormat* out);
const char* video_format_name(VideoFormat format);
// What a writer of `format` produces, for output_path.h's naming rules.
OutputKind video_output_kind(VideoFormat format);
// The file extension for a format (".mp4", ".webm", "" for a PNG sequence folder).
const char* video_format_extension(VideoFormat format);

struct ExportOptions {
  std::string path;  // output file (MP4/WebM) or folder (PNG sequence)
  VideoFormat format = VideoFormat::Mp4;
  double fps = 24.0;       // (0, 240]
  int crf = 19;            // H.264: 0..51, VP9: 0..63; lower is better quality
  Naming naming = Naming::Increment;  // what to do when the output exists
  std::string workflow_json;  // embedded in the output's metadata; may be empty
  // Called after each frame with (frames done, total); returning false cancels the export.
  std::function<bool(int, int)> progress;
};

// `count` frames of width x height, asked for in order 0, 1, ...: `frame(i, error)` returns frame i's
// RGB bytes (height * width * 3), valid until the next call, or nullptr with a sentence in `error`
// (the export then fails with it).
struct FrameSource {
  int count = 0, width = 0, height = 0;
  std::function<const std::uint8_t*(int index, std::string* error)> frame;

  static FrameSource of(const Frames& frames);  // frames must outlive the source
};

// Exports the frames. On cancel returns false with `*cancelled = true` (when given). `written`
// receives the path published (another name than options.path under Naming::Increment).
bool export_video(const FrameSource& frames, const ExportOptions& options, std::string* error,
                  bool* cancelled = nullptr, std::string* written = nullptr);
bool export_video(const Frames& frames, const ExportOptions& options, std::string* error,
                  bool* cancelled = nullptr, std::string* written = nullptr);

// Encodes straight to `write_path` (no temporary, no overwrite check): the step export_video runs
// on its temporary file. Exposed so tests can aim it at /dev/full.
bool encode_video_file(const FrameSource& frames, const ExportOptions& options,
                       const std::string& write_path, std::string* error, bool* cancelled = nullptr);
bool encode_video_file(const Frames& frames, const ExportOptions& options,
                       const std::string& write_path, std::string* error, bool* cancelled = nullptr);

// "" or why `frames` cannot be exported whatever the options (empty, or a buffer of the wrong size).
std::string frames_problem(const Frames& frames);

// Checks the options and frames before any file is touched; "" when fine.
std::string validate_export(const FrameSource& frames, const ExportOptions& options);
std::string validate_export(const Frames& frames, const ExportOptions& options);

}  // namespace vidgraph::nodes::media
