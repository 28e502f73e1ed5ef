#include "umt5_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include "models/io/gguf.h"
#include "models/io/scaled_fp8.h"
#include "models/io/model_part_files.h"
#include "models/io/state_dict_file.h"
#include "models/io/tensor_file.h"
#include "models/t5/spiece_from_gguf.h"

namespace vidgraph::t5 {

namespace {

using model_io::NamedTensors;

bool starts_with(const std::string& s, const std::string& p) {
  return s.compare(0, p.size(), p) == 0;
}

// Block-local renames: official suffix <-> HF suffix (after "blocks.{i}." / "encoder.block.{i}.").
const std::vector<std::pair<std::string, std::string>>& block_renames() {
  static const std::vector<std::pair<std::string, std::string>> r = {
      {"norm1.weight", "layer.0.layer_norm.weight"},
      {"attn.q.weight", "layer.0.SelfAttention.q.weight"},
      {"attn.k.weight", "layer.0.SelfAttention.k.weight"},
      {"attn.v.weight", "layer.0.SelfAttention.v.weight"},
      {"attn.o.weight", "layer.0.SelfAttention.o.weight"},
      {"pos_embedding.embedding.weight", "layer.0.SelfAttention.relative_attention_bias.weight"},
      {"norm2.weight", "layer.1.layer_norm.weight"},
      {"ffn.gate.0.weight", "layer.1.DenseReluDense.wi_0.weight"},
      {"ffn.fc1.weight", "layer.1.DenseReluDense.wi_1.weight"},
      {"ffn.fc2.weight", "layer.1.DenseReluDense.wo.weight"}};
  return r;
}

// llama.cpp's T5 encoder names (city96's umt5-xxl-encoder GGUF files), after "enc.blk.{i}.".
const std::vector<std::pair<std::string, std::string>>& llama_block_renames() {
  static const std::vector<std::pair<std::string, std::string>> r = {
      {"norm1.weight", "attn_norm.weight"},     {"attn.q.weight", "attn_q.weight"},
      {"attn.k.weight", "attn_k.weight"},       {"attn.v.weight", "attn_v.weight"},
      {"attn.o.weight", "attn_o.weight"},       {"pos_embedding.embedding.weight", "attn_rel_b.weight"},
      {"norm2.weight", "ffn_norm.weight"},      {"ffn.gate.0.weight", "ffn_gate.weight"},
      {"ffn.fc1.weight", "ffn_up.weight"},      {"ffn.fc2.weight", "ffn_down.weight"}};
  return r;
}

// The weight files of `path` (model_io::model_part_files' rule): itself, or the .safetensors shards
// of a folder (or of its text_encoder/).
std::vector<std::string> umt5_weight_files(const std::string& path) {
  model_io::ModelPartFiles part = model_io::model_part_files(model_io::ModelKind::TextEncoder, path);
  if (!part.folder.empty() && part.weights.empty()) {
    throw std::runtime_error("the " + part.problem);
  }
  return part.weights;
}

// A safetensors or GGUF weight file's header, shared with the checkpoint manifest that read it
// (TensorFile::open_shared); nullptr for a `.pth`, which load_state_dict_file reads whole.
std::shared_ptr<const model_io::TensorFile> open_header(const std::string& file) {
  const model_io::WeightFormat format = model_io::detect_weight_format(file);
  if (format != model_io::WeightFormat::Safetensors && format != model_io::WeightFormat::Gguf) return nullptr;
  return model_io::TensorFile::open_shared(file);
}

// ComfyUI's tokenizer tensor: `spiece_model`, also behind a prefix.
std::set<std::string> embedded_tokenizer_names(const model_io::SafetensorsFile& st) {
  std::set<std::string> out;
  const std::string name = "spiece_model";
  for (const std::string& k : st.names()) {
    const std::string tail = "." + name;
    if (k == name || (k.size() > tail.size() && k.compare(k.size() - tail.size(), tail.size(), tail) == 0)) {
      out.insert(k);
    }
  }
  return out;
}

}  // namespace

std::string umt5_key_to_hf(const std::string& key) {
  if (key == "token_embedding.weight") {
    return "shared.weight";
  }
  if (key == "norm.weight") {
    return "encoder.final_layer_norm.weight";
  }
  if (starts_with(key, "blocks.")) {
    const size_t dot = key.find('.', 7);
    const std::string index = key.substr(7, dot - 7);
    const std::string rest = dot == std::string::npos ? "" : key.substr(dot + 1);
    for (const auto& [official, hf] : block_renames()) {
      if (rest == official) {
        return "encoder.block." + index + "." + hf;
      }
    }
  }
  return key;
}

std::string umt5_key_from_hf(const std::string& key) {
  if (key == "shared.weight" || key == "encoder.embed_tokens.weight") {
    return "token_embedding.weight";
  }
  if (key == "encoder.final_layer_norm.weight") {
    return "norm.weight";
  }
  if (starts_with(key, "encoder.block.")) {
    const size_t dot = key.find('.', 14);
    const std::string index = key.substr(14, dot - 14);
    const std::string rest = dot == std::string::npos ? "" : key.substr(dot + 1);
    for (const auto& [official, hf] : block_renames()) {
      if (rest == hf) {
        return "blocks." + index + "." + official;
      }
    }
  }
  return key;
}

std::string umt5_key_from_llama(const std::string& key) {
  if (key == "token_embd.weight") {
    return "token_embedding.weight";
  }
  if (key == "enc.output_norm.weight") {
    return "norm.weight";
  }
  if (starts_with(key, "enc.blk.")) {
    const size_t dot = key.find('.', 8);
    const std::string index = key.substr(8, dot - 8);
    const std::string rest = dot == std::string::npos ? "" : key.substr(dot + 1);
    for (const auto& [official, llama] : llama_block_renames()) {
      if (rest == llama) {
        return "blocks." + index + "." + official;
      }
    }
  }
  return key;
}

NamedTensors umt5_official_tensors(NamedTensors tensors, const std::string& origin) {
  enum class Naming { Official, HuggingFace, Llama };
  std::string prefix;
  Naming naming = Naming::Official;
  bool found = false;
  const std::pair<const char*, Naming> anchors[] = {{"blocks.0.attn.q.weight", Naming::Official},
                                                    {"encoder.block.0.layer.0.SelfAttention.q.weight", Naming::HuggingFace},
                                                    {"enc.blk.0.attn_q.weight", Naming::Llama}};
  for (const auto& [k, t] : tensors) {
    for (const auto& [anchor_text, anchor_naming] : anchors) {
      const std::string anchor = anchor_text;
      if (k.size() >= anchor.size() && k.compare(k.size() - anchor.size(), anchor.size(), anchor) == 0 &&
          (k.size() == anchor.size() || k[k.size() - anchor.size() - 1] == '.')) {
        prefix = k.substr(0, k.size() - anchor.size());
        naming = anchor_naming;
        found = true;
      }
    }
  }
  if (!found) {
    throw std::runtime_error("'" + origin +
                             "' does not hold a umT5 encoder: no 'blocks.0.attn.q.weight' (official), "
                             "'encoder.block.0.layer.0.SelfAttention.q.weight' (Hugging Face) or "
                             "'enc.blk.0.attn_q.weight' (llama.cpp GGUF) tensor");
  }
  const bool hf = naming == Naming::HuggingFace;
  NamedTensors out;
  for (auto& [k, t] : tensors) {
    if (!starts_with(k, prefix)) {
      continue;
    }
    std::string key = k.substr(prefix.size());
    if ((hf && (starts_with(key, "decoder.") || starts_with(key, "lm_head."))) ||
        (naming == Naming::Llama && (starts_with(key, "dec.") || starts_with(key, "output.")))) {
      continue;  // a full T5: the decoder is not ours
    }
    key = hf ? umt5_key_from_hf(key) : naming == Naming::Llama ? umt5_key_from_llama(key) : key;
    if (!model_io::find_tensor(out, key)) {  // HF files may hold the tied embedding twice
      out.emplace_back(key, std::move(t));
    }
  }
  return out;
}

Umt5Config detect_umt5_config(const NamedTensors& official, const std::string& origin) {
  auto need = [&](const std::string& name) -> const at::Tensor& {
    const at::Tensor* t = model_io::find_tensor(official, name);
    if (t == nullptr || t->dim() != 2) {
      throw std::runtime_error("'" + origin + "' does not look like a umT5 encoder: tensor '" + name +
                               "' is missing or not a matrix");
    }
    return *t;
  };
  Umt5Config c;
  c.vocab = need("token_embedding.weight").size(0);
  c.dim = need("token_embedding.weight").size(1);
  c.dim_attn = need("blocks.0.attn.q.weight").size(0);
  c.dim_ffn = need("blocks.0.ffn.fc1.weight").size(0);
  const at::Tensor& rel = need("blocks.0.pos_embedding.embedding.weight");
  c.num_buckets = rel.size(0);
  c.num_heads = rel.size(1);
  c.num_layers = 0;
  while (model_io::find_tensor(official, "blocks." + std::to_string(c.num_layers) + ".attn.q.weight")) {
    ++c.num_layers;
  }
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error("'" + origin + "': " + e.what());
  }
  return c;
}

