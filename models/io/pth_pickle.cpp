#include "pth_pickle.h"

#include "pth_unpickler.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace vidgraph::model_io {
namespace pickle {

const std::map<std::string, at::ScalarType>& storage_types() {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::ScalarType::Float}, {"torch.DoubleStorage", at::ScalarType::Double},
      {"torch.HalfStorage", at::ScalarType::Half},   {"torch.BFloat16Storage", at::ScalarType::BFloat16},
      {"torch.LongStorage", at::ScalarType::Long},   {"torch.IntStorage", at::ScalarType::Int},
      {"torch.ShortStorage", at::ScalarType::Short}, {"torch.CharStorage", at::ScalarType::Char},
      {"torch.ByteStorage", at::ScalarType::Byte},   {"torch.BoolStorage", at::ScalarType::Bool},
  };
  return types;
}

bool allowed_global(const std::string& name) {
  return name == "collections.OrderedDict" || name == "torch._utils._rebuild_tensor_v2" ||
         name == "torch._utils._rebuild_parameter" || storage_types().count(name) != 0;
}


std::string Unpickler::line() {
  const size_t end = data_.find('\n', pos_);
  if (end == std::string::npos || end - pos_ > 256) {
    fail("a GLOBAL name is not terminated");
  }
  std::string s = data_.substr(pos_, end - pos_);
  pos_ = end + 1;
  return s;
}

Ref Unpickler::make(Kind k) {
  if (values_.size() >= kMaxValues) {
    fail("the pickle builds more than " + std::to_string(kMaxValues) +
         " values (a real state dict needs about 20 per tensor); the file is damaged or hostile");
  }
  values_.emplace_back();
  values_.back().kind = k;
  return Ref(values_.size() - 1);
}

Ref Unpickler::pop() {
  if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
    fail("stack underflow");
  }
  const Ref v = stack_.back();
  stack_.pop_back();
  return v;
}

std::vector<Ref> Unpickler::pop_to_mark() {
  if (marks_.empty()) {
    fail("no MARK before a collection opcode");
  }
  const size_t m = marks_.back();
  marks_.pop_back();
  std::vector<Ref> items(stack_.begin() + long(m), stack_.end());
  stack_.resize(m);
  return items;
}

// Tracks nesting as containers are filled. A container filled after it was itself put inside another
// (through the memo) leaves its parents' depth stale: the limit is a guard against hostile nesting,
// not what keeps us safe; nothing walks the tree recursively.
void Unpickler::add_child(Ref container, Ref child) {
  if (++links_ > kMaxLinks) {
    fail("the pickle's containers hold more than " + std::to_string(kMaxLinks) +
         " items in all; the file is damaged or hostile");
  }
  const uint32_t depth = std::max(at(container).depth, at(child).depth + 1);
  if (depth > kMaxDepth) {
    fail("containers nest deeper than " + std::to_string(kMaxDepth) +
         " levels (a state dict nests fewer than 10); the file is damaged or hostile");
  }
  at(container).depth = depth;
  at(container).items.push_back(child);
}

Ref Unpickler::tuple(const std::vector<Ref>& items) {
  const Ref t = make(Kind::Tuple);
  for (Ref item : items) {
    add_child(t, item);
  }
  return t;
}

void Unpickler::push_global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  if (!allowed_global(full)) {
    fail("the global '" + full +
         "' is not allowed in a tensor state dict (this file may run code when opened by Python; "
         "use a plain state-dict .pth or a .safetensors file)");
  }
  const Ref g = make(Kind::Global);
  at(g).s = full;
  push(g);
}

Ref Unpickler::rebuild_tensor(const std::vector<Ref>& a) {
  if (a.size() < 4 || a.size() > 7 || at(a[0]).kind != Kind::Storage || at(a[1]).kind != Kind::Int ||
      at(a[2]).kind != Kind::Tuple || at(a[3]).kind != Kind::Tuple) {
    fail("_rebuild_tensor_v2 with unexpected arguments");
  }
  PthTensorRecord rec;
  rec.dtype = at(a[0]).dtype;
  rec.storage_key = at(a[0]).s;
  rec.storage_numel = at(a[0]).i;
  rec.storage_offset = at(a[1]).i;
  for (Ref d : at(a[2]).items) {
    if (at(d).kind != Kind::Int || at(d).i < 0) {
      fail("a tensor size is not a non-negative integer");
    }
    rec.sizes.push_back(at(d).i);
  }
  for (Ref d : at(a[3]).items) {
    if (at(d).kind != Kind::Int || at(d).i < 0) {
      fail("a tensor stride is not a non-negative integer");
    }
    rec.strides.push_back(at(d).i);
  }
  if (rec.sizes.size() != rec.strides.size()) {
    fail("a tensor has different numbers of sizes and strides");
  }
  const Ref t = make(Kind::Tensor);
  at(t).i = int64_t(tensors_.size());
  tensors_.push_back(std::move(rec));
  return t;
}

