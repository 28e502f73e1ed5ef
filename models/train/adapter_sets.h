// Named LoRA adapter sets over one Wan DiT: the minimal mechanism that lets several roles share
// one copy of the base weights (distill.h: the teacher runs the bare base, the critic and the
// student each their own adapter set). A WanLinear holds one adapter slot (wan_layers.h,
// WanLinearAdapter: tensor handles plus a scale); a set is the adapter of each of its linears,
// kept here, and activating a set installs those handles in the slots (every other slot is
// emptied). Nothing is copied: the base weights are the model's, the adapter tensors are the
// set's, and training updates them in place whichever set is active.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/train/lora.h"
#include "models/wan/wan_layers.h"
#include "models/wan/wan_model.h"

namespace vidgraph::train {

class AdapterSets {
 public:
  // `model` must outlive this object and carry no adapter (a loaded LoRA must be merged first):
  // throws std::invalid_argument otherwise.
  explicit AdapterSets(wan::WanModelImpl& model);

  // A fresh adapter set `name` (attach_lora(model, options, seed): up = 0, down seeded by the seed
  // and the module name). Leaves no set active. Throws std::invalid_argument for bad options or a
  // name already used. The returned modules' slots are empty again: the set's tensors are in
  // adapters(name).
  std::vector<LoraModule> add(const std::string& name, const LoraOptions& options, uint64_t seed);

  // Installs set `name` ("" = none: the bare base model). Throws std::invalid_argument for an
  // unknown name.
  void activate(const std::string& name);
  const std::string& active() const { return active_; }

  // The adapters of set `name`, by module name, in module order.
  const std::vector<std::pair<std::string, wan::WanLinearAdapter>>& adapters(const std::string& name) const;

 private:
  wan::WanModelImpl& model_;
  std::vector<std::pair<std::string, wan::WanLinearImpl*>> linears_;
  std::map<std::string, std::vector<std::pair<std::string, wan::WanLinearAdapter>>> sets_;
  std::string active_;
};

// Activates a set for a scope and restores the one active before on exit.
class ActiveAdapters {
 public:
  ActiveAdapters(AdapterSets& sets, const std::string& name) : sets_(sets), previous_(sets.active()) {
    sets_.activate(name);
  }
  ~ActiveAdapters() { sets_.activate(previous_); }
  ActiveAdapters(const ActiveAdapters&) = delete;
  ActiveAdapters& operator=(const ActiveAdapters&) = delete;

 private:
  AdapterSets& sets_;
  std::string previous_;
};

}  // namespace vidgraph::train
