// Load Wan Model: the DiT (and an A14B model's low-noise expert beside it), the VAE and the text
// encoder (+ tokenizer) of a Wan2.2 model, from one folder (official release, diffusers repo or the
// tiny demo model; layout detected) or from explicit files, on a device in a dtype; refused before
// anything loads when the weights cannot fit (load_memory.h). The engine's cache keeps them loaded
// between runs while these params and the files on disk are unchanged. In a run of several ranks
// only rank 0 loads the text encoder: Encode Text runs there and sends its embeddings to the others.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>
#include <stdexcept>

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include "models/device/device_memory.h"
#include "models/io/checkpoint_manifest.h"
#include "models/io/tensor_file.h"
#include "models/vae/vae_checkpoint.h"
#include "models/wan/wan_checkpoint.h"
#include "models/wan/wan_memory.h"
#include "nodes/build_info.h"
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/common/rank_broadcast.h"
#include "nodes/common/stage_memory.h"
#include "nodes/model/load_memory.h"
#include "nodes/model/model_files.h"
#include "nodes/model/model_handles.h"
#include "nodes/model/text_encoder_loader.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

engine::Result<c10::Device> pick_device(const engine::NodeContext& ctx) {
  const std::string name = ctx.param_string("device");
  if (name == "cpu") return c10::Device(c10::kCPU);
  if (name == "cuda" || (name == "auto" && at::hasCUDA())) {
    if (!at::hasCUDA()) {
      return node_error(ctx, "device is cuda but this LibTorch sees no GPU; choose cpu or auto.");
    }
    return c10::Device(c10::kCUDA, 0);
  }
  return c10::Device(c10::kCPU);
}

at::ScalarType pick_dtype(const std::string& name, const c10::Device& device) {
  return dtype_param(name).value_or(device.is_cpu() ? at::kFloat : at::kBFloat16);  // auto
}

using Manifest = std::shared_ptr<const model_io::CheckpointManifest>;

// The run's manifest (the one the cache key and the preflight read), its files checked.
engine::Result<Manifest> manifest_from_params(const engine::NodeContext& ctx) {
  auto files = model_files_from_params(ctx.params(), ctx.options());
  if (!files.ok()) return node_error(ctx, files.error().message);
  Manifest manifest = model_manifest(*files);
  const ModelFiles given{ctx.param_string("dit"), ctx.param_string("vae"),
                         ctx.param_string("text_encoder"), ctx.param_string("tokenizer"), {}};
  const std::string bad = check_model_read_files(*manifest, given);
  if (!bad.empty()) return node_error(ctx, bad);
  return manifest;
}

// The VAE from the header the manifest read; a .pth VAE, or a part the manifest could not read,
// through the VAE loader, which reads its file itself and names what is wrong with it.
std::shared_ptr<vae::WanVae> load_vae(const model_io::ManifestPart& part, c10::Device device, at::ScalarType dtype) {
  if (part.headers.size() != 1) return vae::load_wan_vae(part.path, device, dtype);
  const model_io::TensorFile& header = *part.headers.front();
  return vae::make_wan_vae(header.load_all(device, dtype), header.path());
}

// The VAE runs in float32 (the reference) unless a GPU run asks for 16 bits: half the memory, and
// its residual blocks on the plugin's fused kernels.
at::ScalarType pick_vae_dtype(const engine::NodeContext& ctx, const c10::Device& device) {
  const at::ScalarType dtype = dtype_param(ctx.param_string("vae_dtype")).value_or(at::kFloat);
  if (dtype == at::kFloat || !device.is_cpu()) return dtype;
  ctx.log_info("vae_dtype " + ctx.param_string("vae_dtype") + " is for GPUs; the CPU decodes in float32.");
  return at::kFloat;
}

// A DiT expert to load: the output port, its name in messages, its path, its inspection and how
// it loads (experts_on_gpu "active": the low-noise expert starts with every block on the host).
struct DitToLoad {
  std::string port;
  std::string name;  // "DiT", "low-noise expert"
  std::string path;
  wan::WanCheckpointInfo info;
  wan::WanLoadOptions options;
};

