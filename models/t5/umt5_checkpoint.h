// Loading and saving umT5 encoder weights and the tokenizer in the layouts users have:
// - official (`models_t5_umt5-xxl-enc-bf16.pth`): our module keys (umt5_encoder.h);
// - llama.cpp GGUF (city96's `umt5-xxl-encoder-Q8_0.gguf`, ...): names as umt5_key_from_llama maps
//   them, quantised tensors dequantised (models/io/gguf.h). Its tokenizer lives in GGUF metadata
//   (`tokenizer.ggml.*`), rebuilt into a SentencePiece model by spiece_from_gguf.h;
// - Hugging Face / Comfy (`text_encoder/` shards of a *-Diffusers repo, `umt5_xxl_fp16.safetensors`):
//   `shared.weight` (or `encoder.embed_tokens.weight`), `encoder.block.{i}.layer.0.SelfAttention.
//   {q,k,v,o,relative_attention_bias}.weight`, `layer.0.layer_norm`, `layer.1.DenseReluDense.
//   {wi_0 (gate), wi_1 (fc1), wo (fc2)}`, `layer.1.layer_norm`, `encoder.final_layer_norm`.
// A prefix in front of the first block's keys is stripped; decoder / lm_head tensors of a full T5
// are ignored; fp8 (scaled) weights of ComfyUI's `umt5_xxl_fp8_e4m3fn_scaled.safetensors` are
// dequantised (models/io/scaled_fp8.h) and its `spiece_model` tensor is the tokenizer
// (load_umt5_embedded_tokenizer). The config is derived from the tensor shapes. Every missing, unexpected or
// mis-shaped tensor is a std::runtime_error naming the file, the tensor and both shapes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "models/io/safetensors.h"
#include "umt5_encoder.h"
#include "umt5_tokenizer.h"

namespace vidgraph::t5 {

enum class Umt5Layout { Official, HuggingFace };

std::string umt5_key_to_hf(const std::string& official);
std::string umt5_key_from_hf(const std::string& hf);
// llama.cpp names (city96's `umt5-xxl-encoder-*.gguf`): `token_embd.weight`, `enc.blk.{i}.attn_q`,
// `attn_k`, `attn_v`, `attn_o`, `attn_rel_b`, `attn_norm`, `ffn_gate` (gate), `ffn_up` (fc1),
// `ffn_down` (fc2), `ffn_norm`, `enc.output_norm` -> official; other names are returned unchanged.
std::string umt5_key_from_llama(const std::string& llama);

// Official-key tensors of any layout. `origin` names the file in errors.
model_io::NamedTensors umt5_official_tensors(model_io::NamedTensors tensors, const std::string& origin);
Umt5Config detect_umt5_config(const model_io::NamedTensors& official, const std::string& origin);
// Parameters adopt the given tensors' dtype and device; strict like load_vae_weights.
void load_umt5_weights(Umt5Encoder& encoder, const model_io::NamedTensors& official, const std::string& origin);

// From a `.pth` / `.safetensors` file, or a folder of safetensors shards (itself or its
// `text_encoder/`), onto `device` in `dtype` (bf16 is the reference's dtype).
std::shared_ptr<Umt5Encoder> load_umt5(const std::string& path, c10::Device device = c10::Device(c10::kCPU),
                                       at::ScalarType dtype = at::kBFloat16);
// From `spiece.model` itself or a folder holding it (directly, in `tokenizer/` or `google/umt5-xxl/`).
Umt5Tokenizer load_umt5_tokenizer(const std::string& path);
// The tokenizer a weights file carries: ComfyUI's `umt5_xxl_*.safetensors` hold the spiece.model bytes
// as a U8 tensor `spiece_model` (load_umt5 ignores it); a GGUF its `tokenizer.ggml.*` metadata.
// nullopt when the file (or, for a folder, every shard) has none, or is a `.pth`. `origin`, when
// given, is set to where it was found, for messages ("FILE' tensor 'spiece_model").
std::optional<Umt5Tokenizer> load_umt5_embedded_tokenizer(const std::string& weights, std::string* origin = nullptr);

// Does `tokenizer` belong to an encoder whose embedding has `embedding_rows` rows? Errors
// (std::runtime_error naming both files): more pieces than rows (ids past the embedding); special
// ids other than umT5's (`<pad>` = 0, `</s>` = 1, `<unk>` = 2, also the demo model's); far fewer
// pieces than rows (more than umT5's 384 extra-id and padding rows: another model's tokenizer).
// Accepted: as many pieces as rows (the demo model), and umT5's 256,000 pieces for 256,384 rows.
// Any other pair it cannot be sure of (fewer pieces, at most 384 rows apart) returns a warning
// sentence; otherwise an empty string.
std::string check_umt5_tokenizer(const Umt5Tokenizer& tokenizer, int64_t embedding_rows, const std::string& weights,
                                 const std::string& tokenizer_origin);

// An encoder with deterministic pseudo-random weights from `seed`.
std::shared_ptr<Umt5Encoder> make_seeded_umt5(const Umt5Config& config, uint64_t seed);
void save_umt5_safetensors(const Umt5Encoder& encoder, const std::string& path,
                           Umt5Layout layout = Umt5Layout::Official, at::ScalarType dtype = at::kFloat);

} // namespace vidgraph::t5
