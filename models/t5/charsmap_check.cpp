// The SentencePiece normaliser table check. See charsmap_check.h.
#include "models/t5/charsmap_check.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace vidgraph::t5 {
namespace {

// Normalizer::NormalizePrefix keeps the rules one place of a text matches in an array of 32
// (normalizer.h, kMaxTrieResultsSize) and reads past it when more match; SentencePiece's builder
// only writes tables with fewer (builder.cc), so that is the limit here too.
constexpr uint32_t kMaxMatches = 31;

// Darts-clone's unit fields (darts.h, DoubleArrayUnit). A leaf unit's label has bit 31 set, so it
// matches no byte and its other bits are a value, never an offset to follow.
bool has_leaf(uint32_t unit) {
  return ((unit >> 8) & 1) != 0;
}
uint32_t label(uint32_t unit) {
  return unit & ((1u << 31) | 0xFFu);
}
uint32_t offset(uint32_t unit) {
  return (unit >> 10) << ((unit & (1u << 9)) >> 6);
}
uint32_t value(uint32_t unit) {
  return unit & ((1u << 31) - 1);
}

struct Table {
  std::vector<uint32_t> units;
  std::string_view strings;
  size_t string_starts = 0;  // offsets below this start a NUL-terminated string: one past the last NUL
};

std::string layout_problem(std::string_view charsmap, Table& table) {
  const size_t size = charsmap.size();
  if (size <= 4) {
    return "is " + std::to_string(size) +
           " bytes long, too short for a SentencePiece normaliser table "
           "(a 4-byte trie size, the trie, then its strings)";
  }
  uint32_t trie_bytes = 0;
  std::memcpy(&trie_bytes, charsmap.data(), 4);  // little-endian hosts only, as the GGUF reader
  if (trie_bytes > size - 4) {
    return "declares a trie of " + std::to_string(trie_bytes) + " bytes, but only " + std::to_string(size - 4) +
           " bytes follow its size (truncated?)";
  }
  if (trie_bytes == 0 || trie_bytes % 4 != 0) {
    return "declares a trie of " + std::to_string(trie_bytes) + " bytes, not a whole number of 4-byte units";
  }
  table.units.resize(trie_bytes / 4);
  std::memcpy(table.units.data(), charsmap.data() + 4, trie_bytes);
  table.strings = charsmap.substr(4 + trie_bytes);
  const size_t last_nul = table.strings.rfind('\0');
  table.string_starts = last_nul == std::string_view::npos ? 0 : last_nul + 1;
  return {};
}

// Where `node`'s children start: commonPrefixSearch reads the unit at (node ^ offset) ^ byte for
// any next byte of the text, and a node's leaf at (node ^ offset), so all 256 must be in the trie.
std::string children_problem(const Table& table, uint32_t node, uint32_t& first_child) {
  first_child = node ^ offset(table.units[node]);
  if ((uint64_t(first_child) | 0xFFu) >= table.units.size()) {
    return "has a trie unit (" + std::to_string(node) + ") whose children lie outside the trie of " +
           std::to_string(table.units.size()) + " units";
  }
  return {};
}

// The normaliser reads a rule's string with strlen from strings + value.
std::string value_problem(const Table& table, uint32_t leaf) {
  const uint32_t v = value(table.units[leaf]);
  if (v >= table.strings.size()) {
    return "has a rule whose string offset " + std::to_string(v) + " lies outside its " +
           std::to_string(table.strings.size()) + " bytes of strings";
  }
  if (v >= table.string_starts) {
    return "has a rule whose string at offset " + std::to_string(v) + " is not NUL-terminated inside the strings";
  }
  return {};
}

struct Frame {
  uint32_t node;
  uint32_t first_child;
  uint32_t next_byte;
  uint32_t matches_in;  // 1 when reaching this node matched a rule
  uint32_t most_after;  // the most rules a text matches after this node, over the children seen
};

// Walks every state a text can reach from the root, depth first without recursion (a hostile trie
// is as deep as it is long); a state is a unit, each visited once, with the most rules any text
// matches from it on remembered for the states that share it (the trie is a DAWG: they may).
std::string walk_problem(const Table& table) {
  enum : uint8_t { kUnseen, kOnPath, kDone };
  std::vector<uint8_t> state(table.units.size(), kUnseen);
  std::vector<uint32_t> most(table.units.size(), 0);
  std::vector<Frame> stack;
  const auto enter = [&](uint32_t node, uint32_t matches_in) {
    uint32_t first_child = 0;
    std::string problem = children_problem(table, node, first_child);
    state[node] = kOnPath;
    stack.push_back({node, first_child, 0, matches_in, 0});
    return problem;
  };
  if (std::string p = enter(0, 0); !p.empty()) return p;
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.next_byte == 256) {
      const uint32_t total = f.matches_in + f.most_after;
      if (total > kMaxMatches) {
        return "has rules that match more than " + std::to_string(kMaxMatches) + " times at one place of a text";
      }
      most[f.node] = f.most_after;
      state[f.node] = kDone;
      stack.pop_back();
      if (!stack.empty()) stack.back().most_after = std::max(stack.back().most_after, total);
      continue;
    }
    const uint32_t byte = f.next_byte++;
    const uint32_t child = f.first_child ^ byte;
    const uint32_t unit = table.units[child];
    if (label(unit) != byte) continue;
    if (state[child] == kOnPath) return "has a trie that loops back to unit " + std::to_string(child);
    const uint32_t matches_in = has_leaf(unit) ? 1 : 0;
    if (state[child] == kDone) {
      f.most_after = std::max(f.most_after, matches_in + most[child]);
      continue;
    }
    if (std::string p = enter(child, matches_in); !p.empty()) return p;  // `f` is stale from here on
    if (matches_in == 1) {
      if (std::string p = value_problem(table, stack.back().first_child); !p.empty()) return p;
    }
  }
  return {};
}

}  // namespace

std::string charsmap_problem(std::string_view charsmap) {
  Table table;
  if (std::string p = layout_problem(charsmap, table); !p.empty()) return p;
  return walk_problem(table);
}

}  // namespace vidgraph::t5