// What each part will take where it loads (load_memory.h), from the headers the manifest holds.
std::vector<LoadPart> load_parts(const model_io::CheckpointManifest& manifest, const std::vector<DitToLoad>& dits,
                                 const wan::WanLoadOptions& dit_options, at::ScalarType vae_dtype,
                                 const c10::Device& text_device, bool text_here) {
  std::vector<LoadPart> parts;
  for (const DitToLoad& d : dits) {
    const wan::WanLoadBytes bytes = wan::wan_estimate_load(d.info, d.options);
    const bool resident_blocks = d.options.offload_blocks < d.info.config.num_layers;  // offload_blocks moves them
    parts.push_back({d.name, dit_options.device, bytes.device, bytes.host, resident_blocks});
  }
  const auto add = [&](const char* role, const char* name, const c10::Device& device, at::ScalarType dtype) {
    const model_io::ManifestPart* part = manifest.part(role);
    const int64_t elements = part == nullptr ? -1 : part_elements(part->files.weights, part->headers);
    if (elements >= 0) parts.push_back({name, device, elements * int64_t(c10::elementSize(dtype)), 0, false});
  };
  add(model_io::kRoleVae, "VAE", dit_options.device, vae_dtype);
  if (text_here) add(model_io::kRoleTextEncoder, "text encoder", text_device, text_encoder_dtype(text_device));
  return parts;
}

const LoadPart* part_named(const std::vector<LoadPart>& parts, const std::string& name) {
  const auto it = std::find_if(parts.begin(), parts.end(), [&](const LoadPart& p) { return p.name == name; });
  return it == parts.end() ? nullptr : &*it;
}

// The node's progress over a load, in thousandths of the bytes of all its parts (load_parts): a
// DiT's weights report as they load, at most once a thousandth, and stop the load when the run is
// cancelled; the VAE and the text encoder report as they start.
class LoadProgress {
 public:
  static constexpr int64_t kScale = 1000;
  LoadProgress(engine::NodeContext& ctx, const std::vector<LoadPart>& parts) : ctx_(ctx) {
    for (const LoadPart& p : parts) total_ += p.bytes + p.host_bytes;
  }
  void start(const std::string& text) { report(0, text, true); }
  void finish(const LoadPart& part) { done_ += part.bytes + part.host_bytes; }
  wan::WanLoadProgress dit(const LoadPart& part) {
    return [this, &part](int64_t loaded, int64_t total) {
      const int64_t part_bytes = part.bytes + part.host_bytes;
      const int64_t within = total > 0 ? int64_t(double(loaded) / double(total) * double(part_bytes)) : 0;
      const std::string text = "loading the " + part.name + ": " + device::format_gib(loaded) + " of " +
                               device::format_gib(total);
      report(within, text, false);
      return !ctx_.cancelled();
    };
  }

 private:
  void report(int64_t within, const std::string& text, bool always) {
    const int64_t value = total_ > 0 ? std::min(kScale, (done_ + within) * kScale / total_) : 0;
    if (!always && value == last_) return;
    last_ = value;
    ctx_.progress(value, kScale, text);
  }
  engine::NodeContext& ctx_;
  int64_t total_ = 0, done_ = 0, last_ = -1;
};

// The budgets: memory_limit_gib, or what is free on the device; the RAM for the host parts.
LoadMemoryCheck memory_check(const engine::NodeContext& ctx, const std::vector<DitToLoad>& dits,
                             const wan::WanLoadOptions& options) {
  LoadMemoryCheck check{options.device};
  const double limit_gib = ctx.param_float("memory_limit_gib");
  check.device_budget = limit_gib > 0 ? int64_t(limit_gib * double(int64_t(1) << 30))
                                      : device::free_device_memory(options.device);
  check.host_budget = device::available_ram_bytes();
  check.offload_blocks = options.offload_blocks;
  check.keep_fp8 = options.keep_fp8;
  if (!dits.empty() && !options.device.is_cpu()) {
    wan::WanLoadOptions all_offloaded = options;
    all_offloaded.offload_blocks = check.blocks = dits.front().info.config.num_layers;
    check.block_bytes = wan::wan_estimate_load(dits.front().info, all_offloaded).host / check.blocks;
  }
  return check;
}

