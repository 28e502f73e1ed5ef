#include "pth_pickle.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace vidgraph::model_io {

namespace {

struct Value;
using ValuePtr = std::shared_ptr<Value>;

enum class Kind { None, Bool, Int, Float, String, Tuple, List, Dict, Global, Storage, Tensor };

struct Value {
  Kind kind = Kind::None;
  int64_t i = 0;
  double f = 0.0;
  std::string s;                // String; Global as "module.name"; Storage key
  std::vector<ValuePtr> items;  // Tuple, List
  std::vector<std::pair<ValuePtr, ValuePtr>> dict;
  at::ScalarType dtype = at::ScalarType::Float;  // Storage, Tensor
  int64_t numel = 0;                             // Storage
  PthTensorRecord tensor;                        // Tensor
};

ValuePtr make(Kind k) {
  auto v = std::make_shared<Value>();
  v->kind = k;
  return v;
}

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

class Unpickler {
 public:
  Unpickler(const std::string& data, const std::string& origin) : data_(data), origin_(origin) {}
  ValuePtr run();

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
  std::string line() {
    const size_t end = data_.find('\n', pos_);
    if (end == std::string::npos || end - pos_ > 256) {
      fail("a GLOBAL name is not terminated");
    }
    std::string s = data_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }
  std::string bytes(uint64_t n) {
    const unsigned char* p = take(size_t(n));
    return std::string(reinterpret_cast<const char*>(p), size_t(n));
  }
  ValuePtr pop() {
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back())) {
      fail("stack underflow");
    }
    ValuePtr v = stack_.back();
    stack_.pop_back();
    return v;
  }
  ValuePtr& top() {
    if (stack_.empty()) {
      fail("stack underflow");
    }
    return stack_.back();
  }
  std::vector<ValuePtr> pop_to_mark() {
    if (marks_.empty()) {
      fail("no MARK before a collection opcode");
    }
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ValuePtr> items(stack_.begin() + long(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  void push_global(const std::string& module, const std::string& name);
  ValuePtr reduce(const ValuePtr& callable, const ValuePtr& args);
  ValuePtr persistent_load(const ValuePtr& pid);
  void set_items(const ValuePtr& target, const std::vector<ValuePtr>& kv);
  void memo_put(uint64_t key) {
    if (memo_.size() > (1u << 24)) {
      fail("too many memo entries");
    }
    memo_[key] = top();
  }
  ValuePtr memo_get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) {
      fail("a memo reference to an unknown slot " + std::to_string(key));
    }
    return it->second;
  }
  ValuePtr tuple(std::vector<ValuePtr> items) {
    ValuePtr t = make(Kind::Tuple);
    t->items = std::move(items);
    return t;
  }

  const std::string& data_;
  const std::string& origin_;
  size_t pos_ = 0;
  std::vector<ValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ValuePtr> memo_;
};

void Unpickler::push_global(const std::string& module, const std::string& name) {
  const std::string full = module + "." + name;
  if (!allowed_global(full)) {
    fail("the global '" + full +
         "' is not allowed in a tensor state dict (this file may run code when opened by Python; "
         "use a plain state-dict .pth or a .safetensors file)");
  }
  ValuePtr g = make(Kind::Global);
  g->s = full;
  stack_.push_back(g);
}

ValuePtr Unpickler::reduce(const ValuePtr& callable, const ValuePtr& args) {
  if (callable->kind != Kind::Global || args->kind != Kind::Tuple) {
    fail("REDUCE on something other than an allowed global with a tuple of arguments");
  }
  const std::vector<ValuePtr>& a = args->items;
  if (callable->s == "collections.OrderedDict") {
    if (!a.empty()) {
      fail("OrderedDict built from arguments is not supported");
    }
    return make(Kind::Dict);
  }
  if (callable->s == "torch._utils._rebuild_parameter") {
    if (a.size() < 1 || a[0]->kind != Kind::Tensor) {
      fail("_rebuild_parameter without a tensor");
    }
    return a[0];
  }
  if (callable->s == "torch._utils._rebuild_tensor_v2") {
    if (a.size() < 4 || a.size() > 7 || a[0]->kind != Kind::Storage || a[1]->kind != Kind::Int ||
        a[2]->kind != Kind::Tuple || a[3]->kind != Kind::Tuple) {
      fail("_rebuild_tensor_v2 with unexpected arguments");
    }
    ValuePtr t = make(Kind::Tensor);
    t->tensor.dtype = a[0]->dtype;
    t->tensor.storage_key = a[0]->s;
    t->tensor.storage_numel = a[0]->numel;
    t->tensor.storage_offset = a[1]->i;
    for (const ValuePtr& d : a[2]->items) {
      if (d->kind != Kind::Int || d->i < 0) {
        fail("a tensor size is not a non-negative integer");
      }
      t->tensor.sizes.push_back(d->i);
    }
    for (const ValuePtr& d : a[3]->items) {
      if (d->kind != Kind::Int || d->i < 0) {
        fail("a tensor stride is not a non-negative integer");
      }
      t->tensor.strides.push_back(d->i);
    }
    if (t->tensor.sizes.size() != t->tensor.strides.size()) {
      fail("a tensor has different numbers of sizes and strides");
    }
    return t;
  }
  fail("the global '" + callable->s + "' cannot be called");
}

