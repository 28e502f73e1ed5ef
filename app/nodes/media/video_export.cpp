// Implements the placement half of video_export.h: option checks, the temporary-then-rename
// dance and the PNG-sequence writer. The FFmpeg encoding lives in video_encoder.cpp.
#include "nodes/media/video_export.h"

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "nodes/media/image_io.h"
#include "nodes/output_path.h"

namespace vidgraph::nodes::media {
namespace fs = std::filesystem;

namespace {

bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

std::string frame_file_name(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "frame_%06d.png", index + 1);
  return name;
}

// Writes every frame and metadata.json into the fresh folder `dir` (our temporary).
bool write_png_sequence(const FrameSource& frames, const ExportOptions& options, const fs::path& dir,
                        std::string* error, bool* cancelled) {
  const std::size_t frame_bytes = std::size_t(frames.width) * frames.height * 3;
  for (int i = 0; i < frames.count; ++i) {
    const std::uint8_t* rgb = frames.frame(i, error);
    if (rgb == nullptr) return false;
    Image image;
    image.width = frames.width;
    image.height = frames.height;
    image.rgb.assign(rgb, rgb + frame_bytes);
    std::string png;
    if (!encode_png(image, &png, error)) return false;
    const std::string message = write_new_file((dir / frame_file_name(i)).string(), png.data(), png.size());
    if (!message.empty()) return fail(error, message);
    if (options.progress && !options.progress(i + 1, frames.count)) {
      if (cancelled) *cancelled = true;
      return fail(error, "Export cancelled.");
    }
  }
  const nlohmann::json meta = {{"format", "vidgraph-png-sequence"}, {"frames", frames.count},
                               {"width", frames.width},          {"height", frames.height},
                               {"fps", options.fps},             {"workflow", options.workflow_json}};
  const std::string text = meta.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string message = write_new_file((dir / "metadata.json").string(), text.data(), text.size());
  if (!message.empty()) return fail(error, message);
  return true;
}

}  // namespace

namespace {

// Each format's param name, output kind and file extension: the one place they are written.
struct VideoFormatRow {
  VideoFormat format;
  const char* name;
  OutputKind kind;
  const char* extension;
};
constexpr VideoFormatRow kVideoFormats[] = {{VideoFormat::Mp4, "mp4", OutputKind::Mp4, ".mp4"},
                                            {VideoFormat::WebM, "webm", OutputKind::WebM, ".webm"},
                                            {VideoFormat::PngSequence, "png", OutputKind::PngSequence, ""}};

const VideoFormatRow& row_of(VideoFormat format) {
  for (const VideoFormatRow& row : kVideoFormats) {
    if (row.format == format) return row;
  }
  return kVideoFormats[0];
}

}  // namespace

bool parse_video_format(const std::string& name, VideoFormat* out) {
  for (const VideoFormatRow& row : kVideoFormats) {
    if (name == row.name) {
      *out = row.format;
      return true;
    }
  }
  return false;
}

const char* video_format_name(VideoFormat format) { return row_of(format).name; }

OutputKind video_output_kind(VideoFormat format) { return row_of(format).kind; }

const char* video_format_extension(VideoFormat format) { return row_of(format).extension; }

FrameSource FrameSource::of(const Frames& frames) {
  FrameSource s{frames.count, frames.width, frames.height, nullptr};
  s.frame = [&frames](int index, std::string*) { return frames.frame(index); };
  return s;
}

std::string frames_problem(const Frames& frames) {
  return frames.consistent() ? "" : "There are no frames to export (or the frame buffer does not match its size); "
                                    "check the node feeding Export Video.";
}

std::string validate_export(const Frames& frames, const ExportOptions& options) {
  std::string problem = frames_problem(frames);
  return problem.empty() ? validate_export(FrameSource::of(frames), options) : problem;
}

std::string validate_export(const FrameSource& frames, const ExportOptions& options) {
  if (frames.count <= 0 || frames.width <= 0 || frames.height <= 0 || !frames.frame) {
    return "There are no frames to export; check the node feeding Export Video.";
  }
  if (!(options.fps > 0.0 && options.fps <= 240.0)) {
    return "fps must be above 0 and at most 240 (got " + std::to_string(options.fps) + ").";
  }
  const int max_crf = options.format == VideoFormat::WebM ? 63 : 51;
  if (options.format != VideoFormat::PngSequence && (options.crf < 0 || options.crf > max_crf)) {
    return "crf must be between 0 and " + std::to_string(max_crf) + " for " +
           video_format_name(options.format) + " (got " + std::to_string(options.crf) + ").";
  }
  if (options.format != VideoFormat::PngSequence &&
      (frames.width % 2 != 0 || frames.height % 2 != 0)) {
    return "MP4 and WebM need an even width and height (got " + std::to_string(frames.width) +
           "x" + std::to_string(frames.height) + "); resize the frames or export a PNG sequence.";
  }
  return {};
}

bool export_video(const Frames& frames, const ExportOptions& options, std::string* error, bool* cancelled,
                  std::string* written) {
  if (cancelled) *cancelled = false;
  // The source's export checks the options; only the buffer is the Frames' own.
  if (std::string problem = frames_problem(frames); !problem.empty()) return fail(error, std::move(problem));
  return export_video(FrameSource::of(frames), options, error, cancelled, written);
}

bool export_video(const FrameSource& frames, const ExportOptions& options, std::string* error,
                  bool* cancelled, std::string* written) {
  if (cancelled) *cancelled = false;
  if (std::string message = validate_export(frames, options); !message.empty()) {
    return fail(error, std::move(message));
  }
  const OutputTarget target{options.path, options.naming, video_output_kind(options.format)};
  if (std::string message = check_output_target(target); !message.empty()) {
    return fail(error, std::move(message));
  }
  remove_stale_temporaries(options.path);
  const std::string temp = temporary_sibling(options.path);
  bool ok = false;
  if (options.format == VideoFormat::PngSequence) {
    if (::mkdir(temp.c_str(), 0755) != 0) {
      return fail(error, "Could not create a folder in '" + fs::path(temp).parent_path().string() +
                             "': " + describe_errno(errno) + ".");
    }
    ok = write_png_sequence(frames, options, temp, error, cancelled);
  } else {
    ok = encode_video_file(frames, options, temp, error, cancelled);
  }
  if (ok) {
    Published published = publish_output(temp, target);
    if (published.error.empty()) {
      if (written) *written = published.path;
      return true;
    }
    if (error) *error = std::move(published.error);
  }
  remove_temporary(temp);
  return false;
}

}  // namespace vidgraph::nodes::media
