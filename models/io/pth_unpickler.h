// The restricted unpickler of pth_pickle.h, shared by its two files: the value arena, the bounds
// on what one pickle may build, and the machine's state. pth_pickle.cpp holds its helpers and the
// state-dict walk; pth_pickle_opcodes.cpp its opcode loop (Unpickler::step). Internal to models/io.
#pragma once

#include "pth_pickle.h"

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace vidgraph::model_io::pickle {

// Values live in one arena and refer to each other by index: destroying a tree of any depth (or a
// cycle made through the memo) is a flat vector release, never a recursion.
using Ref = uint32_t;

enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };

struct Value {
  Kind kind = Kind::None;
  uint32_t depth = 0;  // containers nested below this one (0 for a scalar); see add_child
  int64_t i = 0;       // Int, Bool; Storage: numel; Tensor: index into Unpickler::tensors_
  double f = 0.0;
  std::string s;                                 // String; Global as "module.name"; Storage key
  std::vector<Ref> items;                        // Tuple, List; Dict as key, value, key, value...
  at::ScalarType dtype = at::ScalarType::Float;  // Storage
};

// Bounds on what one pickle may build. Real state dicts are far below them: torch.save batches
// SETITEMS by 1,000 (stack < 2,100), a tensor costs ~20 values and ~8 memo slots (the Wan2.2 VAE
// and umT5 .pth have a few hundred to a few thousand tensors), and a state dict nests < 10 levels.
constexpr size_t kMaxStack = 1u << 16;
constexpr size_t kMaxMemo = 1u << 20;
constexpr size_t kMaxValues = 1u << 21;
constexpr size_t kMaxLinks = 1u << 22;  // container children in all
constexpr uint32_t kMaxDepth = 1000;

const std::map<std::string, at::ScalarType>& storage_types();
bool allowed_global(const std::string& name);

class Unpickler {
 public:
  Unpickler(const std::string& data, const std::string& origin) : data_(data), origin_(origin) {}
  Ref run();
  std::vector<PthTensorRecord> state_dict(Ref root) const;

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("cannot read the state dict in '" + origin_ + "' (pickle offset " + std::to_string(pos_) +
                             "): " + what);
  }
  const unsigned char* take(size_t n) {
    if (n > data_.size() - pos_) {
      fail("the pickle ends early (truncated file?)");
    }
    const auto* p = reinterpret_cast<const unsigned char*>(data_.data() + pos_);
    pos_ += n;
    return p;
  }
  uint64_t uint_le(size_t n) {
    const unsigned char* p = take(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) {
      v |= uint64_t(p[k]) << (8 * k);
    }
    return v;
  }
  std::string line();
  Value& at(Ref r) { return values_[r]; }
  const Value& at(Ref r) const { return values_[r]; }
  Ref make(Kind k);
  Ref make_int(int64_t v) {
    const Ref r = make(Kind::Int);
    at(r).i = v;
    return r;
  }
  void push(Ref r) { stack_.push_back(r); }
  Ref pop();
  Ref top() {
    if (stack_.empty()) {
      fail("stack underflow");
    }
    return stack_.back();
  }
  std::vector<Ref> pop_to_mark();
  void add_child(Ref container, Ref child);
  Ref tuple(const std::vector<Ref>& items);
  void push_global(const std::string& module, const std::string& name);
  Ref reduce(Ref callable, Ref args);
  Ref rebuild_tensor(const std::vector<Ref>& args);
  Ref persistent_load(Ref pid);
  void set_items(Ref target, const std::vector<Ref>& kv);
  void memo_put(uint64_t key);
  Ref memo_get(uint64_t key);
  bool step(unsigned char op);
  void check_bounds();

  const std::string& data_;
  const std::string& origin_;
  size_t pos_ = 0;
  std::vector<Value> values_;
  std::vector<PthTensorRecord> tensors_;
  size_t links_ = 0;
  std::vector<Ref> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
};

}  // namespace vidgraph::model_io::pickle