Ref Unpickler::reduce(Ref callable, Ref args) {
  if (at(callable).kind != Kind::Global || at(args).kind != Kind::Tuple) {
    fail("REDUCE on something other than an allowed global with a tuple of arguments");
  }
  const std::string name = at(callable).s;
  const std::vector<Ref> a = at(args).items;
  if (name == "collections.OrderedDict") {
    if (!a.empty()) {
      fail("OrderedDict built from arguments is not supported");
    }
    return make(Kind::Dict);
  }
  if (name == "torch._utils._rebuild_parameter") {
    if (a.size() < 1 || at(a[0]).kind != Kind::Tensor) {
      fail("_rebuild_parameter without a tensor");
    }
    return a[0];
  }
  if (name == "torch._utils._rebuild_tensor_v2") {
    return rebuild_tensor(a);
  }
  fail("the global '" + name + "' cannot be called");
}

Ref Unpickler::persistent_load(Ref pid) {
  const std::vector<Ref>& a = at(pid).items;
  if (at(pid).kind != Kind::Tuple || a.size() != 5 || at(a[0]).kind != Kind::String || at(a[0]).s != "storage" ||
      at(a[1]).kind != Kind::Global || at(a[2]).kind != Kind::String || at(a[3]).kind != Kind::String ||
      at(a[4]).kind != Kind::Int) {
    fail("a persistent id that is not ('storage', type, key, location, numel)");
  }
  const auto it = storage_types().find(at(a[1]).s);
  if (it == storage_types().end()) {
    fail("'" + at(a[1]).s + "' is not a storage type");
  }
  if (at(a[4]).i < 0) {
    fail("a storage has a negative size");
  }
  const std::string key = at(a[2]).s;
  const int64_t numel = at(a[4]).i;
  const Ref st = make(Kind::Storage);  // may reallocate values_: no references held across it
  at(st).dtype = it->second;
  at(st).s = key;
  at(st).i = numel;
  return st;
}

void Unpickler::set_items(Ref target, const std::vector<Ref>& kv) {
  if (at(target).kind != Kind::Dict) {
    fail("SETITEM(S) on something that is not a dict");
  }
  if (kv.size() % 2 != 0) {
    fail("SETITEMS with an odd number of items");
  }
  for (Ref r : kv) {
    add_child(target, r);
  }
}

void Unpickler::memo_put(uint64_t key) {
  if (memo_.size() >= kMaxMemo && memo_.count(key) == 0) {
    fail("the pickle memoises more than " + std::to_string(kMaxMemo) +
         " values (a real state dict needs about 8 per tensor); the file is damaged or hostile");
  }
  memo_[key] = top();
}

Ref Unpickler::memo_get(uint64_t key) {
  const auto it = memo_.find(key);
  if (it == memo_.end()) {
    fail("a memo reference to an unknown slot " + std::to_string(key));
  }
  return it->second;
}

void Unpickler::check_bounds() {
  if (stack_.size() > kMaxStack || marks_.size() > kMaxStack) {
    fail("the pickle stack grows past " + std::to_string(kMaxStack) +
         " entries (torch.save never needs more than ~2,100); the file is damaged or hostile");
  }
}

Ref Unpickler::run() {
  while (true) {
    const unsigned char op = *take(1);
    if (op == '.') {  // STOP
      return pop();
    }
    if (!step(op)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02x", op);
      fail(std::string("the pickle opcode ") + hex + " is not allowed in a tensor state dict");
    }
    check_bounds();
  }
}

std::vector<PthTensorRecord> Unpickler::state_dict(Ref root) const {
  if (at(root).kind != Kind::Dict) {
    throw std::runtime_error("'" + origin_ + "' does not hold a state dict (a dict of tensors) at its top level");
  }
  const std::vector<Ref>& kv = at(root).items;
  std::vector<PthTensorRecord> records;
  records.reserve(kv.size() / 2);
  std::unordered_set<std::string> seen;
  for (size_t k = 0; k + 1 < kv.size(); k += 2) {
    const Value& key = at(kv[k]);
    const Value& value = at(kv[k + 1]);
    if (key.kind != Kind::String) {
      throw std::runtime_error("'" + origin_ + "' has a state-dict key that is not a string");
    }
    if (value.kind != Kind::Tensor) {
      throw std::runtime_error("'" + origin_ + "': the state-dict entry '" + key.s + "' is not a tensor");
    }
    if (!seen.insert(key.s).second) {
      throw std::runtime_error("'" + origin_ + "': the state dict names the tensor '" + key.s +
                               "' twice (damaged or hand-edited file)");
    }
    PthTensorRecord r = tensors_[size_t(value.i)];
    r.name = key.s;
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace pickle

std::vector<PthTensorRecord> pth_unpickle_state_dict(const std::string& pickle, const std::string& origin) {
  pickle::Unpickler unpickler(pickle, origin);
  return unpickler.state_dict(unpickler.run());
}

}  // namespace vidgraph::model_io
