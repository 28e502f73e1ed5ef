// vidgraph-attention bench. See attention_bench.h.
#include "app/cli/attention_bench.h"

#include "app/cli/attention_tool.h"
#include "app/cli/cli_checks.h"
#include "models/device/device_memory.h"

#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/randn.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/version.h>
#if __has_include(<ATen/ops/scaled_dot_product_attention.h>) && TORCH_VERSION_MAJOR >= 2
#include <ATen/ops/scaled_dot_product_attention.h>
#define VG_BENCH_HAVE_SDPA 1
#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 2
#define VG_BENCH_HAVE_SDP_TOGGLES 1
#endif
#endif
#if __has_include(<ATen/cuda/CUDAEvent.h>) && __has_include(<cuda_runtime_api.h>)
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#define VG_BENCH_HAVE_CUDA 1
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace vidgraph::cli {
namespace {

using nlohmann::json;

struct BenchOptions {
  std::string plugin;
  std::string device = "cuda";
  std::string dtype = "bf16";
  std::vector<std::string> grids{"31,22,40", "31,44,80"};
  std::vector<std::string> methods;  // empty: every method of the plugin
  std::vector<double> sparsities{0.8, 0.875, 0.9};
  int batch = 1, heads = 24, head_dim = 128, warmup = 3, repeats = 20;
  std::string out;
};

// Medians (ms) of the three phases of one configuration, and its peak memory above the inputs.
struct PhaseTimes {
  double fwd_ms = 0, bwd_ms = 0, fwd_bwd_ms = 0;
  double peak_mib = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0.0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

bool on_cuda(const BenchOptions& o) { return o.device.rfind("cuda", 0) == 0; }

// Runs fwd then bwd `warmup + repeats` times; times each phase with device events (host clock
// on the CPU).
PhaseTimes measure(const BenchOptions& o, const std::function<at::Tensor()>& fwd,
                   const std::function<void(const at::Tensor&)>& bwd) {
  std::vector<double> f, b, fb;
  PhaseTimes t;
#ifdef VG_BENCH_HAVE_CUDA
  if (on_cuda(o)) {
    const c10::Device dev(c10::kCUDA, at::cuda::current_device());
    device::reset_peak_device_memory(dev);
    const double base = double(device::device_memory_stats(dev).allocated_bytes);
    for (int i = 0; i < o.warmup + o.repeats; ++i) {
      at::cuda::CUDAEvent e0(cudaEventDefault), e1(cudaEventDefault), e2(cudaEventDefault);
      e0.record();
      const at::Tensor out = fwd();
      e1.record();
      bwd(out);
      e2.record();
      e2.synchronize();
      if (i < o.warmup) continue;
      f.push_back(e0.elapsed_time(e1));
      b.push_back(e1.elapsed_time(e2));
      fb.push_back(e0.elapsed_time(e2));
    }
    const double peak = double(device::device_memory_stats(dev).peak_bytes);
    t.peak_mib = (peak - base) / (1024.0 * 1024.0);
    t.fwd_ms = median(f);
    t.bwd_ms = median(b);
    t.fwd_bwd_ms = median(fb);
    return t;
  }
#endif
  if (o.device != "cpu") throw std::runtime_error("bench: timing on '" + o.device +
                                                  "' needs a LibTorch built with CUDA (device events)");
  using clock = std::chrono::steady_clock;
  for (int i = 0; i < o.warmup + o.repeats; ++i) {
    const auto t0 = clock::now();
    const at::Tensor out = fwd();
    const auto t1 = clock::now();
    bwd(out);
    const auto t2 = clock::now();
    if (i < o.warmup) continue;
    f.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    b.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
    fb.push_back(std::chrono::duration<double, std::milli>(t2 - t0).count());
  }
  t.fwd_ms = median(f);
  t.bwd_ms = median(b);
  t.fwd_bwd_ms = median(fb);
  return t;
}

json times_json(const PhaseTimes& t, double fwd_flops) {
  auto tf = [](double flops, double ms) { return ms > 0 ? flops / (ms * 1e-3) / 1e12 : 0.0; };
  return json{{"fwd_ms", t.fwd_ms},
              {"bwd_ms", t.bwd_ms},
              {"fwd_bwd_ms", t.fwd_bwd_ms},
              {"fwd_tflops_eff", tf(fwd_flops, t.fwd_ms)},
              {"bwd_tflops_eff", tf(2.5 * fwd_flops, t.bwd_ms)},
              {"fwd_bwd_tflops_eff", tf(3.5 * fwd_flops, t.fwd_bwd_ms)},
              {"peak_mib_above_inputs", t.peak_mib}};
}

// Leaf inputs of one shape, random with unit scale (q, k scaled so softmax is not flat).
struct Inputs {
  at::Tensor q, k, v, dout, gate, proj_w, proj_b;
};

Inputs make_inputs(const BenchOptions& o, int64_t s) {
  const auto opts = at::TensorOptions()
                        .device(o.device)
                        .dtype(o.dtype == "fp16" ? at::kHalf : (o.dtype == "fp32" ? at::kFloat : at::kBFloat16));
  auto leaf = [&](at::IntArrayRef shape, double scale) {
    return (at::randn(shape, opts) * scale).detach().set_requires_grad(true);
  };
  Inputs in;
  const int64_t b = o.batch, h = o.heads, d = o.head_dim;
  in.q = leaf({b, s, h, d}, 1.0);
  in.k = leaf({b, s, h, d}, 1.0);
  in.v = leaf({b, s, h, d}, 1.0);
  in.dout = at::randn({b, s, h, d}, opts);
  in.gate = leaf({b, s, h, d}, 0.1);
  in.proj_w = leaf({d, d}, 0.02);
  in.proj_b = leaf({d}, 0.02);
  return in;
}

json bench_sdpa(const BenchOptions& o, const Inputs& in, double fwd_flops, const std::string& variant) {
#ifdef VG_BENCH_HAVE_SDPA
  auto& ctx = at::globalContext();
#ifdef VG_BENCH_HAVE_SDP_TOGGLES
  const bool cudnn_was = ctx.userEnabledCuDNNSDP(), mem_was = ctx.userEnabledMemEfficientSDP(),
             math_was = ctx.userEnabledMathSDP();
  if (variant == "flash") {
    ctx.setSDPUseCuDNN(false);
    ctx.setSDPUseMemEfficient(false);
    ctx.setSDPUseMath(false);
  }
#else
  if (variant != "default") return json{{"error", "this LibTorch cannot select SDPA backends"}};
#endif
  json r;
  try {
    // [B, S, H, D] -> [B, H, S, D] views, as a model would pass them
    const auto fwd = [&]() {
      return at::scaled_dot_product_attention(in.q.transpose(1, 2), in.k.transpose(1, 2), in.v.transpose(1, 2));
    };
    const auto bwd = [&](const at::Tensor& out) {
      torch::autograd::grad({out}, {in.q, in.k, in.v}, {in.dout.transpose(1, 2)});
    };
    r = times_json(measure(o, fwd, bwd), fwd_flops);
  } catch (const std::exception& e) {
    r = json{{"error", e.what()}};
  }
#ifdef VG_BENCH_HAVE_SDP_TOGGLES
  ctx.setSDPUseCuDNN(cudnn_was);
  ctx.setSDPUseMemEfficient(mem_was);
  ctx.setSDPUseMath(math_was);
#endif
  return r;
#else
  (void)o, (void)in, (void)fwd_flops, (void)variant;
  return json{{"error", "this LibTorch has no scaled_dot_product_attention"}};
#endif
}

bool has_sparsity(const plugin::MethodInfo& method) {
  return std::any_of(method.params.begin(), method.params.end(),
                     [](const plugin::ParamDescriptor& d) { return d.name == "sparsity"; });
}

// One method with the extras it reads (MethodInfo::uses_gate, uses_proj_l) and, when it has one, the
// sparsity.
json bench_method(const BenchOptions& o, plugin::AttentionBackend& backend, const Inputs& in,
                  const plugin::TokenGrid& grid, const plugin::MethodInfo& method, double sparsity, double fwd_flops) {
  plugin::AttentionCall call;
  call.q = in.q;
  call.k = in.k;
  call.v = in.v;
  std::vector<at::Tensor> leaves{in.q, in.k, in.v};
  plugin::ParamMap params;
  if (has_sparsity(method)) params["sparsity"] = sparsity;
  if (method.uses_gate) {
    call.extras.gate = in.gate;
    leaves.push_back(in.gate);
  }
  if (method.uses_proj_l) {
    call.extras.proj_l_weight = in.proj_w;
    call.extras.proj_l_bias = in.proj_b;
    leaves.push_back(in.proj_w);
    leaves.push_back(in.proj_b);
  }
  json r{{"method", method.name}};
  if (has_sparsity(method)) r["sparsity"] = sparsity;
  try {
    call.prepared = plugin::prepare_for(backend, method.name, params, in.q, grid);
    const plugin::AttentionResult probe = backend.forward_with_stats(call);
    r["density"] = probe.stats.density;
    r["topk"] = probe.stats.topk;
    r["tiles"] = probe.stats.kv_tiles;
    const auto fwd = [&]() { return backend.forward(call); };
    const auto bwd = [&](const at::Tensor& out) { torch::autograd::grad({out}, leaves, {in.dout}); };
    r.update(times_json(measure(o, fwd, bwd), fwd_flops));
  } catch (const std::exception& e) {
    r["error"] = e.what();
  }
  return r;
}

double ratio(const json& num, const json& den, const char* key) {
  if (!num.contains(key) || !den.contains(key)) return 0.0;
  const double d = den[key].get<double>();
  return d > 0 ? num[key].get<double>() / d : 0.0;
}

// Ratios to SDPA (its time over ours: > 1 means faster) on one shape's results.
void add_ratios(json& shape) {
  for (const char* variant : {"default", "flash"}) {
    const json& sdpa = shape["sdpa"][variant];
    if (sdpa.contains("error")) continue;
    for (json& m : shape["methods"]) {
      if (m.contains("error")) continue;
      m["speedup_vs_sdpa_" + std::string(variant)] = json{{"fwd", ratio(sdpa, m, "fwd_ms")},
                                                          {"bwd", ratio(sdpa, m, "bwd_ms")},
                                                          {"fwd_bwd", ratio(sdpa, m, "fwd_bwd_ms")}};
    }
  }
}

// The speed targets on one shape, against SDPA's default backend.
json evaluate_targets(const json& shape) {
  json targets = json::array();
  auto find = [&](const std::string& method, double sparsity) -> const json* {
    for (const json& m : shape["methods"])
      if (m["method"] == method && (method == "full" || std::abs(m.value("sparsity", -1.0) - sparsity) < 1e-9) &&
          m.contains("speedup_vs_sdpa_default"))
        return &m;
    return nullptr;
  };
  auto add = [&](const std::string& name, const json* m, const char* phase, double goal) {
    if (m == nullptr) return;
    const double v = (*m)["speedup_vs_sdpa_default"][phase].get<double>();
    targets.push_back(json{{"target", name}, {"goal", goal}, {"measured", v}, {"met", v >= goal}});
  };
  add("full forward throughput / SDPA", find("full", 0), "fwd", 0.6);
  add("full backward throughput / SDPA", find("full", 0), "bwd", 0.5);
  add("vsa@0.875 forward speed-up over SDPA", find("vsa", 0.875), "fwd", 4.5);
  add("vsa@0.875 forward+backward speed-up over SDPA", find("vsa", 0.875), "fwd_bwd", 5.0);
  add("sla_star@0.875 forward+backward speed-up over SDPA", find("sla_star", 0.875), "fwd_bwd", 4.5);
  return targets;
}

json environment(const BenchOptions& o, const plugin::LoadedPlugin& loaded) {
  json env{{"torch", TORCH_VERSION}, {"plugin", plugin::plugin_version_string(loaded)}, {"device", o.device},
           {"dtype", o.dtype}, {"batch", o.batch}, {"heads", o.heads}, {"head_dim", o.head_dim},
           {"warmup", o.warmup}, {"repeats", o.repeats}};
  if (const char* commit = std::getenv("VIDGRAPH_COMMIT")) env["commit"] = commit;
  if (const char* tuning = std::getenv("VIDGRAPH_ATTENTION_TUNING")) env["tuning"] = tuning;
#ifdef VG_BENCH_HAVE_CUDA
  if (on_cuda(o)) {
    const cudaDeviceProp* p = at::cuda::getCurrentDeviceProperties();
    env["gpu"] = p->name;
    env["sm_count"] = p->multiProcessorCount;
  }
#endif
  return env;
}

// B * S * H * D must fit in int64 (ATen would refuse it later with a backtrace, or wrap).
void check_tensor_size(const BenchOptions& o, const std::string& grid_text, int64_t s) {
  int64_t n = s;
  const bool overflow = __builtin_mul_overflow(n, int64_t(o.batch), &n) || __builtin_mul_overflow(n, int64_t(o.heads), &n) ||
                        __builtin_mul_overflow(n, int64_t(o.head_dim), &n);
  if (overflow) {
    throw std::invalid_argument("--grid " + grid_text + " with --batch " + std::to_string(o.batch) + ", --heads " +
                                std::to_string(o.heads) + " and --head-dim " + std::to_string(o.head_dim) +
                                " makes tensors of more elements than a 64-bit count holds; use a smaller grid");
  }
}

// --method's methods in order (all of the plugin's without one); an unknown name is an error.
std::vector<plugin::MethodInfo> chosen_methods(const BenchOptions& o, const plugin::AttentionBackend& backend) {
  const std::vector<plugin::MethodInfo> all = backend.methods();
  if (o.methods.empty()) return all;
  std::vector<plugin::MethodInfo> chosen;
  for (const std::string& name : o.methods) {
    const plugin::MethodInfo* m = plugin::find_method(all, name);
    if (m == nullptr) {
      std::string names;
      for (const auto& a : all) names += (names.empty() ? "" : ", ") + a.name;
      throw std::invalid_argument("--method " + name + ": the plugin has no such method (" + names + ")");
    }
    chosen.push_back(*m);
  }
  return chosen;
}

bool write_json(const std::string& path, const json& j) {
  if (path.empty()) return true;
  std::ofstream f(path);
  f << j.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
  return bool(f);
}

int run_bench(const BenchOptions& o) {
  auto log = attention_tool_logger();
  auto loaded = load_plugin_or_report(o.plugin);
  if (!loaded) return 2;
  plugin::AttentionBackend& backend = loaded->backend();
  const std::vector<plugin::MethodInfo> chosen = chosen_methods(o, backend);
  json result{{"benchmark", "vidgraph-attention bench"}, {"environment", environment(o, *loaded)}};
  json shapes = json::array();
  for (const std::string& g : o.grids) {
    const plugin::TokenGrid grid = parse_grid(g);
    const int64_t s = grid.size();
    check_tensor_size(o, g, s);
    const double fwd_flops = 4.0 * o.batch * o.heads * double(s) * double(s) * o.head_dim;
    log->info("bench: grid {} ({} tokens)", g, s);
    const Inputs in = make_inputs(o, s);
    json shape{{"grid", {grid.t, grid.h, grid.w}}, {"tokens", s}, {"fwd_flops", fwd_flops}};
    shape["sdpa"] = json{{"default", bench_sdpa(o, in, fwd_flops, "default")},
                         {"flash", bench_sdpa(o, in, fwd_flops, "flash")}};
    json methods = json::array();
    for (const plugin::MethodInfo& m : chosen) {
      if (!has_sparsity(m)) {
        methods.push_back(bench_method(o, backend, in, grid, m, 0.0, fwd_flops));
        continue;
      }
      for (double sp : o.sparsities) {
        log->info("bench: {} sparsity {}", m.name, sp);
        methods.push_back(bench_method(o, backend, in, grid, m, sp, fwd_flops));
      }
    }
    shape["methods"] = methods;
    add_ratios(shape);
    shape["targets"] = evaluate_targets(shape);
    shapes.push_back(shape);
    result["shapes"] = shapes;
    if (!write_json(o.out, result)) {  // after every shape: a long run that is cut keeps its results
      log->error("bench: could not write '{}'", o.out);
      return 1;
    }
  }
  std::cout << result.dump(2, ' ', false, json::error_handler_t::replace) << std::endl;
  return 0;
}

}  // namespace

CLI::App* add_attention_bench_command(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand("bench", "Time full, vsa and sla_star against LibTorch's SDPA (JSON)");
  cmd->add_option("--plugin", opts->plugin, "plugin name to load (default: the first usable one)");
  cmd->add_option("--device", opts->device, "device of the tensors (cuda, cuda:N, cpu)");
  cmd->add_option("--dtype", opts->dtype, "bf16, fp16 or fp32")->check(CLI::IsMember({"bf16", "fp16", "fp32"}));
  cmd->add_option("--grid", opts->grids, "token grids T,H,W (repeatable)");
  cmd->add_option("--method", opts->methods, "methods (repeatable; default: every method of the plugin)");
  cmd->add_option("--sparsity", opts->sparsities, "sparsities of vsa and sla_star (repeatable)")
      ->check(finite_number());
  cmd->add_option("--batch", opts->batch, "batch size")->check(CLI::PositiveNumber);
  cmd->add_option("--heads", opts->heads, "heads")->check(CLI::PositiveNumber);
  cmd->add_option("--head-dim", opts->head_dim, "head dim")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", opts->warmup, "untimed runs first")->check(CLI::NonNegativeNumber);
  cmd->add_option("--repeats", opts->repeats, "timed runs (median reported)")->check(CLI::PositiveNumber);
  cmd->add_option("--out", opts->out, "also write the JSON to this file");
  cmd->callback([opts, exit_code]() {
    try {
      *exit_code = run_bench(*opts);
    } catch (const c10::Error& e) {
      attention_tool_logger()->error("bench: {}", e.what_without_backtrace());
      *exit_code = 1;
    } catch (const std::exception& e) {
      attention_tool_logger()->error("bench: {}", e.what());
      *exit_code = 1;
    }
  });
  return cmd;
}

}  // namespace vidgraph::cli
