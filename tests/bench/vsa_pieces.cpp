// VSA pieces benchmark: times each stage of one `vsa` / `sla_star` call on the GPU path apart, at the
// Wan2.2-5B shape by default, and prints JSON (medians of device-event timings, warm-up first):
//   tile_qkv          q, k, v -> 64-slot tiles through the path's row gathers (tile_qkv_aten: the
//                     shared ATen cat + index_select it replaces, for reference)
//   tile_qkv_means    the same tilings with the per-tile means formed in the pass (what a gated call
//                     runs); tile_means: what the means add; tile_means_aten_sum: an ATen
//                     bf16-in/fp32-accumulate reduction of the tiled tensors, for reference;
//                     tile_qkv_means_bwd: the gradient of both back to token order
//   coarse            scores over tile means, nan_to_num (no host sync), softmax·V
//   select_topk_lists GPU top-k + inverted lists
//   fine_fwd/fine_bwd block-sparse kernels
//   untile_gate       gated untile (coarse broadcast · gate fused into the tiled-layout add, one
//                     gather); untile_plain: the gather alone; untile_gate_bwd: its autograd backward
//   staging_fwd       the sum of the forward stages outside the fine kernel
//   linear_fwd, linear_fwd_bwd: the SLA* linear branch through proj_l added to an output
//                     (linear_fwd_aten: the fp32 ATen default, for reference)
//   dense_fwd/dense_bwd: `full`'s dense form on the [B, S, H, D] tensors (no tiling, no lists)
//   vsa_fwd, sla_star_fwd, vsa_fwd_bwd: whole calls through the plugin backend (gate and proj_l on)
// Never pass/fail. Usage: vsa_pieces [T H W] [sparsity] [repeats]
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/randn_like.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/sum.h>
#include <torch/csrc/autograd/autograd.h>

#include "plugins/api/prepare_for.h"
#include "plugins/attention/attention_plugin.h"
#include "plugins/attention/gpu/gpu_path.h"
#include "plugins/attention/tile_layout.h"
#include "plugins/attention/tile_selection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

using namespace vidgraph;

