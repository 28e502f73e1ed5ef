// The options Vidgraph reads from the process environment, declared in this one place. Only the
// front ends call read_environment(), once, at start-up (the editor's main, vidgraph-run,
// vidgraph-attention, vidgraph-train-demo, the benches); they pass each value down as a parameter
// (Session settings, RunOptions, the plugin loader's search path), so no layer below reads the
// environment for these.
//
//   VIDGRAPH_PLUGIN_PATH   ':'-separated folders searched for attention plugins, in order, before the
//                          folders next to the executable (empty items are skipped).
//   VIDGRAPH_MODEL_PATHS   a ComfyUI extra_model_paths.yaml whose folders Load Wan Model, Load LoRA,
//                          the editor's model-file lists and `vidgraph-run models` search when they
//                          are given no yaml file of their own.
//   torchrun's variables   WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
//                          TORCHELASTIC_USE_AGENT_STORE, GLOO_SOCKET_IFNAME: a process with WORLD_SIZE
//                          is one rank of a run of several (vidgraph-run sets them for its --nproc
//                          ranks); parsed and checked by parallel::process_group_options_from_torchrun.
//   CUDA_VISIBLE_DEVICES   the GPUs a rank picks its own from (vidgraph-run's rank_gpu_visibility).
// Unset and empty are the same, except for CUDA_VISIBLE_DEVICES (empty: no GPU). No checks here: the
// users of a value report what is wrong with it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vidgraph::engine {

struct Environment {
  std::vector<std::string> plugin_path;  // VIDGRAPH_PLUGIN_PATH, split at ':'
  std::string model_paths_file;          // VIDGRAPH_MODEL_PATHS
  std::map<std::string, std::string> torchrun;      // torchrun's variables that are set, by name
  std::optional<std::string> cuda_visible_devices;  // CUDA_VISIBLE_DEVICES; nullopt when unset
};

// The names read into Environment::torchrun.
const std::vector<std::string>& torchrun_variables();

// The values of this process's environment now.
Environment read_environment();

}  // namespace vidgraph::engine