void load_umt5_weights(Umt5Encoder& encoder, const NamedTensors& official, const std::string& origin) {
  model_io::load_strict(encoder.named_parameters(true), official, "umT5", origin);
}

std::shared_ptr<Umt5Encoder> load_umt5(const std::string& path, c10::Device device, at::ScalarType dtype) {
  NamedTensors all;
  for (const std::string& f : umt5_weight_files(path)) {
    NamedTensors part;
    if (const auto file = open_header(f)) {
      if (const model_io::SafetensorsFile* st = file->safetensors()) {
        part = model_io::load_safetensors_weights(*st, device, dtype, embedded_tokenizer_names(*st));
      } else {
        const std::string arch = file->gguf()->architecture();
        if (!arch.empty() && arch != "t5" && arch != "t5encoder") {
          throw std::runtime_error("'" + f + "' is a GGUF of a '" + arch +
                                   "' model (general.architecture), not a umT5 text encoder ('t5' or 't5encoder')");
        }
        part = file->load_all(device, dtype);
      }
    } else {
      part = model_io::load_state_dict_file(f, device, dtype);
    }
    std::move(part.begin(), part.end(), std::back_inserter(all));
  }
  NamedTensors official = umt5_official_tensors(std::move(all), path);
  auto encoder = std::make_shared<Umt5Encoder>(detect_umt5_config(official, path));
  load_umt5_weights(*encoder, official, path);
  return encoder;
}

