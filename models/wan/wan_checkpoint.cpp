#include "models/wan/wan_checkpoint.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <ATen/ops/zeros_like.h>
#include <nlohmann/json.hpp>

#include "models/io/checkpoint_manifest.h"
#include "models/io/model_part_files.h"
#include "models/io/safetensors.h"
#include "models/io/tensor_file.h"
#include "models/wan/wan_block_swap.h"
#include "models/wan/wan_log.h"

namespace fs = std::filesystem;

namespace vidgraph::wan {
namespace {

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(s[i]);
  }
  return out + "]";
}

bool is_sparse_extra(const std::string& canonical) {
  return canonical.find(".self_attn.to_gate_compress.") != std::string::npos ||
         canonical.find(".self_attn.proj_l.") != std::string::npos;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw std::runtime_error("Cannot read '" + path + "'.");
  }
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("'" + path + "' is not valid JSON: " + e.what());
  }
}

// A GGUF names its model; ComfyUI-GGUF's converter writes `wan` for Wan DiTs (stable-diffusion.cpp
// files may have none).
void check_gguf_architecture(const model_io::TensorFile& tf) {
  const auto it = tf.metadata().find("general.architecture");
  if (it != tf.metadata().end() && it->second != "wan") {
    throw std::runtime_error("'" + tf.path() + "' is a GGUF of a '" + it->second +
                             "' model (general.architecture), not a Wan DiT ('wan'); use a Wan2.2-TI2V-5B GGUF "
                             "such as QuantStack's Wan2.2-TI2V-5B-GGUF.");
  }
}

}  // namespace

const char* wan_layout_name(WanLayout layout) {
  switch (layout) {
    case WanLayout::Official:
      return "official";
    case WanLayout::Diffusers:
      return "diffusers";
    case WanLayout::SingleFile:
      return "single-file";
  }
  return "?";
}

WanCheckpointInfo wan_inspect_checkpoint(const std::string& path) {
  if (!fs::exists(path)) {
    throw std::runtime_error("Wan DiT checkpoint '" + path + "' does not exist.");
  }
  model_io::ManifestPart part;
  part.path = path;
  part.files = model_io::model_part_files(model_io::ModelKind::Dit, path);
  return wan_inspect_checkpoint(part);
}

