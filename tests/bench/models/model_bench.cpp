// vidgraph-model-bench: times the Wan2.2 DiT forward per attention method (with a breakdown into
// self-attention, GEMMs and the rest) and the decode of its VAE (2.2 for 5b, 2.1 for a14b), with
// random weights made on the device, and prints one JSON object (also to --out). Logs go to
// stderr, so stdout is the JSON.
// Exit status: 0 all measured, 1 bad options or no plugin, 3 some measurement failed (its entry
// says why; the JSON is still written).
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <torch/version.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_log.h"
#include "bench_timing.h"
#include "dit_bench.h"
#include "engine/environment.h"
#include "models/vae/vae_config.h"
#include "models/wan/wan_tiny.h"
#include "plugins/api/plugin_loader.h"
#include "taehv_bench.h"
#include "vae_bench.h"

namespace vidgraph::bench {
namespace {

using nlohmann::json;

struct Options {
  std::string device = "cuda";
  std::string dtype = "bf16";
  std::string config = "5b";
  std::string grid;  // default per config
  std::vector<std::string> methods{"full", "vsa", "sla_star"};
  double sparsity = 0.875;
  int warmup = 1, repeats = 5, vae_warmup = 1, vae_repeats = 2;
  std::vector<std::string> vae_dtypes;  // default: --dtype
  bool skip_vae = false, skip_dit = false, vae_tiled = false, taehv = false, cudnn_benchmark = false, fp8_weights = false;
  double time_limit_s = 0;
  std::string plugin;
  std::string out;
  std::vector<int64_t> offload_blocks;
  int expert_swaps = 0;
};

at::ScalarType parse_dtype(const std::string& s) {
  if (s == "bf16") return at::kBFloat16;
  if (s == "fp16") return at::kHalf;
  if (s == "fp32") return at::kFloat;
  throw std::invalid_argument("unknown dtype '" + s + "': use bf16, fp16 or fp32");
}

std::array<int64_t, 3> parse_grid(const std::string& text) {
  std::array<int64_t, 3> g{};
  std::stringstream ss(text);
  std::string item;
  size_t n = 0;
  while (std::getline(ss, item, ',')) {
    if (n == 3) break;
    try {
      g[n] = std::stoll(item);
    } catch (const std::exception&) {
      g[n] = 0;
    }
    ++n;
  }
  if (n != 3 || std::getline(ss, item, ',') || g[0] < 1 || g[1] < 1 || g[2] < 1) {
    throw std::invalid_argument("--grid '" + text + "' is not three positive integers F,H,W (e.g. 31,22,40)");
  }
  return g;
}

std::string hostname() {
  char buf[256] = {};
  return gethostname(buf, sizeof(buf) - 1) == 0 ? std::string(buf) : std::string("unknown");
}

json environment(const Options& o, c10::Device device, const plugin::LoadedPlugin& loaded) {
  const char* commit = std::getenv("VIDGRAPH_COMMIT");
  return json{{"machine", hostname()},
              {"cpu_threads", std::thread::hardware_concurrency()},
              {"torch", TORCH_VERSION},
              {"device", device.str()},
              {"device_name", device_name(device)},
              {"commit", commit ? commit : ""},
              {"plugin", plugin::plugin_version_string(loaded)},
              {"dtype", o.dtype},
              {"cudnn_benchmark", o.cudnn_benchmark},
              {"warmup", o.warmup},
              {"repeats", o.repeats},
              {"vae_warmup", o.vae_warmup},
              {"vae_repeats", o.vae_repeats}};
}

bool has_error(const json& j) {
  if (j.is_object()) {
    if (j.contains("error")) return true;
    for (const auto& item : j.items())
      if (has_error(item.value())) return true;
  }
  return false;
}

bool write_json(const std::string& path, const json& j) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << j.dump(2) << '\n';
  return bool(f);
}

// The speed goals for one bf16 forward of the 5B DiT at 31,22,40 on the H200, against what this
// run measured (null when the run is another config, grid or dtype).
json dit_targets(const Options& o, const DitBenchOptions& dit, const json& methods) {
  if (o.config != "5b" || o.dtype != "bf16" || dit.grid != std::array<int64_t, 3>{31, 22, 40}) return nullptr;
  json targets = json::array();
  auto add = [&](const std::string& method, double goal_ms) {
    if (!methods.contains(method) || !methods[method].contains("median_ms")) return;
    if (method != "full" && std::abs(o.sparsity - 0.875) > 1e-9) return;
    const double ms = methods[method]["median_ms"].get<double>();
    targets.push_back(json{{"method", method}, {"goal_ms", goal_ms}, {"median_ms", ms}, {"met", ms <= goal_ms}});
  };
  add("full", 1000.0);
  add("vsa", 600.0);
  return targets;
}

// The VAE section's options: the config's VAE decoding the DiT's latent.
VaeBenchOptions vae_options(const Options& o, const DitBenchOptions& dit, std::chrono::steady_clock::time_point start,
                            plugin::VaeKernels* fused) {
  const bool tiny = o.config == "tiny";
  VaeBenchOptions v;
  v.fused = fused;
  v.config = tiny ? vae::WanVaeConfig::tiny() : vae::vae_config_for_latent(dit.config.out_dim);
  const auto& p = dit.config.patch_size;
  v.latent_thw = {dit.grid[0] * p[0], dit.grid[1] * p[1], dit.grid[2] * p[2]};  // the DiT's latent
  v.device = dit.device;
  v.dtypes.clear();
  for (const std::string& d : o.vae_dtypes.empty() ? std::vector<std::string>{o.dtype} : o.vae_dtypes) {
    v.dtypes.push_back(parse_dtype(d));
  }
  v.warmup = o.vae_warmup;
  v.repeats = o.vae_repeats;
  if (o.vae_tiled) v.tiling = tiny ? vae::VaeTiling{6, 6, 2} : vae::VaeTiling{};
  if (o.time_limit_s > 0) {
    v.out_of_time = [start, limit = o.time_limit_s] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit;
    };
  }
  return v;
}

