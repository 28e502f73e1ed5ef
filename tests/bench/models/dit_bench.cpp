// Implements dit_bench.h.
#include "dit_bench.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <nlohmann/json.hpp>

#include <exception>
#include <algorithm>
#include <functional>
#include <memory>

#include "bench_log.h"
#include "bench_timing.h"
#include "bench_weights.h"
#include "models/io/fp8.h"
#include "models/wan/wan_block_swap.h"
#include "models/wan/wan_model.h"

namespace vidgraph::bench {
namespace {

using nlohmann::json;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct DitInputs {
  at::Tensor x;        // [1, in_dim, F*pt, H*ph, W*pw]
  at::Tensor t;        // [1, F] fp32
  at::Tensor context;  // [1, text_len, text_dim]
};

DitInputs make_inputs(const DitBenchOptions& o) {
  const wan::WanConfig& c = o.config;
  const auto& p = c.patch_size;
  const auto opts = at::TensorOptions().device(o.device).dtype(o.dtype);
  DitInputs in;
  in.x = at::randn({1, c.in_dim, o.grid[0] * p[0], o.grid[1] * p[1], o.grid[2] * p[2]}, opts);
  in.t = at::full({1, o.grid[0]}, 700.0, opts.dtype(at::kFloat));
  in.t.select(1, 0).fill_(0.0);  // the clean first frame of image-to-video
  in.context = at::randn({1, c.text_len, c.text_dim}, opts);
  return in;
}

// The plugin's `method` prepared once for the bench's grid (sparse methods at o.sparsity), or the
// model's own dense attention for kLibtorchDense.
wan::AttentionRun attention_run(const DitBenchOptions& o, plugin::AttentionBackend& backend,
                                const std::string& method) {
  wan::AttentionRun run;
  if (method != kLibtorchDense) {
    const std::vector<plugin::MethodInfo> methods = backend.methods();
    const plugin::MethodInfo* info = plugin::find_method(methods, method);
    wan::AttentionChoice choice{&backend, method, {}};
    if (info != nullptr && info->kind != plugin::MethodKind::Dense) choice.params["sparsity"] = o.sparsity;
    const auto& p = o.config.patch_size;
    run = choice.prepare(o.config, o.device, o.dtype,
                         {o.config.in_dim, o.grid[0] * p[0], o.grid[1] * p[1], o.grid[2] * p[2]});
  }
  if (o.fused_elementwise) run.dit_kernels = backend.dit_kernels();
  return run;
}

// Runs `measure` and returns its JSON, or {"error": ...} when it throws.
json guarded(const std::string& what, const std::function<json()>& measure) {
  try {
    return measure();
  } catch (const std::exception& e) {
    bench_logger()->error("{} failed: {}", what, e.what());
    return json{{"error", e.what()}};
  }
}

json time_forward(const DitBenchOptions& o, wan::WanModelImpl& model, const DitInputs& in,
                  const wan::AttentionRun& run) {
  c10::InferenceMode inference;  // as the sampler runs the DiT (the fused kernels need it)
  at::Tensor out;
  const RunStats s = time_runs(o.device, o.warmup, o.repeats,
                               [&] { out = model.forward(in.x, in.t, in.context, run); });  // [1, out_dim, F, H, W]
  json j = to_json(s, o.device);
  j["finite"] = out.defined() && at::isfinite(out).all().item<bool>();
  return j;
}

// Random self-attention operands of one block: q, k, v, gate [1, L, H, D].
struct AttentionOperands {
  at::Tensor q, k, v, gate;
};

AttentionOperands make_operands(const DitBenchOptions& o) {
  const int64_t L = o.grid[0] * o.grid[1] * o.grid[2];
  const int64_t H = o.config.num_heads, D = o.config.head_dim();
  const auto opts = at::TensorOptions().device(o.device).dtype(o.dtype);
  return {at::randn({1, L, H, D}, opts), at::randn({1, L, H, D}, opts), at::randn({1, L, H, D}, opts),
          at::randn({1, L, H, D}, opts) * 0.1};
}

// One self-attention call of `method` on the operands, with the sparse extras of `attn`'s block.
plugin::AttentionCall attention_call(const wan::AttentionRun& run, const AttentionOperands& a,
                                     const wan::WanSelfAttentionImpl& attn) {
  plugin::AttentionCall call;
  call.q = a.q;
  call.k = a.k;
  call.v = a.v;
  call.prepared = run.prepared;
  if (run.prepared->uses_gate) call.extras.gate = a.gate;
  if (run.prepared->uses_proj_l) {
    call.extras.proj_l_weight = attn.proj_l->weight;
    call.extras.proj_l_bias = attn.proj_l->bias;
  }
  return call;
}

wan::WanSelfAttentionImpl& self_attention(const std::shared_ptr<torch::nn::Module>& block) {
  return *block->as<wan::WanAttentionBlock>()->self_attn;
}

// The num_layers self-attention calls of `method`, each with its block's proj_l; for sparse plugin
// methods also what the selection kept (one untimed call).
json time_attention(const DitBenchOptions& o, wan::WanModelImpl& model, plugin::AttentionBackend& backend,
                    const AttentionOperands& a, const std::string& method) {
  const wan::AttentionRun run = attention_run(o, backend, method);
  json j = json::object();
  if (run.backend != nullptr && run.prepared->kind != plugin::MethodKind::Dense) {
    const plugin::SelectionStats stats =
        run.backend->forward_with_stats(attention_call(run, a, self_attention(model.blocks->ptr(0)))).stats;
    j["selection"] = json{{"density", stats.density}, {"topk", stats.topk}, {"kv_tiles", stats.kv_tiles}};
  }
  const RunStats s = time_runs(o.device, o.warmup, o.repeats, [&] {
    for (const auto& block : *model.blocks) {
      if (run.backend == nullptr) {
        wan::dense_attention(a.q, a.k, a.v);  // [1, L, H, D]
      } else {
        run.backend->forward(attention_call(run, a, self_attention(block)));
      }
    }
  });
  j.update(to_json(s, o.device));
  j["calls"] = o.config.num_layers;
  return j;
}

// The GEMMs of every block (gate apart when `gate_only`), on random activations of the real shapes.
json time_linears(const DitBenchOptions& o, wan::WanModelImpl& model, bool gate_only) {
  const wan::WanConfig& c = o.config;
  const int64_t L = o.grid[0] * o.grid[1] * o.grid[2];
  const auto opts = at::TensorOptions().device(o.device).dtype(o.dtype);
  const at::Tensor xs = at::randn({1, L, c.dim}, opts);                                     // normalised tokens
  const at::Tensor text = at::randn({1, c.text_len, c.dim}, opts);                          // embedded text
  const at::Tensor hidden = gate_only ? at::Tensor() : at::randn({1, L, c.ffn_dim}, opts);  // FFN hidden
  const RunStats s = time_runs(o.device, o.warmup, o.repeats, [&] {
    for (const auto& module : *model.blocks) {
      auto& b = *module->as<wan::WanAttentionBlock>();
      if (gate_only) {
        b.self_attn->to_gate_compress(xs);
        continue;
      }
      for (wan::WanLinear* layer : {&b.self_attn->q, &b.self_attn->k, &b.self_attn->v, &b.self_attn->o,
                                    &b.cross_attn->q, &b.cross_attn->o, &b.ffn->fc0}) {
        (*layer)(xs);  // [1, L, dim] -> [1, L, dim or ffn_dim]
      }
      b.cross_attn->k(text);  // [1, text_len, dim]
      b.cross_attn->v(text);
      b.ffn->fc2(hidden);  // [1, L, ffn_dim] -> [1, L, dim]
    }
  });
  const double d = double(c.dim);
  const double per_block =
      gate_only ? 2.0 * L * d * d : 2.0 * L * d * d * 6 + 2.0 * c.text_len * d * d * 2 + 2.0 * L * d * c.ffn_dim * 2;
  const double flops = per_block * double(c.num_layers);
  json j = to_json(s, o.device);
  j["flops"] = flops;
  j["tflops"] = s.median_ms > 0 ? flops / (s.median_ms * 1e-3) / 1e12 : 0.0;
  return j;
}

double median_of(const json& j) {
  return j.contains("median_ms") ? j["median_ms"].get<double>() : -1.0;
}

// total - attention - GEMMs per method, from the measured pieces (absent when a piece failed).
json split_forward(const json& methods, const json& attention, const json& linear, const json& gate) {
  json out = json::object();
  for (const auto& [name, m] : methods.items()) {
    const double total = median_of(m), attn = attention.contains(name) ? median_of(attention[name]) : -1.0;
    const double gemm = median_of(linear), gate_ms = name == "full" || name == kLibtorchDense ? 0.0 : median_of(gate);
    if (total < 0 || attn < 0 || gemm < 0 || gate_ms < 0) continue;
    const double other = total - attn - gemm - gate_ms;
    out[name] = json{{"total_ms", total},
                     {"attention_ms", attn},
                     {"linear_ms", gemm + gate_ms},
                     {"other_ms", other},
                     {"attention_share", attn / total},
                     {"linear_share", (gemm + gate_ms) / total},
                     {"other_share", other / total}};
  }
  return out;
}

json model_json(const DitBenchOptions& o, wan::WanModelImpl& model) {
  return json{{"num_layers", o.config.num_layers},
              {"dim", o.config.dim},
              {"num_heads", o.config.num_heads},
              {"ffn_dim", o.config.ffn_dim},
              {"weights_gib", double(parameter_bytes(model)) / kGiB},
              {"sparse_extras",
               "to_gate_compress and proj_l in every block, random: vsa runs its gated coarse "
               "branch, sla_star its linear branch; full skips the gate projection"}};
}

// The first method's forward with the last N blocks streamed from pinned host memory, per N; the
// model is left with the last N of the list offloaded (this section runs last).
json time_block_swap(const DitBenchOptions& o, wan::WanModelImpl& model, const DitInputs& in,
                     plugin::AttentionBackend& backend) {
  json out = json::object();
  for (const int64_t n : o.offload_blocks) {
    out[std::to_string(n)] = guarded("block swap " + std::to_string(n), [&] {
      wan::wan_set_offload_blocks(model, n);
      release_cached_memory(o.device);
      json j = time_forward(o, model, in, attention_run(o, backend, o.methods.front()));
      j["method"] = o.methods.front();
      j["offload_blocks"] = n;
      return j;
    });
  }
  return out;
}

// What experts_on_gpu=active costs at an expert switch: a second expert of the same config (random
// weights), sent to page-locked host memory as Load Wan Model leaves the waiting one ("page_lock_ms":
// what a first switch paid when the leaving expert moved out before the arriving one came in), then
// `swaps` switches by wan_trade_places, as the sampler makes them (the two alternate).
json time_expert_swap(const DitBenchOptions& o, wan::WanModelImpl& model, int swaps) {
  const int64_t layers = static_cast<int64_t>(model.blocks->size());
  wan::WanModel other(model.options);
  fill_random_parameters(*other);
  const double page_lock_ms =
      time_runs(o.device, 0, 1, [&] { wan::wan_set_offload_blocks(*other, layers); }).median_ms;
  std::vector<double> ms;
  for (int i = 0; i < swaps; ++i) {
    wan::WanModelImpl& leaving = i % 2 == 0 ? model : *other;
    wan::WanModelImpl& arriving = i % 2 == 0 ? *other : model;
    ms.push_back(time_runs(o.device, 0, 1, [&] { wan::wan_trade_places(leaving, arriving, 0); }).median_ms);
  }
  if (swaps % 2 == 1) wan::wan_trade_places(*other, model, 0);  // the bench's model back on the device
  const double gib = double(parameter_bytes(model)) / kGiB;
  const double first = ms.front();
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  return json{{"weights_gib", gib},
              {"page_lock_ms", page_lock_ms},
              {"switch", json{{"first_ms", first}, {"median_ms", median}, {"runs", ms.size()},
                              {"gib_per_s_each_way", gib / (median / 1000.0)}}}};
}

// Every linear weight as fp8 E4M3 codes with a per-tensor scale, held as a checkpoint loaded with
// keep_fp8 holds them (the values are random: time and memory are what is measured).
void keep_linears_as_fp8(wan::WanModelImpl& model) {
  for (auto& [name, linear] : wan::wan_linears_by_weight(model)) {
    const at::Tensor w = linear->weight;
    const float scale = std::max(w.abs().max().item<float>(), 1e-30f) / 448.0f;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)  // has float8
    const at::Tensor codes = (w.to(at::kFloat) / scale).to(at::kFloat8_e4m3fn).view(at::kByte);  // on the device
#else
    const at::Tensor codes = model_io::fp8_encode(w / scale, model_io::Fp8Format::E4M3FN).to(w.device());
#endif
    linear->keep_fp8(codes, model_io::Fp8Format::E4M3FN, scale, w.device());
  }
}

// Every method with the linears kept as fp8 (the model keeps them: this section runs last).
json time_fp8_weights(const DitBenchOptions& o, wan::WanModelImpl& model, const DitInputs& in,
                      plugin::AttentionBackend& backend) {
  wan::wan_set_offload_blocks(model, 0);
  keep_linears_as_fp8(model);
  release_cached_memory(o.device);
  json out{{"weights_gib", double(parameter_bytes(model)) / kGiB}, {"format", "F8_E4M3, per-tensor scale"}};
  for (const std::string& m : o.methods) {
    out[m] = guarded("fp8 weights " + m, [&] { return time_forward(o, model, in, attention_run(o, backend, m)); });
  }
  return out;
}

}  // namespace

