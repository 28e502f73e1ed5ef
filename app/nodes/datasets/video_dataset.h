// Internal: the DATASET value made by Load Video Dataset, and the folder scan behind it.
// A dataset folder holds clips at its top level: video files (.mp4, .webm, .mkv, .mov) and
// folders of PNG frames, each with a caption (dataset_captions.h). Hidden entries are ignored.
// The scan probes every clip cheaply (clip_reader.h: header and packet count, no pixel decode) and
// checks its caption; a clip that fails is reported by name.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vidgraph::nodes {

struct DatasetClip {
  std::string path;     // absolute path of the file or PNG folder
  std::string name;     // its name inside the dataset folder
  std::string caption;  // trimmed, UTF-8, not empty
  int frame_count = 0;
  int width = 0;
  int height = 0;
  double fps = 0.0;
};

struct VideoDataset {
  std::string folder;
  std::vector<DatasetClip> clips;  // sorted by name
};

struct DatasetScan {
  VideoDataset dataset;
  std::vector<std::string> bad;  // "NAME: reason", one per rejected clip, in name order
  std::string error;             // a problem with the folder itself ("" when none)
};

// Lists and checks the clips of `folder`; clips with fewer than `min_frames` frames are bad.
// `cancelled` (optional) is polled between clips.
DatasetScan scan_video_dataset(const std::string& folder, int min_frames,
                               const std::function<bool()>& cancelled = {});

// "name=size:mtime;" for every top-level entry of `folder` and every .png inside its subfolders:
// changes when a clip or caption is added, removed, renamed or edited.
std::string dataset_folder_fingerprint(const std::string& folder);

}  // namespace vidgraph::nodes