double median_ms(const std::function<void()>& fn, int repeats) {
  std::vector<double> t;
  for (int i = 0; i < repeats + 2; ++i) {
    at::cuda::CUDAEvent a(cudaEventDefault), b(cudaEventDefault);
    a.record();
    fn();
    b.record();
    b.synchronize();
    if (i >= 2) t.push_back(a.elapsed_time(b));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const plugin::TokenGrid grid{argc > 3 ? std::atoll(argv[1]) : 31, argc > 3 ? std::atoll(argv[2]) : 22,
                               argc > 3 ? std::atoll(argv[3]) : 40};
  const double sparsity = argc > 4 ? std::atof(argv[4]) : 0.875;
  const int repeats = argc > 5 ? std::atoi(argv[5]) : 20;
  const int64_t b = 1, h = 24, d = 128, s = grid.size();
  const auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kBFloat16);
  const at::Tensor q = at::randn({b, s, h, d}, opts), k = at::randn({b, s, h, d}, opts),
                   v = at::randn({b, s, h, d}, opts), gate = at::randn({b, s, h, d}, opts) * 0.1;
  const at::Tensor wl = at::randn({d, d}, opts.dtype(at::kFloat)) * 0.05,
                   bl = at::randn({d}, opts.dtype(at::kFloat)) * 0.05;
  const auto layout = attention::tile_layout(grid, {4, 4, 4}, q.device());
  const int64_t n = layout->num_tiles, topk = attention::topk_for_sparsity(sparsity, n);
  const double scale = 1.0 / std::sqrt(double(d));
  attention::GpuPath gpu;
  std::map<std::string, double> ms;
  const int few = std::max(3, repeats / 4);

  at::Tensor qt, kt, vt, qc, kc, vc, scores, oc;
  ms["tile_qkv_aten"] = median_ms(
      [&] {
        qt = attention::tile_tokens(q, *layout);
        kt = attention::tile_tokens(k, *layout);
        vt = attention::tile_tokens(v, *layout);
      },
      repeats);
  ms["tile_qkv"] = median_ms(
      [&] {
        qt = gpu.tile(q, *layout, false).tiled;
        kt = gpu.tile(k, *layout, false).tiled;
        vt = gpu.tile(v, *layout, false).tiled;
      },
      repeats);
  ms["tile_qkv_means"] = median_ms(
      [&] {
        const attention::TiledTokens tq = gpu.tile(q, *layout, true), tk = gpu.tile(k, *layout, true),
                                     tv = gpu.tile(v, *layout, true);
        qt = tq.tiled, kt = tk.tiled, vt = tv.tiled;
        qc = tq.mean, kc = tk.mean, vc = tv.mean;
      },
      repeats);
  ms["tile_means"] = ms["tile_qkv_means"] - ms["tile_qkv"];
  {
    const at::Tensor x = q.detach().requires_grad_(true);
    const at::Tensor dt = at::randn_like(qt), dm = at::randn_like(qc);
    ms["tile_qkv_means_bwd"] = 3 * median_ms(
                                       [&] {
                                         const attention::TiledTokens t = gpu.tile(x, *layout, true);
                                         (void)torch::autograd::grad({t.tiled, t.mean}, {x}, {dt, dm});
                                       },
                                       repeats) -
                               ms["tile_qkv_means"];
  }
  {
    // Reference: one ATen reduction per tensor reading bf16 with fp32 accumulation (no fp32 copy).
    const at::Tensor sizes = layout->tile_sizes.to(at::kFloat).unsqueeze(-1);
    ms["tile_means_aten_sum"] = median_ms(
        [&] {
          for (const at::Tensor* t : {&qt, &kt, &vt})
            (void)(at::sum(t->view({b, h, n, 64, d}), {3}, /*keepdim=*/false, at::kFloat) / sizes);
        },
        repeats);
  }
  ms["coarse"] = median_ms(
      [&] {
        scores = at::matmul(qc, kc.transpose(-1, -2)) * scale;
        (void)at::nan_to_num(scores);
        oc = at::matmul(at::softmax(scores, -1), vc);
      },
      repeats);
  attention::TopkSelection sel;
  ms["select_topk_lists"] = median_ms([&] { sel = gpu.select_topk(scores, topk); }, repeats);

  attention::SparseForwardArgs fa;
  fa.q = qt;
  fa.k = kt;
  fa.v = vt;
  fa.tile_sizes = layout->tile_sizes_i32;
  fa.q2k = sel.q2k;
  fa.scale = scale;
  attention::SparseForwardResult fr;
  ms["fine_fwd"] = median_ms([&] { fr = gpu.sparse_forward(fa); }, repeats);
  attention::SparseBackwardArgs ba;
  ba.dout = at::randn_like(qt);
  ba.q = qt;
  ba.k = kt;
  ba.v = vt;
  ba.out = fr.out;
  ba.lse = fr.lse;
  ba.tile_sizes = fa.tile_sizes;
  ba.q2k = sel.q2k;
  ba.k2q = sel.k2q;
  ba.k2q_count = sel.k2q_count;
  ba.scale = scale;
  ms["fine_bwd"] = median_ms([&] { gpu.sparse_backward(ba); }, repeats);
  ms["untile_plain"] = median_ms([&] { (void)gpu.untile(fr.out, *layout, {}, {}); }, repeats);
  ms["untile_gate"] = median_ms([&] { (void)gpu.untile(fr.out, *layout, oc, gate); }, repeats);
  {
    const at::Tensor fine = fr.out.detach().requires_grad_(true), coarse = oc.detach().requires_grad_(true),
                     g = gate.detach().requires_grad_(true);
    const at::Tensor dout = at::randn({b, s, h, d}, opts);
    ms["untile_gate_bwd"] = median_ms(
                                [&] {
                                  const at::Tensor out = gpu.untile(fine, *layout, coarse, g);
                                  (void)torch::autograd::grad({out}, {fine, coarse, g}, {dout});
                                },
                                repeats) -
                            ms["untile_gate"];
  }
  ms["staging_fwd"] = ms["tile_qkv_means"] + ms["coarse"] + ms["select_topk_lists"] + ms["untile_gate"];

  ms["linear_fwd_aten"] =
      median_ms([&] { (void)gpu.DevicePath::add_linear_branch(gate, q, k, v, "softmax", wl, bl); }, few);
  ms["linear_fwd"] = median_ms([&] { (void)gpu.add_linear_branch(gate, q, k, v, "softmax", wl, bl); }, repeats);
  {
    const at::Tensor ql = q.detach().requires_grad_(true), kl = k.detach().requires_grad_(true),
                     vl = v.detach().requires_grad_(true);
    const at::Tensor dout = at::randn({b, s, h, d}, opts);
    ms["linear_fwd_bwd"] = median_ms(
        [&] {
          const at::Tensor out = gpu.add_linear_branch(gate, ql, kl, vl, "softmax", wl, bl);
          (void)torch::autograd::grad({out}, {ql, kl, vl}, {dout});
        },
        repeats);
  }

  // full's dense form: the [B, S, H, D] tensors, no tiling, no lists
  attention::SparseForwardArgs da;
  da.q = q;
  da.k = k;
  da.v = v;
  da.scale = scale;
  attention::SparseForwardResult dr;
  ms["dense_fwd"] = median_ms([&] { dr = gpu.sparse_forward(da); }, few);
  attention::SparseBackwardArgs db;
  db.q = da.q;
  db.k = da.k;
  db.v = da.v;
  db.out = dr.out;
  db.lse = dr.lse;
  db.dout = at::randn({b, s, h, d}, opts);
  db.scale = scale;
  ms["dense_bwd"] = median_ms([&] { gpu.sparse_backward(db); }, few);

  {
    attention::AttentionPluginBackend backend;
    plugin::AttentionCall call;
    call.q = q;
    call.k = k;
    call.v = v;
    const auto prepared = [&](const std::string& method) {
      return plugin::prepare_for(backend, method, {{"sparsity", sparsity}}, q, grid);
    };
    const auto vsa = prepared("vsa");
    call.prepared = vsa;
    call.extras.gate = gate;
    ms["vsa_fwd"] = median_ms([&] { (void)backend.forward(call); }, repeats);
    call.prepared = prepared("sla_star");
    call.extras.proj_l_weight = wl;
    call.extras.proj_l_bias = bl;
    ms["sla_star_fwd"] = median_ms([&] { (void)backend.forward(call); }, repeats);
    call.prepared = vsa;
    call.q = q.detach().requires_grad_(true);
    call.k = k.detach().requires_grad_(true);
    call.v = v.detach().requires_grad_(true);
    const at::Tensor dout = at::randn({b, s, h, d}, opts);
    ms["vsa_fwd_bwd"] = median_ms(
        [&] {
          const at::Tensor out = backend.forward(call);
          (void)torch::autograd::grad({out}, {call.q, call.k, call.v}, {dout});
        },
        few);
    backend.shutdown();
  }

  const double dense_flops = 4.0 * b * h * double(s) * double(s) * d;
  const double sparse_flops = 4.0 * b * h * double(n * 64) * double(n * 64) * d * double(topk) / double(n);
  auto tf = [](double flops, double t) { return flops / (t * 1e-3) / 1e12; };
  std::printf(
      "{\n  \"grid\": [%lld, %lld, %lld], \"tokens\": %lld, \"tiles\": %lld, \"topk\": %lld, \"sparsity\": %g,\n  "
      "\"ms\": {",
      (long long)grid.t, (long long)grid.h, (long long)grid.w, (long long)s, (long long)n, (long long)topk, sparsity);
  const char* sep = "";
  for (const auto& [name, t] : ms) {
    std::printf("%s\n    \"%s\": %.3f", sep, name.c_str(), t);
    sep = ",";
  }
  std::printf(
      "\n  },\n  \"tflops_sparse_aware\": {\"fine_fwd\": %.1f, \"fine_bwd\": %.1f, \"dense_fwd\": %.1f, \"dense_bwd\": "
      "%.1f}\n}\n",
      tf(sparse_flops, ms["fine_fwd"]), tf(2.5 * sparse_flops, ms["fine_bwd"]), tf(dense_flops, ms["dense_fwd"]),
      tf(2.5 * dense_flops, ms["dense_bwd"]));
  return 0;
}
