// VSA pieces benchmark: times each stage of one `vsa` call on the GPU path apart, at the Wan2.2-5B
// shape by default, and prints JSON (medians of device-event timings, warm-up first):
//   tile (q, k, v → 64-slot tiles), coarse (tile means, scores, finiteness check, coarse softmax·V),
//   select (GPU top-k + inverted lists), fine_fwd / fine_bwd (block-sparse kernels), untile+gate,
//   and the dense kernels (every tile) for reference. Never pass/fail.
// Usage: vsa_pieces [T H W] [sparsity] [repeats]
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/randn_like.h>
#include <ATen/ops/softmax.h>

#include "plugins/attention/gpu/gpu_path.h"
#include "plugins/attention/tile_layout.h"
#include "plugins/attention/tile_selection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
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

at::Tensor tile_mean(const at::Tensor& tiled, const attention::TileLayout& l) {
  const at::Tensor sums =
      tiled.to(at::kFloat).view({tiled.size(0), tiled.size(1), l.num_tiles, 64, tiled.size(3)}).sum(3);
  return sums / l.tile_sizes.to(at::kFloat).unsqueeze(-1);
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
  const auto layout = attention::tile_layout(grid, {4, 4, 4}, q.device());
  const int64_t n = layout->num_tiles, topk = attention::topk_for_sparsity(sparsity, n);
  const double scale = 1.0 / std::sqrt(double(d));
  attention::GpuPath gpu;

  at::Tensor qt, kt, vt, scores, oc;
  const double t_tile = median_ms([&] {
    qt = attention::tile_tokens(q, *layout);
    kt = attention::tile_tokens(k, *layout);
    vt = attention::tile_tokens(v, *layout);
  }, repeats);
  const double t_coarse = median_ms([&] {
    const at::Tensor qc = tile_mean(qt, *layout), kc = tile_mean(kt, *layout), vc = tile_mean(vt, *layout);
    scores = at::matmul(qc, kc.transpose(-1, -2)) * scale;
    oc = at::matmul(at::softmax(scores, -1), vc);
  }, repeats);
  const double t_check = median_ms([&] { (void)at::isfinite(scores).all().item<bool>(); }, repeats);
  attention::TopkSelection sel;
  const double t_select = median_ms([&] { sel = gpu.select_topk(scores, topk); }, repeats);

  attention::SparseForwardArgs fa;
  fa.q = qt;
  fa.k = kt;
  fa.v = vt;
  fa.tile_sizes = layout->tile_sizes_i32;
  fa.q2k = sel.q2k;
  fa.scale = scale;
  attention::SparseForwardResult fr;
  const double t_fwd = median_ms([&] { fr = gpu.sparse_forward(fa); }, repeats);
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
  const double t_bwd = median_ms([&] { gpu.sparse_backward(ba); }, repeats);
  const double t_untile = median_ms([&] {
    const at::Tensor out = attention::untile_tokens(fr.out, *layout);
    const at::Tensor coarse = oc.index_select(2, layout->tile_of_token).permute({0, 2, 1, 3});
    (void)(out + (coarse * gate).to(out.scalar_type()));
  }, repeats);

  attention::SparseForwardArgs da = fa;
  da.q2k = at::arange(n, opts.dtype(at::kInt)).expand({b, h, n, n}).contiguous();
  attention::SparseForwardResult dr;
  const double t_dense_fwd = median_ms([&] { dr = gpu.sparse_forward(da); }, std::max(3, repeats / 4));
  attention::SparseBackwardArgs db = ba;
  db.q2k = da.q2k;
  db.out = dr.out;
  db.lse = dr.lse;
  const double t_dense_bwd = median_ms([&] { gpu.sparse_backward(db); }, std::max(3, repeats / 4));

  const double dense_flops = 4.0 * b * h * double(n * 64) * double(n * 64) * d;
  const double sparse_flops = dense_flops * double(topk) / double(n);
  auto tf = [](double flops, double ms) { return flops / (ms * 1e-3) / 1e12; };
  std::printf(
      "{\n  \"grid\": [%lld, %lld, %lld], \"tokens\": %lld, \"tiles\": %lld, \"topk\": %lld, \"sparsity\": %g,\n"
      "  \"ms\": {\"tile_qkv\": %.3f, \"coarse\": %.3f, \"finite_check_sync\": %.3f, \"select_topk_lists\": %.3f,\n"
      "         \"fine_fwd\": %.3f, \"fine_bwd\": %.3f, \"untile_gate\": %.3f, \"dense_fwd\": %.3f, \"dense_bwd\": %.3f},\n"
      "  \"tflops_sparse_aware\": {\"fine_fwd\": %.1f, \"fine_bwd\": %.1f, \"dense_fwd\": %.1f, \"dense_bwd\": %.1f}\n}\n",
      (long long)grid.t, (long long)grid.h, (long long)grid.w, (long long)s, (long long)n, (long long)topk, sparsity,
      t_tile, t_coarse, t_check, t_select, t_fwd, t_bwd, t_untile, t_dense_fwd, t_dense_bwd,
      tf(sparse_flops, t_fwd), tf(2.5 * sparse_flops, t_bwd), tf(dense_flops, t_dense_fwd),
      tf(2.5 * dense_flops, t_dense_bwd));
  return 0;
}
