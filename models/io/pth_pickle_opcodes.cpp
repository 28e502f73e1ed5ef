// The opcode loop of the restricted unpickler (pth_unpickler.h): each accepted opcode, and the
// refusal of every other.
#include "pth_unpickler.h"

#include <cstring>

namespace vidgraph::model_io::pickle {

// One opcode other than STOP; false when it is not one we accept.
bool Unpickler::step(unsigned char op) {
  switch (op) {
    case 0x80:  // PROTO
      if (*take(1) > 5) {
        fail("unsupported pickle protocol");
      }
      return true;
    case 0x95:  // FRAME
      take(8);
      return true;
    case 'c': {  // GLOBAL
      const std::string module = line();
      const std::string name = line();
      push_global(module, name);
      return true;
    }
    case 0x93: {  // STACK_GLOBAL
      const Ref name = pop();
      const Ref module = pop();
      if (at(module).kind != Kind::String || at(name).kind != Kind::String) {
        fail("STACK_GLOBAL without two strings");
      }
      push_global(at(module).s, at(name).s);
      return true;
    }
    case 'q':  // BINPUT
      memo_put(uint_le(1));
      return true;
    case 'r':  // LONG_BINPUT
      memo_put(uint_le(4));
      return true;
    case 0x94:  // MEMOIZE
      memo_put(memo_.size());
      return true;
    case 'h':  // BINGET
      push(memo_get(uint_le(1)));
      return true;
    case 'j':  // LONG_BINGET
      push(memo_get(uint_le(4)));
      return true;
    case '(':  // MARK
      marks_.push_back(stack_.size());
      return true;
    case ')':  // EMPTY_TUPLE
      push(tuple({}));
      return true;
    case 't':  // TUPLE
      push(tuple(pop_to_mark()));
      return true;
    case 0x85: {  // TUPLE1
      const Ref a = pop();
      push(tuple({a}));
      return true;
    }
    case 0x86: {  // TUPLE2
      const Ref b = pop();
      const Ref a = pop();
      push(tuple({a, b}));
      return true;
    }
    case 0x87: {  // TUPLE3
      const Ref c = pop();
      const Ref b = pop();
      const Ref a = pop();
      push(tuple({a, b, c}));
      return true;
    }
    case '}':  // EMPTY_DICT
      push(make(Kind::Dict));
      return true;
    case ']':  // EMPTY_LIST
      push(make(Kind::List));
      return true;
    case 'N':
      push(make(Kind::None));
      return true;
    case 0x88:  // NEWTRUE
    case 0x89: {  // NEWFALSE
      const Ref b = make(Kind::Bool);
      at(b).i = op == 0x88;
      push(b);
      return true;
    }
    case 'K':  // BININT1
      push(make_int(int64_t(uint_le(1))));
      return true;
    case 'M':  // BININT2
      push(make_int(int64_t(uint_le(2))));
      return true;
    case 'J':  // BININT
      push(make_int(int64_t(int32_t(uint_le(4)))));
      return true;
    case 0x8a: {  // LONG1
      const size_t n = size_t(uint_le(1));
      if (n > 8) {
        fail("an integer wider than 64 bits");
      }
      uint64_t raw = n ? uint_le(n) : 0;
      if (n > 0 && n < 8 && (raw >> (8 * n - 1)) & 1) {
        raw |= ~uint64_t(0) << (8 * n);
      }
      push(make_int(int64_t(raw)));
      return true;
    }
    case 'G': {  // BINFLOAT (big-endian)
      const unsigned char* p = take(8);
      uint64_t bits = 0;
      for (int k = 0; k < 8; ++k) {
        bits = (bits << 8) | p[k];
      }
      const Ref v = make(Kind::Float);
      std::memcpy(&at(v).f, &bits, 8);
      push(v);
      return true;
    }
    case 'X':     // BINUNICODE
    case 0x8c:    // SHORT_BINUNICODE
    case 0x8d:    // BINUNICODE8
    case 'U':     // SHORT_BINSTRING
    case 'T': {   // BINSTRING
      const size_t width = (op == 'X' || op == 'T') ? 4 : op == 0x8d ? 8 : 1;
      const uint64_t n = uint_le(width);
      const unsigned char* p = take(size_t(n));  // bounds-checked before anything is allocated
      const Ref v = make(Kind::String);
      at(v).s.assign(reinterpret_cast<const char*>(p), size_t(n));
      push(v);
      return true;
    }
    case 'Q': {  // BINPERSID
      const Ref pid = pop();
      push(persistent_load(pid));
      return true;
    }
    case 'R': {  // REDUCE
      const Ref args = pop();
      const Ref fn = pop();
      push(reduce(fn, args));
      return true;
    }
    case 'b': {  // BUILD: only the `_metadata` state of an OrderedDict, which we do not need
      const Ref state = pop();
      if (at(top()).kind != Kind::Dict || (at(state).kind != Kind::Dict && at(state).kind != Kind::Tuple)) {
        fail("BUILD on something other than a state dict");
      }
      return true;
    }
    case 's': {  // SETITEM
      const Ref v = pop();
      const Ref k = pop();
      set_items(top(), {k, v});
      return true;
    }
    case 'u': {  // SETITEMS
      const std::vector<Ref> kv = pop_to_mark();
      set_items(top(), kv);
      return true;
    }
    case 'a': {  // APPEND
      const Ref v = pop();
      if (at(top()).kind != Kind::List) {
        fail("APPEND on a non-list");
      }
      add_child(top(), v);
      return true;
    }
    case 'e': {  // APPENDS
      const std::vector<Ref> vs = pop_to_mark();
      if (at(top()).kind != Kind::List) {
        fail("APPENDS on a non-list");
      }
      for (Ref v : vs) {
        add_child(top(), v);
      }
      return true;
    }
    default:
      return false;
  }
}

}  // namespace vidgraph::model_io::pickle
