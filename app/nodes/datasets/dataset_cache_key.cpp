// Implements dataset_cache_key.h with xxHash64.
#include "nodes/datasets/dataset_cache_key.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include <xxhash.h>

#include "nodes/common/node_util.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

namespace {

struct StateDeleter {
  void operator()(XXH64_state_t* s) const { XXH64_freeState(s); }
};
using HashState = std::unique_ptr<XXH64_state_t, StateDeleter>;

HashState new_state() {
  HashState state(XXH64_createState());
  XXH64_reset(state.get(), 0);
  return state;
}

// Adds a length-prefixed field, so that ("ab", "c") and ("a", "bc") hash differently.
void add_field(XXH64_state_t* state, const std::string& text) {
  const unsigned long long size = text.size();
  XXH64_update(state, &size, sizeof size);
  XXH64_update(state, text.data(), text.size());
}

bool add_file(XXH64_state_t* state, const fs::path& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "Could not read '" + path.string() + "'.";
    return false;
  }
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    XXH64_update(state, buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) {
    *error = "Reading '" + path.string() + "' failed.";
    return false;
  }
  return true;
}

std::string hex(unsigned long long value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", value);
  return text;
}

}  // namespace

std::string clip_content_hash(const std::string& clip_path, std::string* error) {
  HashState state = new_state();
  std::error_code ec;
  if (!fs::is_directory(clip_path, ec)) {
    if (!add_file(state.get(), clip_path, error)) return {};
    return hex(XXH64_digest(state.get()));
  }
  std::vector<fs::path> frames;
  for (const auto& entry : fs::directory_iterator(clip_path, ec)) {
    if (entry.path().extension() == ".png") frames.push_back(entry.path());
  }
  std::sort(frames.begin(), frames.end());
  for (const fs::path& frame : frames) {
    add_field(state.get(), frame.filename().string());
    if (!add_file(state.get(), frame, error)) return {};
  }
  return hex(XXH64_digest(state.get()));
}

std::string sample_key(const std::string& content_hash, const std::string& caption,
                       const std::string& settings_json, const std::string& vae_identity,
                       const std::string& encoder_identity) {
  HashState state = new_state();
  for (const std::string* part : {&content_hash, &caption, &settings_json, &vae_identity, &encoder_identity}) {
    add_field(state.get(), *part);
  }
  return hex(XXH64_digest(state.get()));
}

std::string model_file_identity(const std::string& path) {
  if (path.empty()) return {};
  return path + "|" + file_fingerprint(path);
}

}  // namespace vidgraph::nodes
