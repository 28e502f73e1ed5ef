// What a weight file holds, told cheaply from its header (safetensors JSON header, the .pth
// pickle, the GGUF header) without reading any tensor data: format, main dtype, and which Wan2.2
// part it is by its tensor names and shapes. For listing model folders and picking files in them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model_folders.h"

namespace vidgraph::model_io {

class TensorFile;

struct ModelFileInfo {
  std::string path;
  std::uint64_t bytes = 0;
  std::string format;       // "safetensors", "pth", "gguf", or "unknown"
  std::string dtype;        // the dtype most of its tensor elements have ("F16", "BF16", "F8_E4M3"), or ""
  std::int64_t tensors = 0;
  // What it is, from tensor names and shapes (empty when not told):
  //   a Wan DiT's id from wan_dit_identity.h ("wan2.2-ti2v-5b", "wan2.2-t2v-a14b", "wan2.1-t2v-1.3b",
  //   ..., "wan-dit" for another size), "wan2.2-vae" (decoder input z_dim 48), "wan2.1-vae"
  //   (z_dim 16), "umt5-xxl" (vocab 256,384 x 4096), "t5" (another T5 encoder), "lora", "taehv" (a
//   TAEHV light decoder).
  std::string detected;
  std::string model;        // a DiT: "Wan2.2-T2V-A14B (high-noise expert)"; a LoRA: "LoRA for Wan2.2-TI2V-5B"; else ""
  std::string unsupported;  // a DiT Vidgraph does not run: why; else ""
  bool has_tokenizer = false;  // carries its tokenizer: ComfyUI's `spiece_model` tensor, GGUF tokenizer metadata
  std::string error;           // why the header could not be read ("" when it could)
};

// Never throws: a file that cannot be read is returned with `error` set.
ModelFileInfo inspect_model_file(const std::string& path);

// The same from headers already read (tensor_file.h), taken together: every shard of one part,
// `path` the part (a DiT's expert is told from it). Fills dtype, tensors, detected, model,
// unsupported and has_tokenizer (a `spiece_model` tensor or a GGUF's `tokenizer.ggml.*`); format
// and bytes stay empty.
ModelFileInfo inspect_headers(const std::string& path, const std::vector<std::shared_ptr<const TensorFile>>& headers);

// The kind of part `info.detected` names; false when nothing was detected.
bool detected_kind(const ModelFileInfo& info, ModelKind* kind);

}  // namespace vidgraph::model_io