engine::Result<engine::ValueMap> compute_load_model(engine::NodeContext& ctx) {
  auto manifest = manifest_from_params(ctx);
  if (!manifest.ok()) return manifest.error();
  const model_io::CheckpointPaths& files = (*manifest)->given;
  auto device = pick_device(ctx);
  if (!device.ok()) return device.error();
  const at::ScalarType dtype = pick_dtype(ctx.param_string("dtype"), *device);
  if (device->is_cpu() && blas_is_reference()) {
    ctx.log_warn("LibTorch runs on the reference BLAS here, which makes the model 20-40 times slower "
                 "on the CPU; install libopenblas0-pthread (Debian selects it by itself).");
  }
  const StageMemory memory(*device);
  engine::ValueMap out;
  std::string stage;
  const at::ScalarType vae_dtype = pick_vae_dtype(ctx, *device);
  const c10::Device text_device =
      ctx.param_string("text_encoder_device") == "cpu" ? c10::Device(c10::kCPU) : *device;
  const bool text_here = !receives_from_rank0(ctx.options());
  try {
    wan::WanLoadOptions dit_options;
    dit_options.device = *device;
    dit_options.compute_dtype = dtype;
    dit_options.offload_blocks = ctx.param_int("offload_blocks");
    dit_options.keep_fp8 = ctx.param_bool("keep_fp8");
    if (dit_options.offload_blocks > 0 && device->is_cpu()) {
      ctx.log_warn("offload_blocks saves GPU memory only; on the CPU it copies the offloaded blocks at every "
                   "step for nothing. Set it to 0 here.");
    }
    // Every DiT's inspection (headers only) before anything loads: the memory check needs them all.
    std::vector<DitToLoad> dits;
    for (const auto& [port, role] : {std::pair{"model", model_io::kRoleDit},
                                     std::pair{"low_noise_model", model_io::kRoleLowNoiseDit}}) {
      const model_io::ManifestPart* part = (*manifest)->part(role);
      if (part == nullptr) continue;  // a one-DiT model
      const std::string name = port == std::string("model") ? "DiT" : "low-noise expert";
      stage = name + " '" + part->path + "'";
      dits.push_back({port, name, part->path, wan::wan_inspect_checkpoint(*part), dit_options});
    }
    const bool swaps = dits.size() == 2 && ctx.param_string("experts_on_gpu") == "active";
    if (swaps) dits.back().options.offload_blocks = dits.back().info.config.num_layers;  // waits on the host
    if (swaps && device->is_cpu()) {
      ctx.log_warn("experts_on_gpu active saves GPU memory only; on the CPU the experts swap for nothing. Choose "
                   "both here.");
    }
    const std::vector<LoadPart> parts = load_parts(**manifest, dits, dit_options, vae_dtype, text_device, text_here);
    const std::string refusal = check_load_memory(parts, memory_check(ctx, dits, dit_options));
    if (!refusal.empty()) return node_error(ctx, refusal);

    LoadProgress progress(ctx, parts);
    for (std::size_t k = 0; k < dits.size(); ++k) {
      DitToLoad& d = dits[k];
      stage = d.name + " '" + d.path + "'";
      d.options.progress = progress.dit(parts[k]);
      const WanExpert expert = dits.size() == 1 ? WanExpert::None
                               : d.port == "model"  ? WanExpert::HighNoise
                                                    : WanExpert::LowNoise;
      DitHandle dit{wan::wan_load_model(d.info, d.options).ptr(), d.path, *device, dtype, expert,
                    swaps ? dit_options.offload_blocks : -1};
      const std::size_t dit_bytes = module_bytes(*dit.model);
      out[d.port] = engine::make_value(kModelType, std::move(dit), dit_bytes);
      progress.finish(parts[k]);
    }

    stage = "VAE '" + files.vae + "'";
    progress.start("loading the VAE");
    const model_io::ManifestPart* vae_part = (*manifest)->part(model_io::kRoleVae);
    if (vae_part == nullptr) throw std::runtime_error("no VAE file was given");  // as the VAE loader says it
    VaeHandle vae{load_vae(*vae_part, *device, vae_dtype), files.vae, *device, vae_dtype};
    const std::size_t vae_bytes = module_bytes(*vae.vae);
    out["vae"] = engine::make_value(kVaeType, std::move(vae), vae_bytes);
    if (ctx.cancelled()) return node_error(ctx, "Model loading cancelled.");
    if (const LoadPart* vae_load = part_named(parts, "VAE")) progress.finish(*vae_load);

    stage = "text encoder '" + files.text_encoder + "'";
    progress.start("loading the text encoder");
    TextEncoderHandle text;
    if (!text_here) {
      text = rank0_text_encoder(files.text_encoder, text_device);
      ctx.log_info("The text encoder was not loaded on this rank: rank 0 encodes the prompts.");
    } else {
      text = load_text_encoder(files.text_encoder, files.tokenizer, text_device);
    }
    const std::size_t text_bytes = text.bytes;
    out["text_encoder"] = engine::make_value(kTextEncoderType, std::move(text), text_bytes);
  } catch (const wan::WanLoadStopped&) {
    return node_error(ctx, "Model loading cancelled.");
  } catch (const c10::Error& e) {  // a LibTorch check: its message without the C++ backtrace
    return node_error(ctx, "Loading the " + stage + " failed: " + e.what_without_backtrace() +
                           "; check that the file holds Wan2.2 weights.");
  } catch (const std::exception& e) {
    return node_error(ctx, "Loading the " + stage + " failed: " + e.what());
  }
  ctx.progress(LoadProgress::kScale, LoadProgress::kScale, "loaded");
  memory.report(ctx, "Load Wan Model");
  return out;
}

