// Fixtures of the dataset suite: clips written with our FFmpeg encoder (coloured squares moving on
// a background), captions, and a NodeContext that records progress and log lines.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/node_context.h"
#include "engine/node_type.h"
#include "nodes/frames.h"
#include "nodes/media/video_export.h"

namespace vidgraph::dataset_test {

struct Recorder {
  std::vector<std::pair<std::int64_t, std::int64_t>> progress;
  std::vector<std::string> progress_text;
  std::vector<std::string> warnings;
  std::vector<std::string> infos;
  std::vector<engine::Value> previews;
  int cancel_after_progress = -1;  // cancel once this many progress events were seen
};

inline engine::NodeContext context(const engine::NodeType& type, const nlohmann::json& params,
                                   engine::ValueMap inputs, const std::string& output_dir,
                                   Recorder* recorder) {
  engine::NodeContext::Hooks hooks;
  hooks.progress = [recorder](std::int64_t v, std::int64_t m, const std::string& text, const engine::ProgressMetrics&) {
    recorder->progress.emplace_back(v, m);
    recorder->progress_text.push_back(text);
  };
  hooks.cancelled = [recorder] {
    return recorder->cancel_after_progress >= 0 &&
           static_cast<int>(recorder->progress.size()) >= recorder->cancel_after_progress;
  };
  hooks.log = [recorder](engine::LogLevel level, const std::string& line) {
    (level == engine::LogLevel::Warn ? recorder->warnings : recorder->infos).push_back(line);
  };
  hooks.preview = [recorder](const engine::Value& v) { recorder->previews.push_back(v); };
  engine::RunOptions options;
  options.output_dir = output_dir;
  return engine::NodeContext("n1", type.name, std::move(inputs), type.params_with_defaults(params),
                             options, hooks);
}

// `count` frames of a `color` square moving over a grey background.
inline nodes::Frames moving_square(int count, int width, int height, std::uint8_t color[3], int speed) {
  nodes::Frames f{count, width, height, {}};
  f.rgb.assign(f.frame_bytes() * count, 90);
  const int side = height / 3;
  for (int i = 0; i < count; ++i) {
    const int x0 = (i * speed) % (width - side), y0 = height / 3;
    std::uint8_t* frame = f.frame(i);
    for (int y = y0; y < y0 + side; ++y) {
      for (int x = x0; x < x0 + side; ++x) {
        for (int c = 0; c < 3; ++c) frame[(y * width + x) * 3 + c] = color[c];
      }
    }
  }
  return f;
}

// Writes a clip (MP4, WebM or a PNG folder by `format`); "" or the exporter's error.
inline std::string write_clip(const std::string& path, int frames, nodes::media::VideoFormat format =
                                                                       nodes::media::VideoFormat::Mp4,
                              int speed = 3) {
  std::uint8_t red[3] = {220, 40, 30};
  nodes::media::ExportOptions options;
  options.path = path;
  options.format = format;
  options.naming = nodes::Naming::Fail;
  std::string error;
  nodes::media::export_video(moving_square(frames, 64, 48, red, speed), options, &error);
  return error;
}

inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace vidgraph::dataset_test
