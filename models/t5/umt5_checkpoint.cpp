#include "umt5_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include "models/io/state_dict_file.h"

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

NamedTensors umt5_official_tensors(NamedTensors tensors, const std::string& origin) {
  std::string prefix;
  bool hf = false, found = false;
  for (const auto& [k, t] : tensors) {
    for (const std::string anchor : {"blocks.0.attn.q.weight", "encoder.block.0.layer.0.SelfAttention.q.weight"}) {
      if (k.size() >= anchor.size() && k.compare(k.size() - anchor.size(), anchor.size(), anchor) == 0 &&
          (k.size() == anchor.size() || k[k.size() - anchor.size() - 1] == '.')) {
        prefix = k.substr(0, k.size() - anchor.size());
        hf = anchor[0] == 'e';
        found = true;
      }
    }
  }
  if (!found) {
    throw std::runtime_error("'" + origin +
                             "' does not hold a umT5 encoder: no 'blocks.0.attn.q.weight' (official) or "
                             "'encoder.block.0.layer.0.SelfAttention.q.weight' (Hugging Face) tensor");
  }
  NamedTensors out;
  for (auto& [k, t] : tensors) {
    if (!starts_with(k, prefix)) {
      continue;
    }
    std::string key = k.substr(prefix.size());
    if (hf && (starts_with(key, "decoder.") || starts_with(key, "lm_head."))) {
      continue;  // a full T5: the decoder is not ours
    }
    key = hf ? umt5_key_from_hf(key) : key;
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
  std::map<std::string, const at::Tensor*> by_name;
  for (const auto& [k, t] : official) {
    by_name[k] = &t;
  }
  c10::NoGradGuard no_grad;
  std::vector<std::string> missing;
  for (auto& item : encoder.named_parameters(true)) {
    const auto it = by_name.find(item.key());
    if (it == by_name.end()) {
      missing.push_back(item.key());
      continue;
    }
    at::Tensor& param = item.value();
    if (it->second->sizes() != param.sizes()) {
      throw std::runtime_error("'" + origin + "': umT5 tensor '" + item.key() + "' has shape " +
                               model_io::shape_string(*it->second) + ", expected " + model_io::shape_string(param));
    }
    param.set_data(it->second->contiguous());  // adopts the given dtype and device
    by_name.erase(it);
  }
  if (!missing.empty()) {
    throw std::runtime_error("'" + origin + "' lacks " + std::to_string(missing.size()) + " umT5 tensor(s), first '" +
                             missing.front() + "'");
  }
  if (!by_name.empty()) {
    throw std::runtime_error("'" + origin + "' has " + std::to_string(by_name.size()) +
                             " tensor(s) the umT5 encoder does not use, first '" + by_name.begin()->first + "'");
  }
}

std::shared_ptr<Umt5Encoder> load_umt5(const std::string& path, c10::Device device, at::ScalarType dtype) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    const fs::path dir =
        fs::is_directory(fs::path(path) / "text_encoder") ? fs::path(path) / "text_encoder" : fs::path(path);
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (entry.path().extension() == ".safetensors") {
        files.push_back(entry.path().string());
      }
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) {
      throw std::runtime_error("the folder '" + dir.string() + "' has no .safetensors shards of a umT5 encoder");
    }
  } else {
    files.push_back(path);
  }
  NamedTensors all;
  for (const std::string& f : files) {
    NamedTensors part = model_io::load_state_dict_file(f, device, dtype);
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