json run_dit_bench(const DitBenchOptions& o, plugin::AttentionBackend& backend) {
  auto log = bench_logger();
  c10::NoGradGuard no_grad;
  wan::WanConfig config = o.config;
  config.with_gate_compress = true;
  config.with_proj_l = true;
  DitBenchOptions opts = o;
  opts.config = config;
  wan::WanModelOptions mo;
  mo.config = config;
  mo.device = o.device;
  mo.compute_dtype = o.dtype;
  wan::WanModel model(mo);
  fill_random_parameters(*model);
  const DitInputs in = make_inputs(opts);
  const int64_t L = o.grid[0] * o.grid[1] * o.grid[2];
  json result{{"model", model_json(opts, *model)},
              {"inputs",
               {{"x", in.x.sizes().vec()},
                {"t", in.t.sizes().vec()},
                {"context", in.context.sizes().vec()},
                {"grid", o.grid},
                {"tokens", L}}}};
  std::vector<std::string> methods = o.methods;
  methods.emplace_back(kLibtorchDense);
  json timed = json::object();
  for (const std::string& m : methods) {
    log->info("DiT forward: {} ({} tokens, {} layers)", m, L, config.num_layers);
    release_cached_memory(o.device);
    timed[m] = guarded("DiT forward " + m, [&] {
      json j = time_forward(opts, *model, in, attention_run(opts, backend, m));
      if (m != "full" && m != kLibtorchDense) j["sparsity"] = o.sparsity;
      if (m == kLibtorchDense) {
        j["attention"] = TORCH_VERSION_MAJOR >= 2 ? "at::scaled_dot_product_attention"
                                                  : "chunked at::matmul + softmax (this LibTorch has no SDPA)";
      }
      return j;
    });
  }
  result["methods"] = timed;
  plugin::DitKernels* fused = backend.dit_kernels();
  result["fused_elementwise"] = fused != nullptr && fused->supports(o.device, o.dtype);
  if (result["fused_elementwise"].get<bool>()) {
    DitBenchOptions aten = opts;
    aten.fused_elementwise = false;
    json peer = json::object();
    for (const std::string& m : methods) {
      log->info("DiT forward: {} with the blocks' elementwise steps on ATen ops", m);
      peer[m] = guarded("DiT forward (ATen elementwise) " + m,
                        [&] { return time_forward(aten, *model, in, attention_run(aten, backend, m)); });
    }
    result["aten_elementwise"] = peer;
  }
  log->info("DiT breakdown: self-attention calls and GEMMs apart");
  release_cached_memory(o.device);
  json attention = json::object();
  {
    const AttentionOperands a = make_operands(opts);
    for (const std::string& m : methods) {
      attention[m] = guarded("attention " + m, [&] { return time_attention(opts, *model, backend, a, m); });
    }
  }
  const json linear = guarded("linear layers", [&] { return time_linears(opts, *model, false); });
  const json gate = guarded("gate linear layers", [&] { return time_linears(opts, *model, true); });
  result["breakdown"] = json{{"attention", attention},
                             {"linear", linear},
                             {"gate_linear", gate},
                             {"per_method", split_forward(timed, attention, linear, gate)}};
  if (!o.offload_blocks.empty()) result["block_swap"] = time_block_swap(opts, *model, in, backend);
  if (o.expert_swaps > 0) {
    result["expert_swap"] = guarded("expert swap", [&] { return time_expert_swap(opts, *model, o.expert_swaps); });
  }
  if (o.fp8_weights) result["fp8_weights"] = time_fp8_weights(opts, *model, in, backend);
  return result;
}

}  // namespace vidgraph::bench
