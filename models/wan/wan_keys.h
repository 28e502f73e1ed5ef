// Parameter-name conventions of Wan DiT checkpoints and the mapping to our canonical names (= the
// official Wan2.2 keys = our module tree).
//
//   Official   blocks.N.self_attn.q.weight, time_projection.1.weight, head.head.weight, ...
//   Diffusers  blocks.N.attn1.to_q.weight, condition_embedder.time_proj.weight, proj_out.weight,
//              blocks.N.norm2 <-> official norm3 (swapped), blocks.N.scale_shift_table, ...
// Either may carry a prefix (`model.diffusion_model.`, `diffusion_model.`, `model.`,
// `transformer.`), as single-file repacks do.
// Sparse extras: canonical `blocks.N.self_attn.to_gate_compress.*` and `blocks.N.self_attn.proj_l.*`;
// also read from FastVideo's `blocks.N.to_gate_compress.*` and TurboDiffusion's
// `blocks.N.self_attn.attn_op.local_attn.proj_l.*`; written in diffusers naming as
// `blocks.N.to_gate_compress.*` and `blocks.N.attn1.proj_l.*`.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace vidgraph::wan {

enum class KeyNaming { Official, Diffusers };

const char* key_naming_name(KeyNaming naming);

// The canonical name of a stored (prefix-stripped) name, or nullopt when it is not a Wan DiT key.
std::optional<std::string> canonical_key(const std::string& stored, KeyNaming naming);

// The stored name (without prefix) of a canonical name in `naming`.
std::string stored_key(const std::string& canonical, KeyNaming naming);

struct KeyScheme {
  KeyNaming naming = KeyNaming::Official;
  std::string prefix;  // stripped from every stored name before mapping
};

// Detects naming and prefix from all stored names: the prefix is the one that makes a known
// anchor key (patch_embedding.weight) appear; the naming is diffusers when `condition_embedder.`
// or `.attn1.` keys exist. Throws std::runtime_error when no known anchor exists, naming `source`.
KeyScheme detect_key_scheme(const std::vector<std::string>& stored_names, const std::string& source);

}  // namespace vidgraph::wan
