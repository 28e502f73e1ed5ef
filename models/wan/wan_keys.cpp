#include "models/wan/wan_keys.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <utility>

#include "models/io/dit_key_prefixes.h"

namespace vidgraph::wan {
namespace {

// (canonical suffix, diffusers suffix) for keys that are not inside a block.
const std::vector<std::pair<std::string, std::string>>& top_level_map() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"patch_embedding.", "patch_embedding."},
      {"text_embedding.0.", "condition_embedder.text_embedder.linear_1."},
      {"text_embedding.2.", "condition_embedder.text_embedder.linear_2."},
      {"time_embedding.0.", "condition_embedder.time_embedder.linear_1."},
      {"time_embedding.2.", "condition_embedder.time_embedder.linear_2."},
      {"time_projection.1.", "condition_embedder.time_proj."},
      {"head.head.", "proj_out."},
      {"head.modulation", "scale_shift_table"},
  };
  return m;
}

// (canonical, diffusers) for the part after "blocks.N.".
const std::vector<std::pair<std::string, std::string>>& block_map() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"modulation", "scale_shift_table"},     {"self_attn.q.", "attn1.to_q."},
      {"self_attn.k.", "attn1.to_k."},         {"self_attn.v.", "attn1.to_v."},
      {"self_attn.o.", "attn1.to_out.0."},     {"self_attn.norm_q.", "attn1.norm_q."},
      {"self_attn.norm_k.", "attn1.norm_k."},  {"self_attn.to_gate_compress.", "to_gate_compress."},
      {"self_attn.proj_l.", "attn1.proj_l."},  {"cross_attn.q.", "attn2.to_q."},
      {"cross_attn.k.", "attn2.to_k."},        {"cross_attn.v.", "attn2.to_v."},
      {"cross_attn.o.", "attn2.to_out.0."},    {"cross_attn.norm_q.", "attn2.norm_q."},
      {"cross_attn.norm_k.", "attn2.norm_k."}, {"norm3.", "norm2."},
      {"ffn.0.", "ffn.net.0.proj."},           {"ffn.2.", "ffn.net.2."},
  };
  return m;
}

// Extra stored spellings read in official naming (after "blocks.N."): stored -> canonical.
const std::vector<std::pair<std::string, std::string>>& official_aliases() {
  static const std::vector<std::pair<std::string, std::string>> m = {
      {"to_gate_compress.", "self_attn.to_gate_compress."},
      {"self_attn.attn_op.local_attn.proj_l.", "self_attn.proj_l."},
  };
  return m;
}

bool starts_with(const std::string& s, const std::string& p) {
  return s.size() >= p.size() && s.compare(0, p.size(), p) == 0;
}

// Splits "blocks.N.rest" into ("blocks.N.", "rest"); false if `name` is not a block key.
bool split_block(const std::string& name, std::string& head, std::string& rest) {
  if (!starts_with(name, "blocks.")) {
    return false;
  }
  size_t i = 7;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) {
    ++i;
  }
  if (i == 7 || i >= name.size() || name[i] != '.') {
    return false;
  }
  head = name.substr(0, i + 1);
  rest = name.substr(i + 1);
  return true;
}

// Maps `name` through a (from, to) prefix table: the entry whose `from` is a prefix (or the whole
// name for entries without a trailing dot).
std::optional<std::string> map_through(const std::string& name,
                                       const std::vector<std::pair<std::string, std::string>>& table, bool forward) {
  for (const auto& entry : table) {
    const std::string& from = forward ? entry.first : entry.second;
    const std::string& to = forward ? entry.second : entry.first;
    const bool exact = from.back() != '.';
    if (exact ? name == from : starts_with(name, from)) {
      return to + name.substr(from.size());
    }
  }
  return std::nullopt;
}

}  // namespace

const char* key_naming_name(KeyNaming naming) {
  return naming == KeyNaming::Official ? "official" : "diffusers";
}

std::optional<std::string> canonical_key(const std::string& stored, KeyNaming naming) {
  std::string head, rest;
  const bool in_block = split_block(stored, head, rest);
  if (naming == KeyNaming::Official) {
    if (in_block) {
      if (auto alias = map_through(rest, official_aliases(), /*forward=*/true)) {
        return head + *alias;
      }
      if (map_through(rest, block_map(), /*forward=*/true)) {
        return stored;
      }
      return std::nullopt;
    }
    return map_through(stored, top_level_map(), true) ? std::optional<std::string>(stored) : std::nullopt;
  }
  if (in_block) {
    if (auto c = map_through(rest, block_map(), /*forward=*/false)) {
      return head + *c;
    }
    return std::nullopt;
  }
  return map_through(stored, top_level_map(), /*forward=*/false);
}

std::string stored_key(const std::string& canonical, KeyNaming naming) {
  if (naming == KeyNaming::Official) {
    return canonical;
  }
  std::string head, rest;
  if (split_block(canonical, head, rest)) {
    if (auto d = map_through(rest, block_map(), /*forward=*/true)) {
      return head + *d;
    }
  } else if (auto d = map_through(canonical, top_level_map(), /*forward=*/true)) {
    return *d;
  }
  throw std::invalid_argument("'" + canonical + "' is not a Wan DiT parameter name.");
}

KeyScheme detect_key_scheme(const std::vector<std::string>& names, const std::string& source) {
  std::vector<std::string> prefixes = {""};
  prefixes.insert(prefixes.end(), model_io::kDitKeyPrefixes.begin(), model_io::kDitKeyPrefixes.end());
  for (const auto& prefix : prefixes) {
    if (std::find(names.begin(), names.end(), prefix + "patch_embedding.weight") == names.end()) {
      continue;
    }
    KeyScheme scheme;
    scheme.prefix = prefix;
    for (const auto& n : names) {
      if (starts_with(n, prefix + "condition_embedder.") ||
          (starts_with(n, prefix + "blocks.") && n.find(".attn1.") != std::string::npos)) {
        scheme.naming = KeyNaming::Diffusers;
        break;
      }
    }
    return scheme;
  }
  throw std::runtime_error("'" + source +
                           "' is not a Wan DiT checkpoint: no 'patch_embedding.weight' tensor (with or "
                           "without a 'model.diffusion_model.' prefix) was found.");
}

}  // namespace vidgraph::wan
