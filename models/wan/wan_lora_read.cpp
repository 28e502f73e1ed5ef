// Reading a LoRA file into per-module tensors. See wan_lora.h.
#include <stdexcept>
#include <utility>
#include <vector>

#include "models/io/dit_key_prefixes.h"
#include "models/io/state_dict_file.h"
#include "models/wan/wan_lora.h"

namespace vidgraph::wan {
namespace {

enum class Part { Down, Up, Alpha, Diff, DiffB, Weight, Bias };

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// LoRA suffixes first: a plain `.weight` is only a full tensor when no LoRA suffix matches.
const std::vector<std::pair<std::string, Part>>& suffixes() {
  static const std::vector<std::pair<std::string, Part>> s = {
      {".lora_down.weight", Part::Down},      {".lora_up.weight", Part::Up},
      {".lora_A.default.weight", Part::Down}, {".lora_B.default.weight", Part::Up},
      {".lora_A.weight", Part::Down},         {".lora_B.weight", Part::Up},
      {".lora.down.weight", Part::Down},      {".lora.up.weight", Part::Up},
      {".alpha", Part::Alpha},                {".diff_b", Part::DiffB},
      {".diff", Part::Diff},                  {".weight", Part::Weight},
      {".bias", Part::Bias},
  };
  return s;
}

// Prefixes of the layouts users have (PEFT nests two: base_model.model.transformer.).
std::string strip_prefixes(std::string key) {
  std::vector<const char*> prefixes = {"base_model.model."};
  prefixes.insert(prefixes.end(), model_io::kDitKeyPrefixes.begin(), model_io::kDitKeyPrefixes.end());
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* p : prefixes) {
      const std::string prefix = p;
      if (key.compare(0, prefix.size(), prefix) == 0 && key.size() > prefix.size()) {
        key = key.substr(prefix.size());
        stripped = true;
      }
    }
  }
  return key;
}

at::Tensor& slot(WanLoraModule& m, Part part) {
  switch (part) {
    case Part::Down: return m.down;
    case Part::Up: return m.up;
    case Part::Alpha: return m.alpha;
    case Part::Diff: return m.diff;
    case Part::DiffB: return m.diff_b;
    case Part::Weight: return m.weight;
    case Part::Bias: break;
  }
  return m.bias;
}

// A damaged or hostile file is named here, at load, not later as non-finite attention inputs: every
// tensor finite, and a rank (lora_down's rows) of at least one.
void check_lora_tensor(const std::string& path, const std::string& key, Part part, const at::Tensor& t) {
  if (!at::isfinite(t).all().item<bool>()) {
    throw std::runtime_error("LoRA '" + path + "': tensor '" + key +
                             "' holds NaN or infinite values; the file is damaged. Download or train it again.");
  }
  // lora_down [rank, in...], lora_up [out, rank, ...] (a convolution's LoRA keeps its kernel dims)
  if ((part == Part::Down || part == Part::Up) && (t.dim() < 2 || t.size(part == Part::Down ? 0 : 1) == 0)) {
    throw std::runtime_error("LoRA '" + path + "': tensor '" + key + "' has shape " + model_io::shape_string(t) +
                             ", not a factor of rank 1 or more; the file is damaged or not a LoRA.");
  }
}

}  // namespace

WanLora wan_read_lora(const std::string& path) {
  WanLora lora;
  lora.path = path;
  model_io::NamedTensors tensors = model_io::load_state_dict_file(path, c10::Device(c10::kCPU), at::kFloat);
  for (auto& [key, tensor] : tensors) {
    bool placed = false;
    for (const auto& [suffix, part] : suffixes()) {
      if (!ends_with(key, suffix)) continue;
      const std::string module = strip_prefixes(key.substr(0, key.size() - suffix.size()));
      WanLoraModule& m = lora.modules[module];
      if (m.first_key.empty()) m.first_key = key;
      check_lora_tensor(path, key, part, tensor);
      at::Tensor& target = slot(m, part);
      if (target.defined()) {
        throw std::runtime_error("LoRA '" + path + "' holds two tensors for '" + module + suffix +
                                 "' (under different prefixes?); the file is inconsistent.");
      }
      target = std::move(tensor);
      placed = true;
      break;
    }
    if (!placed) lora.other_keys.push_back(key);
  }
  if (lora.modules.empty()) {
    throw std::runtime_error("'" + path + "' holds no LoRA tensors (lora_down / lora_up, lora_A / lora_B, diff); " +
                             std::to_string(lora.other_keys.size()) + " other tensor(s). Is it a LoRA file?");
  }
  return lora;
}

}  // namespace vidgraph::wan
