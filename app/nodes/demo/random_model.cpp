// Implements random_model.h: one model part at a time is built on the device, filled there, and
// written file by file (the safetensors writer copies one file's tensors to the host).
#include "nodes/demo/random_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>

#include "models/io/safetensors.h"
#include "models/t5/umt5_checkpoint.h"
#include "models/vae/vae_checkpoint.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_tiny.h"

namespace vidgraph::nodes {

namespace fs = std::filesystem;

namespace {

enum class Init { FanIn, Bias, NormScale, Table, Unit, Half };

// Fills `t` in place on its device with the draw `init` names (see the header's scales).
void fill(at::Tensor& t, Init init) {
  switch (init) {
    case Init::FanIn: {
      const int64_t fan_in = t.dim() > 0 && t.size(0) > 0 ? t.numel() / t.size(0) : 1;
      t.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(fan_in)));
      break;
    }
    case Init::Bias: t.normal_(0.0, 0.02); break;
    case Init::NormScale: t.normal_(1.0, 0.1); break;
    case Init::Table: t.normal_(0.0, 0.1); break;
    case Init::Unit: t.normal_(0.0, 1.0); break;
    case Init::Half: t.normal_(0.0, 0.5); break;
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

int64_t bf16_bytes(const at::Tensor& t) { return t.numel() * 2; }

// Where a module built on the CPU gets its filled parameters: bf16 on GPUs (the files are bf16),
// fp32 on the CPU (fast there and exact to cast).
at::TensorOptions fill_options(const c10::Device& device) {
  return at::TensorOptions().device(device).dtype(device.is_cpu() ? at::kFloat : at::kBFloat16);
}

// Replaces every parameter of `module` by a tensor on `device` filled by `rule(name)`.
template <class Rule>
int64_t fill_module(torch::nn::Module& module, const c10::Device& device, Rule rule) {
  int64_t bytes = 0;
  for (auto& item : module.named_parameters(true)) {
    at::Tensor value = at::empty(item.value().sizes(), fill_options(device));
    fill(value, rule(item.key(), value));
    item.value().set_data(value);
    bytes += bf16_bytes(value);
  }
  return bytes;
}

class Log {
 public:
  explicit Log(const RandomModelOptions& options) : log_(options.log) {}
  void operator()(const std::string& line) const {
    if (log_) log_(line);
  }
  // "... in 1.2 s" since construction or the last lap.
  std::string lap() {
    const auto now = std::chrono::steady_clock::now();
    char text[32];
    std::snprintf(text, sizeof(text), "%.1f s", std::chrono::duration<double>(now - start_).count());
    start_ = now;
    return text;
  }