// The DiT and the VAE must work in one latent space: an A14B or Wan2.1 DiT (16 channels) needs the
// Wan2.1 VAE, the 5B (48) the Wan2.2 VAE. Told from the headers; "" when either is not recognised.
std::string latent_mismatch(const wan::WanCheckpointInfo& dit, const model_io::ManifestPart* vae_part) {
  const int64_t dit_z = dit.identity.latent_channels;
  if ((dit_z != 16 && dit_z != 48) || vae_part == nullptr) return "";
  const std::string& vae_path = vae_part->path;
  const std::string& vae = vae_part->detected;
  const int64_t vae_z = vae == "wan2.2-vae" ? 48 : vae == "wan2.1-vae" ? 16 : 0;
  if (vae_z == 0 || vae_z == dit_z) return "";
  auto name = [](int64_t z) { return z == 48 ? std::string("Wan2.2 VAE") : std::string("Wan2.1 VAE"); };
  return "The DiT '" + dit.path + "' is " + model_io::wan_dit_description(dit.identity) + ", which works in the " +
         name(dit_z) + "'s " + std::to_string(dit_z) + " latent channels, but the VAE '" + vae_path + "' is the " +
         name(vae_z) + " (" + std::to_string(vae_z) + " channels); set the vae param to the " + name(dit_z) +
         (dit_z == 16 ? " (Wan2.1_VAE.pth or wan_2.1_vae.safetensors)." : " (Wan2.2_VAE.pth or wan2.2_vae.safetensors).");
}

