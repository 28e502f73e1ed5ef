// Implements video_dataset.h.
#include "nodes/datasets/video_dataset.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "nodes/common/node_util.h"
#include "nodes/datasets/dataset_captions.h"
#include "nodes/media/clip_reader.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

namespace {

bool is_video_name(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".mp4" || ext == ".webm" || ext == ".mkv" || ext == ".mov";
}

bool holds_png(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".png") return true;
  }
  return false;
}

// The clip candidates of the folder's top level, sorted by name.
std::vector<fs::path> clip_candidates(const fs::path& folder) {
  std::vector<fs::path> clips;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.') continue;
    if (entry.is_directory(ec) ? holds_png(entry.path()) : is_video_name(entry.path())) {
      clips.push_back(entry.path());
    }
  }
  std::sort(clips.begin(), clips.end());
  return clips;
}

}  // namespace

DatasetScan scan_video_dataset(const std::string& folder, int min_frames,
                               const std::function<bool()>& cancelled) {
  DatasetScan scan;
  scan.dataset.folder = folder;
  std::error_code ec;
  if (!fs::is_directory(folder, ec)) {
    scan.error = "Dataset folder '" + folder + "' does not exist or is not a folder.";
    return scan;
  }
  CaptionManifest manifest;
  scan.error = read_caption_manifest(folder, &manifest);
  if (!scan.error.empty()) return scan;
  for (const fs::path& path : clip_candidates(folder)) {
    if (cancelled && cancelled()) {
      scan.error = "Scanning the dataset was cancelled.";
      return scan;
    }
    DatasetClip clip;
    clip.path = fs::absolute(path, ec).string();
    clip.name = path.filename().string();
    std::string problem;
    media::ClipInfo info;
    if (!find_caption(folder, clip.name, manifest, &clip.caption, &problem)) {
      scan.bad.push_back(clip.name + ": " + problem + ".");
    } else if (!media::probe_clip(clip.path, &info, &problem)) {
      scan.bad.push_back(clip.name + ": " + problem);
    } else if (info.frame_count < min_frames) {
      scan.bad.push_back(clip.name + ": it has " + std::to_string(info.frame_count) + " frames, fewer "
                         "than the " + std::to_string(min_frames) + " that `frames` asks for.");
    } else {
      clip.frame_count = info.frame_count;
      clip.width = info.width;
      clip.height = info.height;
      clip.fps = info.fps;
      scan.dataset.clips.push_back(std::move(clip));
    }
  }
  return scan;
}

std::string dataset_folder_fingerprint(const std::string& folder) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    files.push_back(entry.path().string());
    if (!entry.is_directory(ec)) continue;
    for (const auto& inner : fs::directory_iterator(entry.path(), ec)) {
      if (inner.path().extension() == ".png") files.push_back(inner.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files_fingerprint(files);
}

}  // namespace vidgraph::nodes
