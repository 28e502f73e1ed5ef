// Internal to vidgraph_train: the pieces of a resumable state file shared by train()
// (train_state.cpp, "vidgraph_train_state") and distill() (distill_state.cpp,
// "vidgraph_distill_state"). A group of trained tensors is stored under a name prefix:
// `trained.<prefix><name>` (fp32 master), `adamw.<prefix><name>.exp_avg` / `.exp_avg_sq`, and its
// AdamW step count in the metadata's `adamw_steps` object under `<prefix><name>`. train() uses the
// prefix "", distill() "student." and "critic.".
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/optim/adamw.h>

#include "models/io/safetensors.h"
#include "models/train/trainer_parts.h"

namespace vidgraph::train {

// Appends the masters and AdamW moments of `trained` to `tensors`, the step counts to `adam_steps`.
void append_optimizer_state(model_io::NamedTensors& tensors, nlohmann::json& adam_steps, const std::string& prefix,
                            const std::vector<Trainable>& trained, torch::optim::AdamW& optimizer);

// Loads them back into the masters (and model tensors) and the optimizer. Throws std::runtime_error
// naming `path` for a missing tensor or another shape.
void load_optimizer_state(const model_io::SafetensorsFile& file, const std::string& path,
                          const nlohmann::json& adam_steps, const std::string& prefix,
                          const std::vector<Trainable>& trained, torch::optim::AdamW& optimizer);

// The state metadata `key` of checkpoint `path`, parsed (`what`: "training" or "distillation";
// `file_pattern`: the checkpoint files to resume from instead). Throws std::runtime_error with a
// sentence naming the file when it is missing or not a JSON object. Tensors the state loads are
// checked finite (load_optimizer_state).
nlohmann::json read_state_meta(const model_io::SafetensorsFile& file, const std::string& path, const char* key,
                               const char* what, const char* file_pattern);

// Runs `read` (which reads fields of the state metadata) and turns a JSON type or key error into a
// sentence naming the file: a checkpoint damaged after it was written.
template <typename Read>
auto read_state_fields(const std::string& path, const char* what, Read&& read) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("Cannot resume from '" + path + "': its " + what +
                             " state is damaged (" + e.what() + "); resume from another checkpoint of the folder.");
  }
}

// Throws std::runtime_error naming `path` and the first key of `expected` whose value in `saved` differs.
void check_saved_options(const std::string& path, const nlohmann::json& saved, const nlohmann::json& expected);

}  // namespace vidgraph::train