// A two-expert model's experts are one model's two roles: the high-noise one as the DiT, its
// partner the low-noise one of the same model and config. "" when they are, or there is no partner.
std::string expert_pair_mismatch(const wan::WanCheckpointInfo& high, const model_io::CheckpointManifest& manifest) {
  const model_io::ManifestPart* low_part = manifest.part(model_io::kRoleLowNoiseDit);
  if (low_part == nullptr || low_part->headers.empty()) return "";  // the load names what is wrong with it
  const std::string& low_path = low_part->path;
  wan::WanCheckpointInfo low;
  try {
    low = wan::wan_inspect_checkpoint(*low_part);
  } catch (const std::exception&) {
    return "";  // the load names what is wrong with the file
  }
  const bool same = low.identity.id == high.identity.id && low.config.dim == high.config.dim &&
                    low.config.num_layers == high.config.num_layers && low.config.in_dim == high.config.in_dim;
  if (same && low.identity.role == "low-noise expert") return "";
  return "The DiT '" + high.path + "' is " + model_io::wan_dit_description(high.identity) + ", but '" + low_path +
         "' beside it, taken as its low-noise expert, is " + model_io::wan_dit_description(low.identity) +
         "; put the two experts of one model side by side (high_noise_model/ and low_noise_model/), or set dit "
         "to a single-DiT model.";
}

// Before anything loads, from the checkpoint manifest's headers (read once: the load uses them
// again): the DiT and the VAE share a latent space, and with several ranks (vidgraph-run --nproc,
// torchrun) the DiT's attention heads divide over them. Files that cannot be inspected are left to
// the load, whose error names the problem.
std::string preflight_model(const nlohmann::json& params, const engine::RunOptions& options) {
  auto files = model_files_from_params(params, options);
  if (!files.ok()) return "";
  const Manifest manifest = model_manifest(*files);
  const model_io::ManifestPart* dit_part = manifest->part(model_io::kRoleDit);
  if (dit_part == nullptr || dit_part->headers.empty()) return "";
  std::optional<wan::WanCheckpointInfo> dit;
  try {
    dit = wan::wan_inspect_checkpoint(*dit_part);  // its files and headers: the manifest's
  } catch (const std::exception&) {
    return "";
  }
  if (std::string mismatch = latent_mismatch(*dit, manifest->part(model_io::kRoleVae)); !mismatch.empty()) {
    return mismatch;
  }
  if (std::string pair = expert_pair_mismatch(*dit, *manifest); !pair.empty()) return pair;
  const auto sp = run_ranks(options);
  if (!sp) return "";
  const int64_t heads = dit->config.num_heads;
  const int n = sp->world_size();
  if (heads <= 0 || heads % n == 0) return "";
  std::string counts;
  for (int64_t d = 1; d <= heads; ++d) {
    if (heads % d == 0) counts += (counts.empty() ? "" : ", ") + std::to_string(d);
  }
  return "The DiT '" + dit_part->path + "' has " + std::to_string(heads) +
         " attention heads, which do not divide over " + std::to_string(n) +
         " processes (--nproc or WORLD_SIZE); run with " + counts + " processes.";
}

}  // namespace

