#include "models/train/adapter_sets.h"

#include <stdexcept>

namespace vidgraph::train {

AdapterSets::AdapterSets(wan::WanModelImpl& model) : model_(model), linears_(wan_named_linears(model)) {
  for (const auto& [name, linear] : linears_) {
    if (linear->adapter.attached()) {
      throw std::invalid_argument("The model already carries a LoRA adapter (on '" + name +
                                  "'); merge it into the weights before distilling, so that it is part of the "
                                  "teacher.");
    }
  }
}

std::vector<LoraModule> AdapterSets::add(const std::string& name, const LoraOptions& options, uint64_t seed) {
  if (name.empty() || sets_.count(name)) {
    throw std::invalid_argument("Adapter set name '" + name + "' is empty or already used.");
  }
  activate("");
  std::vector<LoraModule> modules = attach_lora(model_, options, seed);
  auto& set = sets_[name];
  for (const LoraModule& m : modules) {
    set.emplace_back(m.name, m.linear->adapter);
  }
  activate("");
  return modules;
}

void AdapterSets::activate(const std::string& name) {
  const std::vector<std::pair<std::string, wan::WanLinearAdapter>>* set = nullptr;
  if (!name.empty()) {
    auto it = sets_.find(name);
    if (it == sets_.end()) {
      throw std::invalid_argument("No adapter set named '" + name + "'.");
    }
    set = &it->second;
  }
  // Both lists are in module order: one merge pass.
  size_t next = 0;
  for (const auto& [module, linear] : linears_) {
    if (set != nullptr && next < set->size() && (*set)[next].first == module) {
      linear->adapter = (*set)[next++].second;
    } else {
      linear->adapter = wan::WanLinearAdapter{};
    }
  }
  active_ = name;
}

const std::vector<std::pair<std::string, wan::WanLinearAdapter>>& AdapterSets::adapters(const std::string& name) const {
  auto it = sets_.find(name);
  if (it == sets_.end()) {
    throw std::invalid_argument("No adapter set named '" + name + "'.");
  }
  return it->second;
}

}  // namespace vidgraph::train
