// Which files a Wan model part is read from, given the path a user gave for it (a file, or a
// folder in one of the layouts users have: the official release, a diffusers repo, a sharded
// folder with or without its index json, the demo model). This is the one place those folder rules
// live: the loaders (models/wan, models/vae, models/t5) read exactly these files, and Load Wan
// Model fingerprints and checks exactly these, never the rest of a folder.
#pragma once

#include <string>
#include <vector>

#include "models/io/model_folders.h"

namespace vidgraph::model_io {

struct ModelPartFiles {
  std::string folder;                // the folder the files are in ("" for a single file)
  std::vector<std::string> weights;  // weight files in load order (shards sorted by name)
  std::string index;                 // DiT: the *.safetensors.index.json that named the shards, or ""
  std::string config;                // DiT: config.json beside the weights, or ""
  // Why the part cannot be read as laid out ("" when it can): a folder with no weights, an index
  // that is not JSON or names a missing shard. Loaders throw it; listings show what was found.
  std::string problem;
  // The folders whose listings chose these files (a folder given and the subfolder used or looked
  // for): while they, the index and the files are unchanged (file_identity.h), so is the answer.
  std::vector<std::string> looked_in;

  // index, config and weights: every file reading the part touches.
  std::vector<std::string> all() const;
};

// The files of `path` read as a part of kind `kind` (Dit, Vae or TextEncoder). A path that is not
// a folder is the part's one weight file. Folders:
//   Dit          the folder, or its transformer/ when the folder holds no *.safetensors; the shards
//                its index json names (the first index by name), else every *.safetensors;
//   Vae          vae/diffusion_pytorch_model.safetensors, else diffusion_pytorch_model.safetensors;
//   TextEncoder  the *.safetensors of its text_encoder/ subfolder, else of the folder.
// Never throws; reads folder listings and the index json only.
ModelPartFiles model_part_files(ModelKind kind, const std::string& path);

// The tokenizer a folder holds (spiece.model, tokenizer/spiece.model, google/umt5-xxl/spiece.model,
// first existing), the path itself when it is not a folder, "" when none. `looked_in`, when given,
// receives the folders whose listings decided it, as ModelPartFiles::looked_in.
std::string tokenizer_file(const std::string& path, std::vector<std::string>* looked_in = nullptr);

}  // namespace vidgraph::model_io