ValuePtr Unpickler::persistent_load(const ValuePtr& pid) {
  const std::vector<ValuePtr>& a = pid->items;
  if (pid->kind != Kind::Tuple || a.size() != 5 || a[0]->kind != Kind::String || a[0]->s != "storage" ||
      a[1]->kind != Kind::Global || a[2]->kind != Kind::String || a[3]->kind != Kind::String ||
      a[4]->kind != Kind::Int) {
    fail("a persistent id that is not ('storage', type, key, location, numel)");
  }
  const auto it = storage_types().find(a[1]->s);
  if (it == storage_types().end()) {
    fail("'" + a[1]->s + "' is not a storage type");
  }
  if (a[4]->i < 0) {
    fail("a storage has a negative size");
  }
  ValuePtr st = make(Kind::Storage);
  st->dtype = it->second;
  st->s = a[2]->s;
  st->numel = a[4]->i;
  return st;
}

void Unpickler::set_items(const ValuePtr& target, const std::vector<ValuePtr>& kv) {
  if (target->kind != Kind::Dict) {
    fail("SETITEM(S) on something that is not a dict");
  }
  if (kv.size() % 2 != 0) {
    fail("SETITEMS with an odd number of items");
  }
  for (size_t k = 0; k < kv.size(); k += 2) {
    target->dict.emplace_back(kv[k], kv[k + 1]);
  }
}

