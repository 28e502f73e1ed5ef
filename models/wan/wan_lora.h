// LoRA files for the Wan DiT and their application without a second copy of the model.
//
// Layouts read (any prefix `diffusion_model.`, `model.diffusion_model.`, `transformer.`,
// `base_model.model.`, or none):
//   ComfyUI / kohya / lightx2v / Kijai: `<module>.lora_down.weight` [r, in], `.lora_up.weight` [out, r],
//     optional `.alpha` (scalar), `.diff` (full delta of the weight), `.diff_b` (of the bias), with
//     official module names (`blocks.0.self_attn.q`) or kohya's underscores
//     (`lora_unet_blocks_0_self_attn_q`);
//   diffusers / PEFT: `<module>.lora_A.weight` / `.lora_B.weight` with diffusers module names
//     (`blocks.0.attn1.to_q`, `attn2.*`, `ffn.net.0.proj`, `ffn.net.2`, `proj_out`, ...);
//   sparse-attention extras as plain tensors (`blocks.N.self_attn.to_gate_compress.{weight,bias}`,
//     `blocks.N.self_attn.proj_l.*`, as Vidgraph's trainer writes them): they become the model's own
//     (full tensors, not deltas: strength does not scale them).
// Result per layer: W' = W + strength · (alpha / r) · up · down (alpha absent: alpha = r);
// W' = W + strength · diff; b' = b + strength · diff_b. Sums are taken in fp32 on the weight's device
// and rounded once to its dtype.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "models/wan/wan_model.h"

namespace vidgraph::wan {

// The tensors of one LoRA module, as stored (module name with the prefix stripped).
struct WanLoraModule {
  at::Tensor up, down, alpha, diff, diff_b;
  at::Tensor weight, bias;  // plain tensors (sparse extras)
  std::string first_key;    // a stored key of this module, for messages
};

struct WanLora {
  std::string path;
  std::map<std::string, WanLoraModule> modules;  // stored module name -> tensors
  std::vector<std::string> other_keys;           // keys that are no LoRA tensor at all
};

// Reads a LoRA file (.safetensors; .pth and .gguf are read too) to fp32 CPU tensors. Throws
// std::runtime_error naming the file when it is unreadable or holds no LoRA tensor.
WanLora wan_read_lora(const std::string& path);

struct WanLoraResult {
  // Shares every parameter the LoRA leaves alone with the base model (same storage); holds its own
  // tensors only for the touched ones.
  std::shared_ptr<WanModelImpl> model;
  int64_t layers_patched = 0;           // parameters changed or added
  std::size_t private_bytes = 0;        // bytes of those parameters
  std::vector<std::string> unmatched;   // stored keys that name no parameter of this model
};

// Applies `lora` at `strength` to a new model over `base`, which is left unchanged. Throws
// std::runtime_error naming the file: when nothing in it matches ("this LoRA is not for
// Wan2.2-TI2V-5B"), when a layer's shapes do not fit the model (a LoRA for another model; the first
// such layer is named), or when a module is incomplete (lora_up without lora_down).
WanLoraResult wan_apply_lora(WanModelImpl& base, const WanLora& lora, double strength);

// "3 of 250 LoRA keys match no layer of the model, e.g. 'a', 'b', 'c'" or "" when all matched.
std::string wan_lora_unmatched_sentence(const WanLora& lora, const WanLoraResult& result);

}  // namespace vidgraph::wan
