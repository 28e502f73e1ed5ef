// Implements model_file_info.h over the safetensors and .pth readers (headers only).
#include "model_file_info.h"

#include <filesystem>
#include <map>
#include <vector>

#include <c10/core/ScalarType.h>

#include "dit_key_prefixes.h"
#include "file_kind.h"
#include "gguf.h"
#include "pth_reader.h"
#include "safetensors.h"
#include "tensor_file.h"
#include "wan_dit_identity.h"

namespace vidgraph::model_io {

namespace {

struct Tensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (const int64_t d : shape) n *= d;
  return n;
}

std::string strip_prefix(const std::string& name) {
  for (const char* prefix : kDitKeyPrefixes) {
    const std::string p = prefix;
    if (name.rfind(p, 0) == 0) return name.substr(p.size());
  }
  return name;
}

// (name, shape) of each tensor, as wan_dit_identity.h takes them.
std::vector<std::pair<std::string, std::vector<int64_t>>> shapes_of(const std::vector<Tensor>& tensors) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  shapes.reserve(tensors.size());
  for (const Tensor& t : tensors) shapes.emplace_back(t.name, t.shape);
  return shapes;
}

// The Wan DiT the tensors are (wan_dit_identity.h).
WanDitIdentity identify(const std::vector<Tensor>& tensors, const std::string& path) {
  return identify_wan_dit(shapes_of(tensors), path);
}

std::string detect(const std::vector<Tensor>& tensors, const std::string& path, bool* has_tokenizer,
                   WanDitIdentity* dit) {
  std::map<std::string, const Tensor*> by_name;
  bool lora = false;
  for (const Tensor& t : tensors) {
    by_name[strip_prefix(t.name)] = &t;
    lora = lora || t.name.find("lora_down") != std::string::npos || t.name.find("lora_A") != std::string::npos ||
           t.name.find("lora_up") != std::string::npos;
  }
  *has_tokenizer = by_name.count("spiece_model") > 0;
  auto shape = [&](const char* name) {
    const auto it = by_name.find(name);
    return it == by_name.end() ? std::vector<int64_t>{} : it->second->shape;
  };
  if (lora) return "lora";
  if (by_name.count("head.modulation") || by_name.count("scale_shift_table")) {
    *dit = identify(tensors, path);
    if (!dit->id.empty()) return dit->id;
  }
  // VAE: the decoder's first conv takes z_dim channels (48 in Wan2.2, 16 in Wan2.1).
  for (const char* conv : {"decoder.conv1.weight", "decoder.conv_in.weight"}) {
    const std::vector<int64_t> s = shape(conv);
    if (s.size() == 5) return s[1] == 48 ? "wan2.2-vae" : s[1] == 16 ? "wan2.1-vae" : "";
  }
  // TAEHV (taew2_2.pth, taew2_1.pth): a sequential decoder, its first conv 4-d, its last at index 22.
  if (shape("decoder.1.weight").size() == 4 && shape("decoder.22.weight").size() == 4) return "taehv";
  for (const char* embedding : {"shared.weight", "encoder.embed_tokens.weight", "token_embedding.weight", "token_embd.weight"}) {
    const std::vector<int64_t> s = shape(embedding);
    const bool t5 = by_name.count("encoder.block.0.layer.0.SelfAttention.q.weight") ||
                    by_name.count("blocks.0.attn.q.weight") || by_name.count("enc.blk.0.attn_q.weight");
    if (s.size() == 2 && t5) return s[0] == 256384 && s[1] == 4096 ? "umt5-xxl" : "t5";
  }
  return "";
}

void summarise(ModelFileInfo& info, const std::vector<Tensor>& tensors) {
  std::map<std::string, int64_t> elements;
  for (const Tensor& t : tensors) elements[t.dtype] += numel(t.shape);
  int64_t most = -1;
  for (const auto& [dtype, n] : elements) {
    if (n > most) {
      most = n;
      info.dtype = dtype;
    }
  }
  info.tensors = int64_t(tensors.size());
  WanDitIdentity dit{};
  info.detected = detect(tensors, info.path, &info.has_tokenizer, &dit);
  info.model = dit.id.empty() ? "" : wan_dit_description(dit);
  if (info.detected == "lora") info.model = wan_lora_description(shapes_of(tensors), info.path);
  info.unsupported = dit.unsupported;
}