WanCheckpointInfo wan_inspect_checkpoint(const model_io::ManifestPart& part) {
  WanCheckpointInfo info;
  info.path = part.path;
  const std::string& path = part.path;
  if (!part.files.problem.empty()) {
    throw std::runtime_error("Wan DiT checkpoint: " + part.files.problem +
                             "; point Vidgraph at the DiT weights (a .safetensors or .gguf file or its folder).");
  }
  info.files = part.files.weights;
  std::optional<nlohmann::json> hint;
  if (!part.files.config.empty()) {
    hint = read_json(part.files.config);
  }

  std::vector<std::string> stored_names;
  std::map<std::string, WanTensorSource> by_stored;
  for (const auto& file : info.files) {
    const size_t i = info.headers.size();
    info.headers.push_back(i < part.headers.size() ? part.headers[i] : model_io::TensorFile::open_shared(file));
    const model_io::TensorFile& tf = *info.headers.back();
    if (tf.is_gguf()) {
      check_gguf_architecture(tf);
    }
    for (const model_io::TensorFileEntry& e : tf.entries()) {
      if (by_stored.count(e.name)) {
        throw std::runtime_error("Tensor '" + e.name + "' appears in both '" + by_stored[e.name].file + "' and '" +
                                 file + "'.");
      }
      by_stored[e.name] = WanTensorSource{file, e.name, e.shape, e.dtype, e.is_float, e.unreadable};
      stored_names.push_back(e.name);
    }
    if (!hint) {
      auto it = tf.metadata().find("vidgraph_wan_config");
      if (it != tf.metadata().end()) {
        hint = nlohmann::json::parse(it->second, nullptr, /*allow_exceptions=*/false);
        if (!hint->is_object()) {
          throw std::runtime_error("'" + file +
                                   "' carries vidgraph_wan_config metadata that is not a JSON object: the file was "
                                   "damaged after it was written. Write the model again.");
        }
      }
    }
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> stored_shapes;
  for (const auto& [stored, source] : by_stored) stored_shapes.emplace_back(stored, source.shape);
  info.identity = model_io::identify_wan_dit(stored_shapes, path);
  if (!info.identity.unsupported.empty()) {
    throw std::runtime_error("'" + path + "' is " + model_io::wan_dit_description(info.identity) +
                             ", which Vidgraph does not run: " + info.identity.unsupported +
                             ". Vidgraph runs the Wan2.2 TI2V-5B, T2V-A14B and I2V-A14B DiTs and Wan2.1's "
                             "text-to-video DiTs.");
  }
  info.scheme = detect_key_scheme(stored_names, path);
  ShapeMap shapes;
  for (const auto& [stored, source] : by_stored) {
    const std::string& prefix = info.scheme.prefix;
    std::optional<std::string> canonical;
    if (stored.compare(0, prefix.size(), prefix) == 0) {
      canonical = canonical_key(stored.substr(prefix.size()), info.scheme.naming);
    }
    if (!canonical) {
      info.unknown.push_back(stored);
      continue;
    }
    if (info.tensors.count(*canonical)) {
      throw std::runtime_error("Wan DiT checkpoint '" + path + "' holds two tensors for '" + *canonical + "': '" +
                               info.tensors[*canonical].stored_name + "' and '" + stored + "'.");
    }
    info.tensors[*canonical] = source;
    shapes[*canonical] = source.shape;
  }
  info.config = WanConfig::detect_from_weights(shapes, hint ? &*hint : nullptr);
  info.layout = !part.files.folder.empty()
                    ? (info.scheme.naming == KeyNaming::Diffusers ? WanLayout::Diffusers : WanLayout::Official)
                    : WanLayout::SingleFile;
  return info;
}

void wan_load_weights(WanModelImpl& model, const WanCheckpointInfo& info, bool keep_fp8,
                      const WanLoadProgress& progress) {
  auto log = models_logger();
  const auto start = std::chrono::steady_clock::now();
  const auto params = wan_named_parameters(model);
  // Check everything before touching the model: a bad checkpoint leaves no half-loaded model.
  std::map<std::string, std::vector<std::pair<std::string, at::Tensor>>> per_file;
  std::vector<std::string> missing;
  int64_t zeroed = 0, total_bytes = 0, loaded_bytes = 0;
  for (const auto& [name, param] : params) {
    auto it = info.tensors.find(name);
    if (it == info.tensors.end()) {
      if (is_sparse_extra(name)) {
        ++zeroed;
        continue;
      }
      missing.push_back(name);
      continue;
    }
    const WanTensorSource& src = it->second;
    if (src.shape != param.sizes().vec()) {
      throw std::runtime_error("Wan DiT checkpoint '" + src.file + "': tensor '" + src.stored_name + "' (parameter '" +
                               name + "') has shape " + shape_str(src.shape) + ", expected " +
                               shape_str(param.sizes().vec()) + ".");
    }
    if (!src.unreadable.empty()) {
      throw std::runtime_error("Wan DiT checkpoint: " + src.unreadable + ".");
    }
    if (!src.is_float) {
      throw std::runtime_error("Wan DiT checkpoint '" + src.file + "': tensor '" + src.stored_name + "' has dtype " +
                               src.dtype + ", expected a float type (F32, F16, BF16, F64, F8_E4M3, F8_E5M2 or a GGUF quantisation).");
    }
    per_file[src.file].emplace_back(name, param);
    total_bytes += param.numel() * int64_t(param.element_size());
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size() && i < 5; ++i) {
      list += (i ? ", '" : "'") + missing[i] + "'";
    }
    throw std::runtime_error("Wan DiT checkpoint '" + info.path + "' lacks " + std::to_string(missing.size()) +
                             " tensor(s) the model needs: " + list + (missing.size() > 5 ? ", ..." : "") +
                             ". The file is incomplete or belongs to another model.");
  }
  if (!info.unknown.empty()) {  // one line: a foreign branch has hundreds of tensors
    std::string first;
    for (size_t i = 0; i < info.unknown.size() && i < 3; ++i) first += (i ? ", '" : "'") + info.unknown[i] + "'";
    log->warn("Wan DiT checkpoint '{}': skipping {} tensor(s) that are not Wan DiT weights: {}{}", info.path,
              info.unknown.size(), first, info.unknown.size() > 3 ? ", ..." : "");
  }
  std::map<std::string, WanLinearImpl*> linears;
  if (keep_fp8) linears = wan_linears_by_weight(model);
  int64_t kept_fp8 = 0;
  for (size_t f = 0; f < info.files.size(); ++f) {
    const std::string& file = info.files[f];
    auto it = per_file.find(file);
    if (it == per_file.end()) {
      continue;
    }
    const model_io::TensorFile& tf = *info.headers.at(f);
    for (auto& [name, param] : it->second) {
      const WanTensorSource& src = info.tensors.at(name);
      if (progress && !progress(loaded_bytes, total_bytes)) throw WanLoadStopped();
      loaded_bytes += param.numel() * int64_t(param.element_size());
      const auto linear = linears.find(name);
      if (linear != linears.end()) {
        if (auto fp8 = tf.load_fp8(src.stored_name, param.device())) {
          linear->second->keep_fp8(fp8->codes, fp8->format, fp8->scale, model.device());
          ++kept_fp8;
          continue;
        }
      }
      param.set_data(tf.load(src.stored_name, param.device(), param.scalar_type()));
    }
    log->debug("Wan DiT: loaded {} tensors from '{}'", it->second.size(), file);
  }
  for (auto& [name, param] : params) {
    if (!info.tensors.count(name)) {
      param.set_data(at::zeros_like(param));
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  log->info("Wan DiT: loaded {} tensors ({} layout, {} names{}{}) in {:.1f} s{}", params.size() - zeroed,
            wan_layout_name(info.layout), key_naming_name(info.scheme.naming),
            info.scheme.prefix.empty() ? "" : ", prefix ", info.scheme.prefix, secs,
            zeroed ? ", " + std::to_string(zeroed) + " sparse-attention extras zero-initialised" : "");
  if (keep_fp8) {
    if (kept_fp8 == 0) {
      log->warn("Wan DiT checkpoint '{}' has no fp8 linear weights: keep_fp8 changes nothing.", info.path);
    } else {
      log->info("Wan DiT: {} linear weights kept as fp8", kept_fp8);
    }
  }
}

WanModel wan_load_model(const std::string& path, const WanLoadOptions& options) {
  return wan_load_model(wan_inspect_checkpoint(path), options);
}

WanModel wan_load_model(const WanCheckpointInfo& info, const WanLoadOptions& options) {
  const std::string& path = info.path;
  WanModelOptions mo;
  mo.config = info.config;
  mo.config.with_gate_compress = mo.config.with_gate_compress || options.with_gate_compress;
  mo.config.with_proj_l = mo.config.with_proj_l || options.with_proj_l;
  mo.device = options.device;
  mo.compute_dtype = options.compute_dtype;
  if (options.offload_blocks < 0 || options.offload_blocks > mo.config.num_layers) {
    throw std::invalid_argument("Cannot offload " + std::to_string(options.offload_blocks) + " blocks of the Wan DiT '" +
                                path + "': it has " + std::to_string(mo.config.num_layers) +
                                " blocks; choose 0 to " + std::to_string(mo.config.num_layers) + ".");
  }
  mo.offload_blocks = options.offload_blocks;
  WanModel model(mo);
  wan_load_weights(*model, info, options.keep_fp8, options.progress);
  pin_offloaded_blocks(*model);
  return model;
}

namespace {

void write_json_atomic(const fs::path& path, const nlohmann::json& j) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << "\n";
    if (!out) {
      throw std::runtime_error("Cannot write '" + tmp.string() + "'.");
    }
  }
  fs::rename(tmp, path);
}

nlohmann::json diffusers_config(const WanConfig& c) {
  return nlohmann::json{{"_class_name", "WanTransformer3DModel"},
                        {"attention_head_dim", c.head_dim()},
                        {"num_attention_heads", c.num_heads},
                        {"in_channels", c.in_dim},
                        {"out_channels", c.out_dim},
                        {"text_dim", c.text_dim},
                        {"freq_dim", c.freq_dim},
                        {"ffn_dim", c.ffn_dim},
                        {"num_layers", c.num_layers},
                        {"patch_size", c.patch_size},
                        {"eps", c.eps},
                        {"text_len", c.text_len},
                        {"qk_norm", "rms_norm_across_heads"},
                        {"cross_attn_norm", true},
                        {"rope_max_seq_len", 1024},
                        {"vidgraph_with_gate_compress", c.with_gate_compress},
                        {"vidgraph_with_proj_l", c.with_proj_l}};
}

}  // namespace