Umt5Tokenizer load_umt5_tokenizer(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(path)) {
    return Umt5Tokenizer::load(path);
  }
  for (const char* sub : {"spiece.model", "tokenizer/spiece.model", "google/umt5-xxl/spiece.model"}) {
    if (fs::exists(fs::path(path) / sub)) {
      return Umt5Tokenizer::load((fs::path(path) / sub).string());
    }
  }
  throw std::runtime_error("the folder '" + path +
                           "' has no spiece.model (looked in ., tokenizer/ and "
                           "google/umt5-xxl/); point at the umT5 SentencePiece model file");
}

std::optional<Umt5Tokenizer> load_umt5_embedded_tokenizer(const std::string& weights, std::string* origin) {
  for (const std::string& f : umt5_weight_files(weights)) {
    const auto file = open_header(f);
    if (!file) continue;  // a .pth carries no tokenizer
    if (const model_io::GgufFile* gguf = file->gguf()) {
      const std::optional<std::string> model = spiece_model_from_gguf(gguf->header(), f);
      if (!model) continue;
      const std::string where = f + "' metadata 'tokenizer.ggml";
      if (origin != nullptr) *origin = where;
      return Umt5Tokenizer::load_from_bytes(*model, where);
    }
    const model_io::SafetensorsFile& st = *file->safetensors();
    for (const std::string& name : embedded_tokenizer_names(st)) {
      const model_io::SafetensorsEntry& e = st.entry(name);
      if (e.dtype != "U8" || e.shape.size() != 1) {
        throw std::runtime_error("'" + f + "': the tokenizer tensor '" + name + "' is " + e.dtype + " of " +
                                 std::to_string(e.shape.size()) + " dimension(s), expected the 1-D U8 bytes of a "
                                 "SentencePiece model");
      }
      const at::Tensor bytes = st.load(name);
      const std::string data(static_cast<const char*>(bytes.data_ptr()), size_t(bytes.numel()));
      if (origin != nullptr) *origin = f + "' tensor '" + name;
      return Umt5Tokenizer::load_from_bytes(data, f + "' tensor '" + name);
    }
  }
  return std::nullopt;
}