std::vector<Tensor> safetensors_tensors(const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  std::vector<Tensor> out;
  for (const std::string& name : file.names()) {
    const SafetensorsEntry& e = file.entry(name);
    out.push_back({e.name, e.dtype, e.shape});
  }
  return out;
}

// llama.cpp's names for a GGUF umT5 (token_embd, enc.blk.N.attn_q, ...) are detected above; a GGUF's
// tokenizer is its tokenizer.ggml.* metadata.
std::vector<Tensor> gguf_tensors(const std::string& path, bool* has_tokenizer) {
  // Listing: the tokenizer's arrays (megabytes) are checked but not kept; only the key is shown.
  const GgufFile file = GgufFile::open(path, GgufRead::Listing);
  *has_tokenizer = file.header().metadata.count("tokenizer.ggml.tokens") > 0;
  std::vector<Tensor> out;
  for (const GgufTensorInfo& t : file.tensors()) out.push_back({t.name, ggml_type_info(t.type).name, t.shape});
  return out;
}

std::vector<Tensor> pth_tensors(const std::string& path) {
  const PthReader reader = PthReader::open(path);
  std::vector<Tensor> out;
  for (const PthTensorRecord& r : reader.tensors()) out.push_back({r.name, c10::toString(r.dtype), r.sizes});
  return out;
}

}  // namespace

ModelFileInfo inspect_model_file(const std::string& path) {
  ModelFileInfo info;
  info.path = path;
  std::error_code ec;
  info.bytes = std::filesystem::file_size(path, ec);
  try {
    const FileKind kind = sniff_file_kind(read_file_head(path));
    switch (kind) {
      case FileKind::Safetensors:
        info.format = "safetensors";
        summarise(info, safetensors_tensors(path));
        break;
      case FileKind::Zip:
        info.format = "pth";
        summarise(info, pth_tensors(path));
        break;
      case FileKind::Gguf: {
        info.format = "gguf";
        bool tokenizer = false;
        summarise(info, gguf_tensors(path, &tokenizer));
        info.has_tokenizer = info.has_tokenizer || tokenizer;
        break;
      }
      default:
        info.format = "unknown";
        info.error = "'" + path + "' is " + file_kind_sentence(kind);
    }
  } catch (const std::exception& e) {
    if (info.format.empty()) info.format = "unknown";
    info.error = e.what();
  }
  return info;
}

ModelFileInfo inspect_headers(const std::string& path, const std::vector<std::shared_ptr<const TensorFile>>& headers) {
  ModelFileInfo info;
  info.path = path;
  std::vector<Tensor> tensors;
  for (const auto& header : headers) {
    for (const TensorFileEntry& e : header->entries()) tensors.push_back({e.name, e.dtype, e.shape});
  }
  summarise(info, tensors);
  for (const auto& header : headers) {
    const GgufFile* gguf = header->gguf();
    if (gguf != nullptr && gguf->header().metadata.count("tokenizer.ggml.tokens") > 0) info.has_tokenizer = true;
  }
  return info;
}

bool detected_kind(const ModelFileInfo& info, ModelKind* kind) {
  const std::string& d = info.detected;
  if (d.rfind("wan2.", 0) == 0 && d.find("-vae") == std::string::npos) *kind = ModelKind::Dit;
  else if (d == "wan-dit" || d == "wan-vace") *kind = ModelKind::Dit;
  else if (d == "wan2.2-vae" || d == "wan2.1-vae") *kind = ModelKind::Vae;
  else if (d == "umt5-xxl" || d == "t5") *kind = ModelKind::TextEncoder;
  else if (d == "lora") *kind = ModelKind::Lora;
  else if (d == "taehv") *kind = ModelKind::LightVae;
  else return false;
  return true;
}

}  // namespace vidgraph::model_io