void wan_save_checkpoint(WanModelImpl& model, const std::string& path, const WanSaveOptions& options) {
  const WanConfig& config = model.config();
  const bool folder = options.layout != WanLayout::SingleFile;
  const KeyNaming naming = options.layout == WanLayout::Diffusers ? KeyNaming::Diffusers : KeyNaming::Official;
  const std::string prefix = folder ? "" : options.prefix;
  model_io::NamedTensors tensors;
  for (const auto& [name, param] : wan_named_weights(model)) {
    at::Tensor t = param.detach();
    if (options.dtype) {
      t = t.to(*options.dtype);
    }
    tensors.emplace_back(prefix + stored_key(name, naming), t);
  }
  const std::map<std::string, std::string> metadata = {{"vidgraph_wan_config", config.to_json().dump()},
                                                       {"format", "pt"}};
  if (!folder) {
    model_io::save_safetensors(path, tensors, metadata);
    return;
  }
  const fs::path dir(path);
  fs::create_directories(dir);
  const int64_t shards = std::max<int64_t>(1, std::min<int64_t>(options.shards, tensors.size()));
  int64_t total = 0;
  for (const auto& [name, t] : tensors) {
    total += t.numel() * t.element_size();
  }
  nlohmann::json weight_map = nlohmann::json::object();
  size_t next = 0;
  int64_t written = 0;
  for (int64_t s = 0; s < shards; ++s) {
    char file[96];
    std::snprintf(file, sizeof(file), "diffusion_pytorch_model-%05lld-of-%05lld.safetensors",
                  static_cast<long long>(s + 1), static_cast<long long>(shards));
    model_io::NamedTensors part;
    // Fill this shard up to its share of the bytes, leaving at least one tensor per later shard.
    const int64_t target = total * (s + 1) / shards;
    while (next < tensors.size() && (part.empty() || written < target || s == shards - 1) &&
           tensors.size() - next > static_cast<size_t>(shards - 1 - s)) {
      written += tensors[next].second.numel() * tensors[next].second.element_size();
      weight_map[tensors[next].first] = file;
      part.push_back(tensors[next++]);
    }
    model_io::save_safetensors((dir / file).string(), part, metadata);
  }
  write_json_atomic(dir / "diffusion_pytorch_model.safetensors.index.json",
                    nlohmann::json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
  write_json_atomic(dir / "config.json",
                    options.layout == WanLayout::Diffusers ? diffusers_config(config) : config.to_json());
}

}  // namespace vidgraph::wan
