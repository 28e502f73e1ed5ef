// Internal: the captions of a training dataset folder. A clip's caption comes from, in order:
//   1. `<stem>.txt` beside the clip (`walk.mp4` -> `walk.txt`, a PNG folder `walk/` -> `walk.txt`);
//   2. the folder's manifest: `captions.jsonl` (one `{"file": "walk.mp4", "caption": "..."}` per
//      line) or `captions.csv` (`file,caption` rows; an optional `file,caption` header; RFC 4180
//      quotes for captions holding commas or quotes). A folder with both manifests is refused.
// Captions are trimmed; they must be valid UTF-8, not empty, and at most kMaxCaptionBytes.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace vidgraph::nodes {

inline constexpr std::size_t kMaxCaptionBytes = 64 * 1024;

struct CaptionManifest {
  std::string path;                          // "" = the folder has none
  std::map<std::string, std::string> captions;  // clip file name -> caption (untrimmed)
};

// Reads the folder's manifest, if any. "" or a sentence naming the manifest and its bad line.
std::string read_caption_manifest(const std::string& folder, CaptionManifest* out);

// The caption of clip `name` (its file or folder name inside `folder`): "" into `error` and the
// caption into `caption`, or a reason (missing, empty, not UTF-8, too long) naming where it looked.
bool find_caption(const std::string& folder, const std::string& name, const CaptionManifest& manifest,
                  std::string* caption, std::string* error);

}  // namespace vidgraph::nodes