 private:
  std::function<void(const std::string&)> log_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

std::string gb(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f GB", static_cast<double>(bytes) / 1e9);
  return text;
}

int64_t write_dit(const fs::path& out, const wan::WanConfig& config, const RandomModelOptions& options,
                  RandomModelSummary& summary) {
  wan::WanModelOptions model_options;
  model_options.config = config;
  model_options.device = options.device;
  model_options.compute_dtype = options.device.is_cpu() ? at::kFloat : at::kBFloat16;
  wan::WanModel model(model_options);
  int64_t bytes = 0;
  for (auto& [name, param] : wan::wan_named_parameters(*model)) {
    Init init = Init::FanIn;
    if (ends_with(name, "modulation")) {
      init = Init::Table;
    } else if (ends_with(name, ".bias")) {
      init = Init::Bias;
    } else if (param.dim() == 1) {
      init = Init::NormScale;
    }
    fill(param, init);
    bytes += bf16_bytes(param);
  }
  wan::WanSaveOptions save;
  save.layout = wan::WanLayout::Official;
  save.dtype = at::kBFloat16;
  save.shards = std::max<int64_t>(1, (bytes + options.shard_bytes - 1) / options.shard_bytes);
  wan::wan_save_checkpoint(*model, out.string(), save);
  summary.dit_shards = save.shards;
  return bytes;
}

int64_t write_vae(const fs::path& file, const vae::WanVaeConfig& config, const RandomModelOptions& options) {
  auto model = std::make_shared<vae::WanVae>(config);
  const int64_t bytes = fill_module(*model, options.device, [](const std::string& name, const at::Tensor&) {
    if (ends_with(name, "gamma")) return Init::NormScale;
    if (ends_with(name, "bias")) return Init::Bias;
    return Init::FanIn;
  });
  vae::save_vae_safetensors(*model, file.string(), vae::VaeLayout::Official, at::kBFloat16);
  return bytes;
}

// The encoder's parameters in module order, split into files of at most shard_bytes (bf16).
int64_t write_text_encoder(const fs::path& dir, const t5::Umt5Config& config, const RandomModelOptions& options,
                           RandomModelSummary& summary) {
  auto encoder_ptr = std::make_shared<t5::Umt5Encoder>(config);  // CPU at::empty tensors: untouched, replaced
  t5::Umt5Encoder& encoder = *encoder_ptr;
  const int64_t bytes = fill_module(encoder, options.device, [](const std::string& name, const at::Tensor&) {
    if (contains(name, "norm")) return Init::NormScale;
    if (contains(name, "pos_embedding")) return Init::Half;
    if (name == "token_embedding.weight") return Init::Unit;
    return Init::FanIn;
  });
  std::vector<model_io::NamedTensors> shards(1);
  int64_t in_shard = 0;
  for (const auto& item : encoder.named_parameters(true)) {
    const int64_t size = bf16_bytes(item.value());
    if (!shards.back().empty() && in_shard + size > options.shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().emplace_back(item.key(), item.value());
    in_shard += size;
  }
  fs::create_directories(dir);
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".safetensors") fs::remove(entry.path());  // stale shards
  }
  for (size_t s = 0; s < shards.size(); ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    model_io::NamedTensors part;
    for (const auto& [key, tensor] : shards[s]) part.emplace_back(key, tensor.detach().to(at::kBFloat16));
    model_io::save_safetensors((dir / name).string(), part, {{"format", "pt"}});
  }
  summary.text_encoder_shards = static_cast<int64_t>(shards.size());
  return bytes;
}

}  // namespace

RandomModelSummary write_random_model(const std::string& out_dir, const RandomModelOptions& options) {
  if (options.tokenizer.empty() || !fs::is_regular_file(options.tokenizer)) {
    throw std::runtime_error("The tokenizer '" + options.tokenizer + "' is not a file; give the demo "
                             "model's spiece.model (built by the `demo` target).");
  }
  if (options.shard_bytes <= 0) throw std::runtime_error("shard_bytes must be positive.");
  const fs::path out(out_dir);
  fs::create_directories(out);
  fs::copy_file(options.tokenizer, out / "spiece.model", fs::copy_options::overwrite_existing);
  const int64_t vocab = t5::load_umt5_tokenizer((out / "spiece.model").string()).vocab_size();

  t5::Umt5Config text = options.tiny ? t5::Umt5Config::tiny(vocab) : t5::Umt5Config::xxl();
  text.vocab = vocab;
  if (options.text_layers > 0) text.num_layers = options.text_layers;
  const bool i2v = options.config == "a14b-i2v";
  const bool a14b = options.config == "a14b-t2v" || i2v;
  const bool wan21 = options.config == "wan21-1.3b" || options.config == "wan21-14b";
  if (!a14b && !wan21 && options.config != "5b") {
    throw std::runtime_error("Unknown model config '" + options.config +
                             "'; use 5b, a14b-t2v, a14b-i2v, wan21-1.3b or wan21-14b.");
  }
  const bool vae21 = a14b || wan21;
  const vae::WanVaeConfig vae_config = vae21 ? (options.tiny ? vae::WanVaeConfig::tiny21() : vae::WanVaeConfig::wan21())
                                             : (options.tiny ? vae::WanVaeConfig::tiny() : vae::WanVaeConfig::wan22());
  wan::WanConfig dit = options.tiny                           ? wan::wan_tiny_config()
                       : options.config == "wan21-1.3b"       ? wan::WanConfig::t2v_1_3b()
                       : a14b || options.config == "wan21-14b" ? wan::WanConfig::t2v_a14b()
                                                               : wan::WanConfig::ti2v_5b();
  dit.in_dim = dit.out_dim = vae_config.z_dim;
  if (i2v) dit.in_dim += 20;  // I2V-A14B: + 4 mask and 16 image-latent channels (i2v_condition.h)
  dit.text_dim = text.dim;
  dit.text_len = 512;
  dit.with_gate_compress = dit.with_proj_l = options.sparse_extras;

  c10::NoGradGuard no_grad;
  at::manual_seed(options.seed);
  Log log(options);
  RandomModelSummary summary;
  for (const char* folder : a14b ? std::vector<const char*>{"high_noise_model", "low_noise_model"}
                                  : std::vector<const char*>{"."}) {
    const int64_t bytes = write_dit(out / folder, dit, options, summary);
    summary.dit_bytes += bytes;
    log(std::string(a14b ? folder : "DiT") + ": " + gb(bytes) + " in " +
        std::to_string(summary.dit_shards) + " shard(s), " + log.lap());
  }
  summary.vae_bytes = write_vae(out / (vae21 ? "Wan2.1_VAE.safetensors" : "Wan2.2_VAE.safetensors"), vae_config, options);
  log("VAE: " + gb(summary.vae_bytes) + ", " + log.lap());
  summary.text_encoder_bytes = write_text_encoder(out / "text_encoder", text, options, summary);
  log("umT5 encoder (" + std::to_string(text.num_layers) + " layers, vocabulary " + std::to_string(vocab) +
      "): " + gb(summary.text_encoder_bytes) + " in " + std::to_string(summary.text_encoder_shards) +
      " shard(s), " + log.lap());
  return summary;
}

}  // namespace vidgraph::nodes