engine::NodeType load_wan_model_node() {
  engine::NodeType t;
  t.name = "LoadWanModel";
  t.display_name = "Load Wan Model";
  t.category = "model";
  t.description = "Loads a Wan2.2 model: the DiT (both experts of an A14B model), the VAE and the umT5 "
                  "text encoder with its tokenizer, from one folder (official Wan2.2 release, a diffusers repo, "
                  "the tiny demo model, or ComfyUI's models folder, where the files are picked by "
                  "what they hold), from the folders of ComfyUI's extra_model_paths.yaml, or from "
                  "explicit files. Models stay loaded between runs while these params and the "
                  "files are unchanged.";
  t.outputs = {{"model", kModelType, false, "The DiT (a two-expert model's high-noise expert)."},
               {"low_noise_model", kModelType, true,
                "the low-noise expert of a two-expert model (Wan2.2-A14B), found beside the DiT; connect it to the "
                "Wan Sampler's low_noise_model"},
               {"vae", kVaeType, false, "The VAE (fp32)."},
               {"text_encoder", kTextEncoderType, false, "The umT5 encoder and tokenizer."}};
  t.params = {
      ParamSpec::folder_path("model_path", "",
                             "Folder holding the model: Wan2.2-TI2V-5B, a diffusers repo, or ComfyUI's "
                             "models folder (files picked by content); set it with --set "
                             "model.model_path=DIR."),
      ParamSpec::file_path("dit", "", "", "DiT folder, .safetensors or .gguf; empty = found in model_path."),
      ParamSpec::file_path("vae", "", "Weights (*.pth *.safetensors)",
                           "VAE file; empty = found in model_path."),
      ParamSpec::file_path("text_encoder", "", "Weights (*.pth *.safetensors *.gguf)",
                           "umT5 encoder file or folder; empty = found in model_path."),
      ParamSpec::file_path("tokenizer", "", "SentencePiece (*.model)",
                           "Tokenizer spiece.model; empty = found in model_path, or the one the "
                           "text encoder file carries (ComfyUI's umT5 files)."),
      ParamSpec::file_path("model_paths_file", "", "YAML (*.yaml *.yml)",
                           "ComfyUI's extra_model_paths.yaml: more folders to pick the files from; "
                           "empty = $VIDGRAPH_MODEL_PATHS when set."),
      ParamSpec::enumeration("device", {"auto", "cpu", "cuda"}, "auto",
                             "Where the DiT and VAE run; auto = the GPU when there is one."),
      ParamSpec::enumeration("dtype", {"auto", "float32", "bfloat16", "float16"}, "auto",
                             "DiT matmul dtype; auto = bfloat16 on GPU, float32 on CPU."),
      ParamSpec::enumeration("vae_dtype", {"float32", "bfloat16", "float16"}, "float32",
                             "VAE dtype on a GPU: float32 as the reference; bfloat16 halves its memory and "
                             "decodes about twice as fast (fused kernels), within 16-bit rounding. The CPU "
                             "always uses float32."),
      ParamSpec::enumeration("text_encoder_device", {"same", "cpu"}, "same",
                             "cpu keeps the 11 GB umT5 encoder off the GPU (the reference's --t5_cpu)."),
      ParamSpec::integer("offload_blocks", 0, 0, 64,
                         "Block swap for small GPUs: this many DiT blocks (of 30 in the 5B) stay in host "
                         "memory and stream to the GPU as they run; 0 keeps all on the GPU."),
      ParamSpec::real("memory_limit_gib", 0.0, 0.0, 65536.0,
                      "Memory the weights may take on the device, in GiB; 0 = what is free there (the "
                      "available RAM on the CPU). A model that does not fit is refused before loading."),
      ParamSpec::enumeration("experts_on_gpu", {"both", "active"}, "both",
                             "A two-expert model (Wan2.2-A14B): both experts stay on the GPU, or only the one "
                             "sampling; the other waits in pinned host memory and they swap at the expert "
                             "boundary (one 14B expert's weights each way, once per video)."),
      ParamSpec::boolean("keep_fp8", false,
                         "Keep a DiT file's fp8 weights as fp8 in memory (half of bfloat16), looked up "
                         "layer by layer as it runs; such a model samples and trains LoRAs, not full "
                         "fine-tunes. Off: fp8 weights are converted to dtype at load."),
  };
  // Only the files the loaders will read (model_files.h): never a walk of model_path, which may
  // be a huge or partly unreadable tree.
  t.fingerprint = [](const nlohmann::json& params, const engine::RunOptions& options) {
    require_utf8_params(params);
    auto files = model_files_from_params(params, options);
    if (!files.ok()) return "unresolved:" + files.error().message;
    return model_manifest(*files)->fingerprint;
  };
  t.preflight = preflight_model;
  t.compute = compute_load_model;
  return t;
}

}  // namespace vidgraph::nodes