int run(const Options& o) {
  auto log = bench_logger();
  const auto start = std::chrono::steady_clock::now();
  const c10::Device device(o.device);
  std::string why;
  if (!device_usable(device, &why)) {
    log->error("{}", why);
    return 1;
  }
  const bool tiny = o.config == "tiny";
  DitBenchOptions dit;
  dit.config = tiny ? wan::wan_tiny_config() : o.config == "a14b" ? wan::WanConfig::t2v_a14b() : wan::WanConfig::ti2v_5b();
  dit.grid = parse_grid(o.grid.empty() ? (tiny ? "4,6,6" : o.config == "a14b" ? "21,45,80" : "31,22,40") : o.grid);
  dit.device = device;
  dit.dtype = parse_dtype(o.dtype);
  dit.methods = o.methods;
  dit.sparsity = o.sparsity;
  dit.warmup = o.warmup;
  dit.repeats = o.repeats;
  dit.offload_blocks = o.offload_blocks;
  dit.expert_swaps = o.expert_swaps;
  dit.fp8_weights = o.fp8_weights;

  plugin::PluginLoadReport report = plugin::load_attention_plugin(engine::read_environment().plugin_path, o.plugin);
  if (!report.plugin) {
    log->error("{}", report.message());
    return 1;
  }
  log->info("attention plugin: {}", plugin::plugin_version_string(*report.plugin));
  json result{{"benchmark", "vidgraph-model-bench"},
              {"environment", environment(o, device, *report.plugin)},
              {"config", o.config},
              {"sparsity", o.sparsity}};
  if (!o.skip_dit) {
    result["dit"] = run_dit_bench(dit, report.plugin->backend());
    result["dit"]["targets"] = dit_targets(o, dit, result["dit"]["methods"]);
    write_json(o.out, result);  // a run cut short during the VAE keeps the DiT results
  }

  // cuDNN's algorithm search affects the VAE's convolutions (the warm-up decode pays for it).
  at::globalContext().setBenchmarkCuDNN(o.cudnn_benchmark);
  if (!o.skip_vae) result["vae"] = run_vae_bench(vae_options(o, dit, start, report.plugin->backend().vae_kernels()));
  if (o.taehv) {
    TaehvBenchOptions t;
    const auto& p = dit.config.patch_size;
    t.latent_thw = {dit.grid[0] * p[0], dit.grid[1] * p[1], dit.grid[2] * p[2]};
    t.device = device;
    t.dtype = device.is_cpu() ? at::kFloat : at::kHalf;
    t.chunk_frames = {4};
    if (t.latent_thw[0] != 4) t.chunk_frames.push_back(t.latent_thw[0]);  // all at once
    t.warmup = o.vae_warmup;
    t.repeats = o.vae_repeats;
    result["taehv"] = run_taehv_bench(t);
  }
  result["elapsed_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!write_json(o.out, result)) {
    log->error("could not write '{}': check that its folder exists and is writable", o.out);
    return 1;
  }
  std::cout << result.dump(2) << std::endl;
  return has_error(result) ? 3 : 0;
}

}  // namespace
}  // namespace vidgraph::bench

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("vidgraph-model-bench"));
  vidgraph::bench::Options o;
  CLI::App app{"vidgraph-model-bench: Wan2.2 DiT forward per attention method and VAE decode, random weights (JSON)"};
  app.add_option("--device", o.device, "cuda, cuda:N or cpu")->capture_default_str();
  app.add_option("--dtype", o.dtype, "matmul dtype of the DiT (and default VAE dtype)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}))
      ->capture_default_str();
  app.add_option("--config", o.config,
                 "5b (Wan2.2-TI2V-5B, VAE 2.2), a14b (one Wan2.2-T2V-A14B expert, VAE 2.1) or tiny (test configs)")
      ->check(CLI::IsMember({"5b", "a14b", "tiny"}))
      ->capture_default_str();
  app.add_option("--grid", o.grid, "latent tokens after patchify F,H,W (default 31,22,40 = 704x1280x121; a14b 21,45,80 = 720x1280x81; tiny 4,6,6)");
  app.add_option("--methods", o.methods, "attention methods of the plugin, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--sparsity", o.sparsity, "sparsity of vsa and sla_star")->check(CLI::Range(0.0, 0.999));
  app.add_option("--warmup", o.warmup, "untimed DiT runs first")->check(CLI::NonNegativeNumber);
  app.add_option("--repeats", o.repeats, "timed DiT runs")->check(CLI::PositiveNumber);
  app.add_option("--vae-warmup", o.vae_warmup, "untimed VAE decodes first")->check(CLI::NonNegativeNumber);
  app.add_option("--vae-repeats", o.vae_repeats, "timed VAE decodes")->check(CLI::PositiveNumber);
  app.add_option("--vae-dtypes", o.vae_dtypes, "VAE dtypes, comma-separated (default: --dtype)")
      ->delimiter(',')
      ->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  app.add_flag("--vae-tiled", o.vae_tiled, "also time a spatially tiled decode");
  app.add_flag("--skip-vae", o.skip_vae, "time the DiT only");
  app.add_flag("--skip-dit", o.skip_dit, "time the VAE only (e.g. under a profiler)");
  app.add_flag("--fp8-weights", o.fp8_weights,
               "then time every method again with the DiT's linears kept as fp8 codes (keep_fp8)");
  app.add_flag("--cudnn-benchmark", o.cudnn_benchmark, "let cuDNN time its algorithms for the VAE's convolutions");
  app.add_flag("--taehv", o.taehv, "also time the TAEHV light decoder (taew2_2 layout) on the same latent");
  app.add_option("--time-limit-s", o.time_limit_s, "skip VAE variants that would start after this many seconds");
  app.add_option("--plugin", o.plugin, "attention plugin name (default: the first usable one)");
  app.add_option("--out", o.out, "also write the JSON to this file");
  app.add_option("--offload-blocks", o.offload_blocks,
                 "also time the first method with block swap, per count of offloaded blocks (comma-separated)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option("--expert-swaps", o.expert_swaps,
                 "also time this many expert switches (experts_on_gpu=active) with a second DiT of the same config")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    return vidgraph::bench::run(o);
  } catch (const std::exception& e) {
    vidgraph::bench::bench_logger()->error("{}", e.what());
    return 1;
  }
}