ValuePtr Unpickler::run() {
  while (true) {
    const unsigned char op = *take(1);
    switch (op) {
      case 0x80:  // PROTO
        if (*take(1) > 5) {
          fail("unsupported pickle protocol");
        }
        break;
      case 0x95:  // FRAME
        take(8);
        break;
      case '.':  // STOP
        return pop();
      case 'c': {  // GLOBAL
        const std::string module = line();
        const std::string name = line();
        push_global(module, name);
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        const ValuePtr name = pop();
        const ValuePtr module = pop();
        if (module->kind != Kind::String || name->kind != Kind::String) {
          fail("STACK_GLOBAL without two strings");
        }
        push_global(module->s, name->s);
        break;
      }
      case 'q':
        memo_put(uint_le(1));
        break;  // BINPUT
      case 'r':
        memo_put(uint_le(4));
        break;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size());
        break;  // MEMOIZE
      case 'h':
        stack_.push_back(memo_get(uint_le(1)));
        break;  // BINGET
      case 'j':
        stack_.push_back(memo_get(uint_le(4)));
        break;  // LONG_BINGET
      case '(':
        marks_.push_back(stack_.size());
        break;  // MARK
      case ')':
        stack_.push_back(tuple({}));
        break;  // EMPTY_TUPLE
      case 't':
        stack_.push_back(tuple(pop_to_mark()));
        break;  // TUPLE
      case 0x85: {
        ValuePtr a = pop();
        stack_.push_back(tuple({a}));
        break;
      }
      case 0x86: {
        ValuePtr b = pop();
        ValuePtr a = pop();
        stack_.push_back(tuple({a, b}));
        break;
      }
      case 0x87: {
        ValuePtr c = pop();
        ValuePtr b = pop();
        ValuePtr a = pop();
        stack_.push_back(tuple({a, b, c}));
        break;
      }
      case '}':
        stack_.push_back(make(Kind::Dict));
        break;  // EMPTY_DICT
      case ']':
        stack_.push_back(make(Kind::List));
        break;  // EMPTY_LIST
      case 'N':
        stack_.push_back(make(Kind::None));
        break;
      case 0x88:
      case 0x89: {
        ValuePtr b = make(Kind::Bool);
        b->i = op == 0x88;
        stack_.push_back(b);
        break;
      }
      case 'K':
      case 'M':
      case 'J': {  // BININT1, BININT2, BININT
        ValuePtr v = make(Kind::Int);
        v->i = op == 'K' ? int64_t(uint_le(1)) : op == 'M' ? int64_t(uint_le(2)) : int64_t(int32_t(uint_le(4)));
        stack_.push_back(v);
        break;
      }
      case 0x8a: {  // LONG1
        const size_t n = size_t(uint_le(1));
        if (n > 8) {
          fail("an integer wider than 64 bits");
        }
        uint64_t raw = n ? uint_le(n) : 0;
        if (n > 0 && n < 8 && (raw >> (8 * n - 1)) & 1) {
          raw |= ~uint64_t(0) << (8 * n);
        }
        ValuePtr v = make(Kind::Int);
        v->i = int64_t(raw);
        stack_.push_back(v);
        break;
      }
      case 'G': {  // BINFLOAT (big-endian)
        const unsigned char* p = take(8);
        uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) {
          bits = (bits << 8) | p[k];
        }
        ValuePtr v = make(Kind::Float);
        std::memcpy(&v->f, &bits, 8);
        stack_.push_back(v);
        break;
      }
      case 'X':
      case 0x8c:
      case 0x8d:
      case 'U':
      case 'T': {  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8, SHORT_BINSTRING, BINSTRING
        const size_t width = (op == 'X' || op == 'T') ? 4 : op == 0x8d ? 8 : 1;
        ValuePtr v = make(Kind::String);
        v->s = bytes(uint_le(width));
        stack_.push_back(v);
        break;
      }
      case 'Q': {
        ValuePtr pid = pop();
        stack_.push_back(persistent_load(pid));
        break;
      }  // BINPERSID
      case 'R': {
        ValuePtr args = pop();
        ValuePtr fn = pop();
        stack_.push_back(reduce(fn, args));
        break;
      }
      case 'b': {  // BUILD: only the `_metadata` state of an OrderedDict, which we do not need
        ValuePtr state = pop();
        if (top()->kind != Kind::Dict || (state->kind != Kind::Dict && state->kind != Kind::Tuple)) {
          fail("BUILD on something other than a state dict");
        }
        break;
      }
      case 's': {
        ValuePtr v = pop();
        ValuePtr k = pop();
        set_items(top(), {k, v});
        break;
      }  // SETITEM
      case 'u': {
        std::vector<ValuePtr> kv = pop_to_mark();
        set_items(top(), kv);
        break;
      }  // SETITEMS
      case 'a': {
        ValuePtr v = pop();
        if (top()->kind != Kind::List) fail("APPEND on a non-list");
        top()->items.push_back(v);
        break;
      }
      case 'e': {
        std::vector<ValuePtr> vs = pop_to_mark();
        if (top()->kind != Kind::List) {
          fail("APPENDS on a non-list");
        }
        top()->items.insert(top()->items.end(), vs.begin(), vs.end());
        break;
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(std::string("the pickle opcode ") + hex + " is not allowed in a tensor state dict");
      }
    }
    if (stack_.size() > (1u << 24)) {
      fail("the pickle stack grows without bound");
    }
  }
}

}  // namespace

std::vector<PthTensorRecord> pth_unpickle_state_dict(const std::string& pickle, const std::string& origin) {
  Unpickler unpickler(pickle, origin);
  const ValuePtr root = unpickler.run();
  if (root->kind != Kind::Dict) {
    throw std::runtime_error("'" + origin + "' does not hold a state dict (a dict of tensors) at its top level");
  }
  std::vector<PthTensorRecord> records;
  records.reserve(root->dict.size());
  for (const auto& [key, value] : root->dict) {
    if (key->kind != Kind::String) {
      throw std::runtime_error("'" + origin + "' has a state-dict key that is not a string");
    }
    if (value->kind != Kind::Tensor) {
      throw std::runtime_error("'" + origin + "': the state-dict entry '" + key->s + "' is not a tensor");
    }
    PthTensorRecord r = value->tensor;
    r.name = key->s;
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace vidgraph::model_io
