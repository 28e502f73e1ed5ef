// The model files a node's file param can be set to, for the editor's drop-downs: the weight
// files of the param's kind (Load Wan Model's dit, vae, text_encoder; Load LoRA's path; Light VAE
// Decode's path) in the ComfyUI-style folders that node's params point at (model_path when it is a
// ComfyUI models folder, model_paths_file, else options.model_paths_file: VIDGRAPH_MODEL_PATHS as
// the front end read it), grouped by what each file holds as `vidgraph-run models` tells it (the
// model and role of a DiT, the VAE's version, ...). Only headers are read, each file's once while
// its size and time stay the same.
// No LibTorch types; never throws (an unreadable yaml file gives no choices).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/run_options.h"

namespace vidgraph::nodes {

struct ModelFileChoice {
  std::string path;
  std::string group;  // "Wan2.2-T2V-A14B (high-noise expert)", "Wan2.1 VAE", "Not recognised", ...
};

// True when `param` of `node_type` names a model file of a kind the folders hold.
bool is_model_file_param(const std::string& node_type, const std::string& param);

// The files, group by group (recognised groups by name, then the files not recognised, then the
// unreadable ones), in listing order within a group; empty when the param is no model file param
// or nothing is found.
std::vector<ModelFileChoice> model_file_choices(const std::string& node_type, const std::string& param,
                                                const nlohmann::json& params, const engine::RunOptions& options);

}  // namespace vidgraph::nodes
