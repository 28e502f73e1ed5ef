// vidgraph-run models: the model files found in ComfyUI-style folders, by kind, with what each
// holds (models/io/model_file_info.h), so that a user sees what Load Wan Model will pick.
#pragma once

#include <string>
#include <vector>

namespace vidgraph::cli {

// `folders`: ComfyUI models folders (or ComfyUI install folders); `model_paths`: ComfyUI's
// extra_model_paths.yaml; `default_model_paths`: the yaml listed when neither is given (the
// front end's VIDGRAPH_MODEL_PATHS, engine/environment.h). Returns the exit code.
int command_models(const std::vector<std::string>& folders, const std::string& model_paths,
                   const std::string& default_model_paths, bool json);

}  // namespace vidgraph::cli
