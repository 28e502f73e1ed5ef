// The workflow Vidgraph embeds in what it exports (video_export.h), read back without decoding a
// frame: an MP4/WebM's `comment` tag, or a PNG-sequence folder's metadata.json "workflow".
//
// Contract: `path` is a video file or a PNG-sequence folder (or its metadata.json). Returns true
// with the workflow text; false with a sentence naming the file when it cannot be read or holds no
// workflow. Cheap: only the container header (or the small JSON file) is read.
#pragma once

#include <string>

namespace vidgraph::nodes::media {

bool read_embedded_workflow(const std::string& path, std::string* workflow_json, std::string* error);

// True when `path` may hold an embedded workflow: a .mp4/.webm/.mov/.mkv file, a folder with a
// metadata.json, or such a metadata.json (by name; the read says whether it really does).
bool may_embed_workflow(const std::string& path);

}  // namespace vidgraph::nodes::media
