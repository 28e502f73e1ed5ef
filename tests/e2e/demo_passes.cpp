// vidgraph-demo-passes: the demo model's text-to-video checks (demo_checks.h) over every run of
// run-history folders — a sweep's folder holds one run per prompt and seed — printed as JSON:
//   {"FOLDER": {"passed": N, "checked": M, "videos": [{"prompt", "seed", "file", "passed",
//    "failed": [...], "background", "frames_with_shape", "named", "dx"}, ...]}, ...}
// A run is checked when it succeeded, its Prompt node's text is a left/right shape prompt of the
// demo vocabulary and it wrote an MP4; the others are counted in "skipped".
// Usage: vidgraph-demo-passes FOLDER [FOLDER...]   (exit 0; 2 when a folder has no history)
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "demo_checks.h"
#include "engine/run_history.h"
#include "nodes/media/clip_reader.h"

using nlohmann::json;
using namespace vidgraph;

namespace {

// The value of param `param` of the first node of `type` in a history entry's workflow, or null.
json param_of(const json& entry, const char* type, const char* param) {
  const json nodes = entry.value("workflow", json::object()).value("nodes", json::array());
  for (const json& n : nodes) {
    if (n.value("type", "") == type) return n.value("params", json::object()).value(param, json(nullptr));
  }
  return nullptr;
}

std::string mp4_of(const json& entry) {
  for (const json& f : entry.value("files", json::array())) {
    const std::string path = f.value("path", "");
    if (path.size() > 4 && path.compare(path.size() - 4, 4, ".mp4") == 0) return path;
  }
  return {};
}

bool read_video(const std::string& path, nodes::Frames* frames, std::string* error) {
  nodes::media::ClipInfo info;
  if (!nodes::media::probe_clip(path, &info, error)) return false;
  nodes::media::ClipRead read;
  read.count = info.frame_count;
  return nodes::media::read_clip(path, read, frames, error);
}

json check_folder(const std::string& folder) {
  auto history = engine::read_run_history(folder);
  if (!history.ok()) return json{{"error", history.error().message}};
  json videos = json::array();
  int passed = 0, skipped = 0;
  for (const json& run : history->runs) {
    const json prompt = param_of(run, "Prompt", "positive");
    const auto wanted = prompt.is_string() ? demo_checks::parse_demo_prompt(prompt.get<std::string>()) : std::nullopt;
    const std::string file = mp4_of(run);
    nodes::Frames frames;
    std::string error;
    if (run.value("status", "") != "succeeded" || !wanted || file.empty() || !read_video(file, &frames, &error)) {
      if (!error.empty()) std::fprintf(stderr, "warning: %s\n", error.c_str());
      ++skipped;
      continue;
    }
    const demo_checks::DemoCheck c = demo_checks::check_video(frames, *wanted);
    passed += c.passed();
    videos.push_back({{"prompt", prompt},
                      {"seed", param_of(run, "WanSampler", "seed")},
                      {"file", file},
                      {"passed", c.passed()},
                      {"failed", c.failed},
                      {"background", c.background},
                      {"frames_with_shape", c.frames_with_shape},
                      {"named", c.named},
                      {"dx", c.dx}});
  }
  return json{{"passed", passed}, {"checked", videos.size()}, {"skipped", skipped}, {"videos", videos}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: vidgraph-demo-passes FOLDER [FOLDER...]\n"
                         "Checks the demo text-to-video runs in each folder's run history; prints JSON.\n");
    return 2;
  }
  json out = json::object();
  int code = 0;
  for (int i = 1; i < argc; ++i) {
    out[argv[i]] = check_folder(argv[i]);
    if (out[argv[i]].contains("error") || out[argv[i]]["checked"] == 0) code = 2;
  }
  std::printf("%s\n", out.dump(2).c_str());
  return code;
}
