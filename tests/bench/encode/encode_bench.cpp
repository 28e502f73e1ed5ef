// vidgraph-encode-bench [FRAMES HEIGHT WIDTH [REPEATS]]: times Export Video's MP4 encode (H.264,
// CRF 19, the shipped workflows' setting) of a synthetic video, by default 121 frames of 704x1280
// (the 5B's full size). The frames move (a drifting gradient with a moving square), so the encoder
// does a real video's motion search, not a still's. Prints JSON: median, min and max seconds, the
// file size and the CPU's thread count. Writes into a temporary folder, removed at the end.
#include "nodes/media/video_export.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

vidgraph::nodes::Frames moving_frames(int count, int height, int width) {
  vidgraph::nodes::Frames f;
  f.count = count, f.height = height, f.width = width;
  f.rgb.resize(f.frame_bytes() * size_t(count));
  for (int t = 0; t < count; ++t) {
    std::uint8_t* px = f.frame(t);
    const int sx = (t * 9) % (width - 96), sy = (t * 5) % (height - 96);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x, px += 3) {
        const bool square = x >= sx && x < sx + 96 && y >= sy && y < sy + 96;
        px[0] = square ? 230 : std::uint8_t((x + 3 * t) * 255 / (width + 3 * count));
        px[1] = square ? 40 : std::uint8_t((y + 2 * t) * 255 / (height + 2 * count));
        px[2] = std::uint8_t(((x ^ y) + t) & 0x3f) + 96;
      }
    }
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const int frames = argc > 1 ? std::atoi(argv[1]) : 121, height = argc > 2 ? std::atoi(argv[2]) : 704;
  const int width = argc > 3 ? std::atoi(argv[3]) : 1280, repeats = argc > 4 ? std::atoi(argv[4]) : 3;
  if (frames < 1 || height < 96 || width < 96 || repeats < 1 || height % 2 || width % 2) {
    std::fprintf(stderr, "usage: vidgraph-encode-bench [FRAMES HEIGHT WIDTH [REPEATS]] (even sides >= 96)\n");
    return 1;
  }
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("vidgraph-encode-bench-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const vidgraph::nodes::Frames video = moving_frames(frames, height, width);
  vidgraph::nodes::media::ExportOptions options;  // MP4, CRF 19, 24 fps: Export Video's defaults
  std::vector<double> seconds;
  std::uintmax_t bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    const fs::path out = dir / ("run" + std::to_string(r) + ".mp4");
    options.path = out.string();
    std::string error;
    const auto t0 = std::chrono::steady_clock::now();
    if (!vidgraph::nodes::media::encode_video_file(video, options, out.string(), &error)) {
      std::fprintf(stderr, "vidgraph-encode-bench: %s\n", error.c_str());
      fs::remove_all(dir);
      return 3;
    }
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    bytes = fs::file_size(out);
  }
  fs::remove_all(dir);
  std::vector<double> sorted = seconds;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  const nlohmann::json j{{"encode", "mp4 h264 crf 19 yuv420p, 24 fps"},
                         {"frames", frames}, {"height", height}, {"width", width},
                         {"median_s", median}, {"min_s", sorted.front()}, {"max_s", sorted.back()},
                         {"runs", n}, {"file_mb", double(bytes) / 1e6},
                         {"cpu_threads", std::thread::hardware_concurrency()}};
  std::printf("%s\n", j.dump(2).c_str());
  return 0;
}
