// Test-only CPU device paths that exercise the DevicePath seam on a machine without a GPU:
//  - DenseCpuPath takes the dense form of device_path.h (as the GPU path does for `full`): it records
//    what it was given and emulates the dense kernels by padding to 64-token blocks and calling the
//    exact CPU path;
//  - HookCountingPath counts the staging hooks (tile and how many asked for means, untile, add_linear_branch) that the
//    methods call and delegates to the shared ATen defaults.
// Registering either for the CPU replaces the plugin's CPU path; PathSwap puts a plain CpuPath back.
#pragma once

#include "plugins/attention/cpu_path.h"
#include "plugins/attention/device_path.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/full.h>

#include <memory>

namespace attention_test {

using namespace vidgraph::attention;

class DenseCpuPath : public CpuPath {
 public:
  bool dense_strided() const override { return true; }

  SparseForwardResult sparse_forward(const SparseForwardArgs& a) override {
    if (a.q2k.defined()) return CpuPath::sparse_forward(a);
    ++dense_forwards;
    saw_strided_q = !a.q.is_contiguous();
    q_data = a.q.data_ptr();
    const Padded p = pad(a.q);
    SparseForwardArgs t = a;
    t.q = p.of(a.q);
    t.k = p.of(a.k);
    t.v = p.of(a.v);
    t.tile_sizes = p.tile_sizes;
    t.q2k = p.all_tiles;
    SparseForwardResult r = CpuPath::sparse_forward(t);
    return {Padded::back(r.out, p.s), r.lse.narrow(2, 0, p.s)};
  }

  SparseBackwardResult sparse_backward(const SparseBackwardArgs& a) override {
    if (a.q2k.defined()) return CpuPath::sparse_backward(a);
    ++dense_backwards;
    const Padded p = pad(a.q);
    SparseBackwardArgs t = a;
    t.q = p.of(a.q);
    t.k = p.of(a.k);
    t.v = p.of(a.v);
    t.out = p.of(a.out);
    t.dout = p.of(a.dout);
    t.lse = at::constant_pad_nd(a.lse, {0, p.sp - p.s});
    t.tile_sizes = p.tile_sizes;
    t.q2k = t.k2q = p.all_tiles;
    t.k2q_count = at::full({a.q.size(0), a.q.size(2), p.n}, p.n, at::kInt);
    SparseBackwardResult r = CpuPath::sparse_backward(t);
    return {Padded::back(r.dq, p.s), Padded::back(r.dk, p.s), Padded::back(r.dv, p.s)};
  }

  int dense_forwards = 0, dense_backwards = 0;
  bool saw_strided_q = false;
  const void* q_data = nullptr;

 private:
  // [B, S, H, D] -> [B, H, Sp, D] padded with zero rows to Sp = 64 n; every tile listed for every
  // query tile. back(): [B, H, Sp, D] -> [B, S, H, D].
  struct Padded {
    int64_t s, n, sp;
    at::Tensor tile_sizes, all_tiles;
    at::Tensor of(const at::Tensor& x) const {
      return at::constant_pad_nd(x.permute({0, 2, 1, 3}), {0, 0, 0, sp - s}).contiguous();
    }
    static at::Tensor back(const at::Tensor& x, int64_t s) { return x.narrow(2, 0, s).permute({0, 2, 1, 3}); }
  };
  static Padded pad(const at::Tensor& q) {
    Padded p;
    p.s = q.size(1);
    p.n = (p.s + 63) / 64;
    p.sp = p.n * 64;
    p.tile_sizes = at::full({p.n}, 64, at::kInt);
    p.tile_sizes[p.n - 1] = p.s - 64 * (p.n - 1);
    p.all_tiles = at::arange(p.n, at::kInt).expand({q.size(0), q.size(2), p.n, p.n}).contiguous();
    return p;
  }
};

class HookCountingPath : public CpuPath {
 public:
  TiledTokens tile(const at::Tensor& x, const TileLayout& layout, bool with_mean) override {
    ++tiles;
    tile_means += with_mean ? 1 : 0;
    return DevicePath::tile(x, layout, with_mean);
  }
  at::Tensor untile(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                    const at::Tensor& gate) override {
    ++untiles;
    gated_untiles += gate.defined() && coarse.defined() ? 1 : 0;
    return DevicePath::untile(fine, layout, coarse, gate);
  }
  at::Tensor add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               const std::string& feature_map, const at::Tensor& weight,
                               const at::Tensor& bias) override {
    ++linears;
    return DevicePath::add_linear_branch(out, q, k, v, feature_map, weight, bias);
  }
  int tiles = 0, tile_means = 0, untiles = 0, gated_untiles = 0, linears = 0;
};

// Registers `path` for the CPU for the lifetime of this object, then a plain CpuPath again.
template <typename Path>
class PathSwap {
 public:
  PathSwap() {
    auto p = std::make_unique<Path>();
    path_ = p.get();
    register_device_path(c10::DeviceType::CPU, std::move(p));
  }
  ~PathSwap() { register_device_path(c10::DeviceType::CPU, std::make_unique<CpuPath>()); }
  PathSwap(const PathSwap&) = delete;
  PathSwap& operator=(const PathSwap&) = delete;
  Path& operator*() const { return *path_; }
  Path* operator->() const { return path_; }

 private:
  Path* path_;
};

}  // namespace attention_test
