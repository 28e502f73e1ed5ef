#include <memory>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include <c10/core/GradMode.h>
#include <nlohmann/json.hpp>

#include "models/io/safetensors.h"
#include "models/train/train_state_io.h"

namespace vidgraph::train {

namespace {

// A state tensor as fp32, refused when it holds NaN or infinite values: a run resumed from it would
// fail many steps later naming none of them.
at::Tensor load_finite(const model_io::SafetensorsFile& file, const std::string& path, const std::string& key,
                       c10::Device device) {
  at::Tensor value = file.load(key, device, at::kFloat);
  if (!value.isfinite().all().item<bool>()) {
    throw std::runtime_error("Cannot resume from '" + path + "': its tensor '" + key +
                             "' holds NaN or infinite values (the run diverged before this checkpoint, or the file "
                             "was damaged); resume from an earlier checkpoint of the folder.");
  }
  return value;
}

constexpr const char* kStateKey = "vidgraph_train_state";

// AdamW keys its per-parameter state by the parameter's TensorImpl: a string of the pointer in
// LibTorch 1.x, the pointer itself in later versions. Build whichever this LibTorch uses.
using StateMap = std::decay_t<decltype(std::declval<torch::optim::AdamW&>().state())>;
using StateKey = StateMap::key_type;

template <typename Key = StateKey>
Key state_key(const at::Tensor& param) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;
    s << param.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(param.unsafeGetTensorImpl());
  }
}

nlohmann::json options_that_must_match(const TrainOptions& o, size_t sample_count) {
  return {{"mode", o.mode == TrainMode::Lora ? "lora" : "full"},
          {"lora_rank", o.lora.rank},
          {"lora_alpha", o.lora.alpha},
          {"lora_targets", o.lora.targets},
          {"method", o.method},
          {"seed", o.seed},
          {"batch", o.batch},
          {"accumulation", o.accumulation},
          {"shift", o.shift},
          {"caption_dropout", o.caption_dropout},
          {"samples", sample_count}};
}

}  // namespace

void append_optimizer_state(model_io::NamedTensors& tensors, nlohmann::json& adam_steps, const std::string& prefix,
                            const std::vector<Trainable>& trained, torch::optim::AdamW& optimizer) {
  for (const Trainable& t : trained) {
    const std::string name = prefix + t.name;
    tensors.emplace_back("trained." + name, t.master.detach());
    auto it = optimizer.state().find(state_key(t.master));
    if (it == optimizer.state().end()) {
      continue;  // not stepped yet (no gradient so far)
    }
    const auto& s = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    tensors.emplace_back("adamw." + name + ".exp_avg", s.exp_avg());
    tensors.emplace_back("adamw." + name + ".exp_avg_sq", s.exp_avg_sq());
    adam_steps[name] = s.step();
  }
}

nlohmann::json read_state_meta(const model_io::SafetensorsFile& file, const std::string& path, const char* key,
                               const char* what, const char* file_pattern) {
  const auto it = file.metadata().find(key);
  if (it == file.metadata().end()) {
    throw std::runtime_error("'" + path + "' is not a " + what + " checkpoint written by Vidgraph (no " + key +
                             " metadata); resume from a " + file_pattern + " file of the checkpoint folder.");
  }
  nlohmann::json meta = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) {
    throw std::runtime_error("Cannot resume from '" + path + "': its " + key +
                             " metadata is not a JSON object (the file was damaged after it was written); resume "
                             "from another checkpoint of the folder.");
  }
  return meta;
}

void load_optimizer_state(const model_io::SafetensorsFile& file, const std::string& path,
                          const nlohmann::json& adam_steps, const std::string& prefix,
                          const std::vector<Trainable>& trained, torch::optim::AdamW& optimizer) {
  c10::NoGradGuard no_grad;
  for (const Trainable& t : trained) {
    const std::string name = prefix + t.name;
    const std::string key = "trained." + name;
    if (!file.contains(key)) {
      throw std::runtime_error("Cannot resume from '" + path + "': it has no tensor '" + key +
                               "'; it was written for another model or LoRA target set.");
    }
    const at::Tensor value = load_finite(file, path, key, t.master.device());
    if (value.sizes() != t.master.sizes()) {
      throw std::runtime_error("Cannot resume from '" + path + "': tensor '" + key + "' has another shape than " +
                               "the model's; it was written for another model.");
    }
    t.master.copy_(value);
    if (!t.model.is_same(t.master)) {
      t.model.copy_(t.master);
    }
    if (adam_steps.contains(name)) {
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(adam_steps[name].get<int64_t>());
      state->exp_avg(load_finite(file, path, "adamw." + name + ".exp_avg", t.master.device()));
      state->exp_avg_sq(load_finite(file, path, "adamw." + name + ".exp_avg_sq", t.master.device()));
      optimizer.state()[state_key(t.master)] = std::move(state);
    }
  }
}

void check_saved_options(const std::string& path, const nlohmann::json& saved, const nlohmann::json& expected) {
  for (const auto& [key, value] : expected.items()) {
    if (!saved.contains(key) || saved[key] != value) {
      throw std::runtime_error("Cannot resume from '" + path + "': it was trained with " + key + " = " +
                               saved.value(key, nlohmann::json()).dump() + ", these options have " +
                               value.dump() + ". Use the same options or start a new run.");
    }
  }
}

void write_train_state(const std::string& path, const std::vector<Trainable>& trained,
                       torch::optim::AdamW& optimizer, const TrainOptions& options, size_t sample_count, int step,
                       const std::vector<double>& losses) {
  model_io::NamedTensors tensors;
  nlohmann::json adam_steps = nlohmann::json::object();
  append_optimizer_state(tensors, adam_steps, "", trained, optimizer);
  nlohmann::json meta = {{"format", "vidgraph-train-state"},
                         {"version", 1},
                         {"step", step},
                         {"steps", options.steps},
                         {"losses", losses},
                         {"adamw_steps", adam_steps},
                         {"options", options_that_must_match(options, sample_count)}};
  model_io::save_safetensors(path, tensors, {{kStateKey, meta.dump()}, {"format", "pt"}});
}

ResumedState read_train_state(const std::string& path, const std::vector<Trainable>& trained,
                              torch::optim::AdamW& optimizer, const TrainOptions& options, size_t sample_count) {
  const model_io::SafetensorsFile file = model_io::SafetensorsFile::open(path);
  const nlohmann::json meta = read_state_meta(file, path, kStateKey, "training", "train-step-*.safetensors");
  const nlohmann::json expected = options_that_must_match(options, sample_count);
  // Options added after the first checkpoints were written: a checkpoint without one used its default.
  nlohmann::json saved = {{"caption_dropout", 0.0}};
  const nlohmann::json recorded = meta.value("options", nlohmann::json::object());
  if (recorded.is_object()) saved.update(recorded);
  check_saved_options(path, saved, expected);
  return read_state_fields(path, "training", [&] {
    load_optimizer_state(file, path, meta.at("adamw_steps"), "", trained, optimizer);
    ResumedState r;
    r.step = meta.at("step").get<int>();
    r.losses = meta.at("losses").get<std::vector<double>>();
    return r;
  });
}

}  // namespace vidgraph::train