std::string check_umt5_tokenizer(const Umt5Tokenizer& tok, int64_t rows, const std::string& weights,
                                 const std::string& origin) {
  const std::string pair = "the tokenizer '" + origin + "' does not belong to the text encoder '" + weights + "': ";
  const std::string fix = "; use the tokenizer of this encoder (for Wan2.2: google/umt5-xxl/spiece.model).";
  const int64_t size = tok.vocab_size();
  if (size > rows) {
    throw std::runtime_error(pair + "it has " + std::to_string(size) + " pieces, the encoder's embedding only " +
                             std::to_string(rows) + " rows" + fix);
  }
  struct Special {
    const char* piece;
    int64_t id;
  };
  for (const Special sp : {Special{"<pad>", 0}, Special{"</s>", 1}, Special{"<unk>", 2}}) {
    const int64_t got = tok.piece_id(sp.piece);
    if (got != sp.id) {
      throw std::runtime_error(pair + "its piece '" + sp.piece + "' has id " + std::to_string(got) + ", umT5's is " +
                               std::to_string(sp.id) + fix);
    }
  }
  if (tok.pad_id() != 0 || tok.eos_id() != 1 || tok.unk_id() != 2) {
    throw std::runtime_error(pair + "its pad / eos / unk ids are " + std::to_string(tok.pad_id()) + " / " +
                             std::to_string(tok.eos_id()) + " / " + std::to_string(tok.unk_id()) +
                             ", umT5's are 0 / 1 / 2" + fix);
  }
  constexpr int64_t kUmt5Pieces = 256000, kUmt5Rows = 256384, kExtraRows = kUmt5Rows - kUmt5Pieces;
  if (size == rows || (size == kUmt5Pieces && rows == kUmt5Rows)) {
    return {};
  }
  if (rows - size > kExtraRows) {
    throw std::runtime_error(pair + "it has " + std::to_string(size) + " pieces for an embedding of " +
                             std::to_string(rows) + " rows, " + std::to_string(rows - size) +
                             " more (umT5 has 384 more: extra ids and padding)" + fix);
  }
  return "the tokenizer '" + origin + "' has " + std::to_string(size) + " pieces and the text encoder '" + weights +
         "' " + std::to_string(rows) + " embedding rows; they may not belong together (umT5: 256000 and 256384). "
         "If the video ignores the prompt, give the encoder's own tokenizer.";
}

std::shared_ptr<Umt5Encoder> make_seeded_umt5(const Umt5Config& config, uint64_t seed) {
  auto encoder = std::make_shared<Umt5Encoder>(config);
  at::Generator gen = at::detail::createCPUGenerator(seed);
  c10::NoGradGuard no_grad;
  for (auto& item : encoder->named_parameters(true)) {
    at::Tensor& p = item.value();
    const std::string& k = item.key();
    at::Tensor r = at::randn(p.sizes(), gen, at::TensorOptions().dtype(at::kFloat));
    if (k.find("norm") != std::string::npos) {
      r = 1.0 + 0.1 * r;
    } else if (k.find("pos_embedding") != std::string::npos) {
      r = 0.5 * r;
    } else if (k != "token_embedding.weight") {
      r = r / std::sqrt(double(p.size(1)));
    }
    p.set_data(r.to(p.device(), p.scalar_type()));
  }
  return encoder;
}

void save_umt5_safetensors(const Umt5Encoder& encoder, const std::string& path, Umt5Layout layout,
                           at::ScalarType dtype) {
  NamedTensors out;
  for (const auto& item : encoder.named_parameters(true)) {
    const std::string key = layout == Umt5Layout::Official ? item.key() : umt5_key_to_hf(item.key());
    out.emplace_back(key, item.value().detach().to(at::kCPU, dtype).contiguous());
  }
  model_io::save_safetensors(path, out, {{"format", "pt"}, {"vidgraph.model", "umt5-encoder"}});
}

}  // namespace vidgraph::t5
