// Internal: picks Load Wan Model's files out of ComfyUI-style model folders (a `models/` folder,
// extra_model_paths.yaml roots) by what the files hold (model_io/model_file_info.h), not by name:
// the DiT whose shapes are Wan2.2-TI2V-5B's, the Wan2.2 VAE, the umT5-XXL encoder.
#pragma once

#include <string>

#include "engine/result.h"
#include "models/io/model_folders.h"

namespace vidgraph::nodes {

// The one file of `kind` that is the Wan2.2-5B part (or, when none is, the one file of that kind:
// a tiny or other Wan model). No match, or several, is an error naming the folders, the files
// seen (with what each was found to be) and `param` to set instead.
engine::Result<std::string> pick_model_file(const model_io::ModelFolders& folders, model_io::ModelKind kind,
                                            const std::string& param);

// The folders Load Wan Model searches besides its fixed layouts: `model_path` when it is a
// ComfyUI models folder (or a ComfyUI install), then the roots of `model_paths_file` (ComfyUI's
// extra_model_paths.yaml; empty = `default_model_paths_file`, the run's RunOptions::model_paths_file,
// which front ends fill from VIDGRAPH_MODEL_PATHS). Errors name the yaml file.
engine::Result<model_io::ModelFolders> search_folders(const std::string& model_path,
                                                      const std::string& model_paths_file,
                                                      const std::string& default_model_paths_file);

// True when the text encoder file carries its tokenizer (ComfyUI's `spiece_model` tensor).
bool carries_tokenizer(const std::string& text_encoder);

}  // namespace vidgraph::nodes
