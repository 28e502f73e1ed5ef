// Internal: content keys of Encode Dataset's cached samples. A key changes when anything that
// shapes the sample changes: the clip's bytes (every frame file of a PNG folder, with its name),
// the caption, the encoding settings, and the identity of the VAE and text encoder files (path,
// size, mtime). xxHash64, written as 16 hex digits: the sample's file name in the cache folder.
#pragma once

#include <string>

namespace vidgraph::nodes {

// Hashes the clip's content; "" when a file of it cannot be read (the message goes to `error`).
std::string clip_content_hash(const std::string& clip_path, std::string* error);

// The sample key over the parts above (each already a string).
std::string sample_key(const std::string& content_hash, const std::string& caption,
                       const std::string& settings_json, const std::string& vae_identity,
                       const std::string& encoder_identity);

// "path|size:mtime" of a model file (or folder), "" for an in-memory model.
std::string model_file_identity(const std::string& path);

}  // namespace vidgraph::nodes
