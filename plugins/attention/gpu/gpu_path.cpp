// GPU device path: ATen tensors in, kernels/ launchers out. See gpu_path.h.
#include "plugins/attention/gpu/gpu_path.h"

#include "plugins/attention/gpu/gpu_staging.h"
#include "plugins/attention/gpu/gpu_util.h"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

namespace vidgraph::attention {
namespace {

namespace vk = vidgraph::kernels;
using gpu::check_status;
using gpu::current_stream;
using gpu::element_type;

// The launch fields every kernel call shares: dtype, shape, softmax scale.
template <typename Params>
Params launch_params(const at::Tensor& q, int batch, int heads, int seq, int dim, double scale) {
  Params p;
  p.dtype = element_type(q);
  p.batch = batch;
  p.heads = heads;
  p.seq_q = p.seq_kv = seq;
  p.head_dim = dim;
  p.scale = float(scale);
  return p;
}

// A [B, H, S, D]-shaped tensor (contiguous tiled, or a view of [B, S, H, D]) as the kernels' view.
vk::TensorView bhsd_view(const at::Tensor& t) {
  return gpu::rows_view(t, 2, 1);
}

void check_tiled(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK(t.dim() == 4 && t.sizes() == q.sizes(), "attention GPU path: ", name, " must be ", q.sizes(), ", got ",
              t.sizes());
  TORCH_CHECK(t.is_contiguous() && t.device() == q.device() && t.scalar_type() == q.scalar_type(),
              "attention GPU path: ", name, " must be contiguous, on ", q.device(), ", of dtype ", q.scalar_type());
}

void check_int32(const at::Tensor& t, const char* name, const at::Tensor& q) {
  TORCH_CHECK(t.defined() && t.scalar_type() == at::kInt && t.is_contiguous() && t.device() == q.device(),
              "attention GPU path: ", name, " must be a contiguous int32 tensor on ", q.device());
}

// Common geometry of a call; `dense` when the selection lists every KV tile.
struct Geometry {
  int batch, heads, seq, dim, tiles;
  bool dense;
};

Geometry geometry(const at::Tensor& q, const at::Tensor& q2k, const at::Tensor& tile_sizes, int64_t tile_volume) {
  TORCH_CHECK(tile_volume == 64, "attention GPU path: the kernels need a tile volume of 64, got ", tile_volume);
  TORCH_CHECK(q.dim() == 4, "attention GPU path: q must be [B, H, Sp, D], got ", q.sizes());
  Geometry g{int(q.size(0)), int(q.size(1)), int(q.size(2)), int(q.size(3)), int(tile_sizes.numel()), false};
  TORCH_CHECK(int64_t(g.tiles) * 64 == q.size(2), "attention GPU path: Sp = ", q.size(2), " is not 64 x ", g.tiles,
              " tiles");
  TORCH_CHECK(q2k.dim() == 4 && q2k.size(0) == g.batch && q2k.size(1) == g.heads && q2k.size(2) == g.tiles,
              "attention GPU path: q2k must be [", g.batch, ", ", g.heads, ", ", g.tiles, ", topk], got ", q2k.sizes());
  g.dense = q2k.size(3) == g.tiles;  // distinct tiles, all of them: every block
  return g;
}

// Dense form (device_path.h): q, k, v [B, S, H, D] with any strides, S any; rows the kernels cannot
// read are copied once. Outputs [B, S, H, D] contiguous, lse fp32 [B, H, S].
struct DenseGeometry {
  int batch, seq, heads, dim;
};

DenseGeometry dense_geometry(const at::Tensor& q,
                             std::initializer_list<std::pair<const at::Tensor*, const char*>> others) {
  TORCH_CHECK(q.dim() == 4, "attention GPU path: q must be [B, S, H, D], got ", q.sizes());
  for (const auto& [t, name] : others)
    TORCH_CHECK(
        t->defined() && t->sizes() == q.sizes() && t->device() == q.device() && t->scalar_type() == q.scalar_type(),
        "attention GPU path: ", name, " must be ", q.sizes(), " of dtype ", q.scalar_type(), " on ", q.device());
  return {int(q.size(0)), int(q.size(1)), int(q.size(2)), int(q.size(3))};
}

// A [B, S, H, D] tensor as the kernels' view.
vk::TensorView bshd_view(const at::Tensor& t) {
  return gpu::rows_view(t, 1, 2);
}

SparseForwardResult dense_forward(const SparseForwardArgs& a, const vk::AttentionTuning* tuning) {
  const DenseGeometry g = dense_geometry(a.q, {{&a.k, "k"}, {&a.v, "v"}});
  const at::Tensor q = gpu::rows_ready_or_copy(a.q), k = gpu::rows_ready_or_copy(a.k), v = gpu::rows_ready_or_copy(a.v);
  SparseForwardResult r;
  r.out = at::empty(q.sizes(), q.options());
  r.lse = at::empty({g.batch, g.heads, g.seq}, q.options().dtype(at::kFloat));
  auto p = launch_params<vk::FlashForwardParams>(q, g.batch, g.heads, g.seq, g.dim, a.scale);
  p.tuning = tuning;
  p.q = bshd_view(q);
  p.k = bshd_view(k);
  p.v = bshd_view(v);
  p.o = bshd_view(r.out);
  p.lse = r.lse.data_ptr<float>();
  check_status(vk::flash_forward(p, current_stream(q)), "dense forward");
  return r;
}

SparseBackwardResult dense_backward(const SparseBackwardArgs& a, const vk::AttentionTuning* tuning) {
  const DenseGeometry g = dense_geometry(a.q, {{&a.k, "k"}, {&a.v, "v"}, {&a.out, "out"}, {&a.dout, "dout"}});
  TORCH_CHECK(
      a.lse.scalar_type() == at::kFloat && a.lse.is_contiguous() && a.lse.numel() == int64_t(g.batch) * g.heads * g.seq,
      "attention GPU path: lse must be contiguous fp32 [B, H, S]");
  const at::Tensor q = gpu::rows_ready_or_copy(a.q), k = gpu::rows_ready_or_copy(a.k), v = gpu::rows_ready_or_copy(a.v),
                   out = gpu::rows_ready_or_copy(a.out), dout = gpu::rows_ready_or_copy(a.dout);
  SparseBackwardResult r;
  r.dq = at::empty(q.sizes(), q.options());
  r.dk = at::empty(q.sizes(), q.options());
  r.dv = at::empty(q.sizes(), q.options());
  const at::Tensor delta = at::empty({g.batch, g.heads, g.seq}, q.options().dtype(at::kFloat));
  auto p = launch_params<vk::FlashBackwardParams>(q, g.batch, g.heads, g.seq, g.dim, a.scale);
  p.tuning = tuning;
  p.q = bshd_view(q);
  p.k = bshd_view(k);
  p.v = bshd_view(v);
  p.o = bshd_view(out);
  p.dout = bshd_view(dout);
  p.lse = a.lse.data_ptr<float>();
  p.delta = delta.data_ptr<float>();
  p.dq = bshd_view(r.dq);
  p.dk = bshd_view(r.dk);
  p.dv = bshd_view(r.dv);
  check_status(vk::flash_backward(p, current_stream(q)), "dense backward");
  return r;
}

}  // namespace

GpuPath::GpuPath() {
  for (auto& row : tuning_) row.store(nullptr);
}

const vk::AttentionTuning* GpuPath::read_tuning(c10::Device device) {
  const int index = device.has_index() ? device.index() : 0;
  TORCH_CHECK(index >= 0 && index < kMaxDevices, "attention GPU path: device index ", index, " is beyond ",
              kMaxDevices);
  std::lock_guard<std::mutex> lock(tuning_mutex_);
  const c10::DeviceGuard guard(c10::Device(device.type(), static_cast<c10::DeviceIndex>(index)));
  const vk::AttentionTuning row = vk::default_tuning();  // the row of the current (guarded) device
  const auto same = [&row](const vk::AttentionTuning& t) {
    return t.fwd_stages == row.fwd_stages && t.bwd_stages == row.bwd_stages && t.kv_evict_first == row.kv_evict_first &&
           t.index_in_shared == row.index_in_shared && t.fwd_q_in_shared == row.fwd_q_in_shared &&
           t.bwd_q_in_shared == row.bwd_q_in_shared && t.fwd_wgmma == row.fwd_wgmma && t.bwd_wgmma == row.bwd_wgmma;
  };
  auto it = std::find_if(tuning_rows_.begin(), tuning_rows_.end(), same);
  if (it == tuning_rows_.end()) it = tuning_rows_.insert(tuning_rows_.end(), row);
  tuning_[index].store(&*it, std::memory_order_release);
  return &*it;
}

const vk::AttentionTuning* GpuPath::tuning_for(c10::Device device) {
  const int index = device.has_index() ? device.index() : 0;
  if (index >= 0 && index < kMaxDevices) {
    if (const vk::AttentionTuning* row = tuning_[index].load(std::memory_order_acquire)) return row;
  }
  return read_tuning(device);
}

void GpuPath::prepare(c10::Device device) { read_tuning(device); }

std::string GpuPath::name() const {
#if defined(USE_ROCM)
  return "hip-mfma";
#else
  return "cuda-mma";
#endif
}

bool GpuPath::supports(int64_t d, int64_t tile_volume, at::ScalarType dtype, std::string* why) const {
  std::string reason;
  if (d != 64 && d != 128) {
    reason = "head dim " + std::to_string(d) + " is not supported by the GPU kernels (64 or 128)";
  } else if (tile_volume != 64) {
    reason = "the GPU kernels need tiles of 64 tokens (e.g. 4x4x4), got a volume of " + std::to_string(tile_volume);
  } else if (dtype != at::kBFloat16 && dtype != at::kHalf) {
    reason = std::string("the GPU kernels take bf16 or fp16 tensors, got ") + c10::toString(dtype) +
             " (convert the inputs, e.g. .to(torch::kBFloat16))";
  }
  if (why != nullptr) *why = reason;
  return reason.empty();
}

SparseForwardResult GpuPath::sparse_forward(const SparseForwardArgs& a) {
  const c10::DeviceGuard device(a.q.device());  // launches and allocations on the tensors' GPU
  const vk::AttentionTuning* tuning = tuning_for(a.q.device());
  if (!a.q2k.defined()) return dense_forward(a, tuning);
  const Geometry g = geometry(a.q, a.q2k, a.tile_sizes, a.tile_volume);
  check_tiled(a.k, "k", a.q);
  check_tiled(a.v, "v", a.q);
  check_int32(a.tile_sizes, "tile_sizes", a.q);
  check_int32(a.q2k, "q2k", a.q);
  // out [B, H, Sp, D], lse fp32 [B, H, Sp]
  SparseForwardResult r;
  r.out = at::empty(a.q.sizes(), a.q.options());
  r.lse = at::empty({g.batch, g.heads, g.seq}, a.q.options().dtype(at::kFloat));
  auto p = launch_params<vk::FlashForwardParams>(a.q, g.batch, g.heads, g.seq, g.dim, a.scale);
  p.tuning = tuning;
  p.q = bhsd_view(a.q);
  p.k = bhsd_view(a.k);
  p.v = bhsd_view(a.v);
  p.o = bhsd_view(r.out);
  p.lse = r.lse.data_ptr<float>();
  if (!g.dense) {
    p.q2k.index = a.q2k.data_ptr<int32_t>();
    p.q2k.max_len = int(a.q2k.size(3));  // exactly topk per row: no count array
  }
  p.kv_block_valid = a.tile_sizes.data_ptr<int32_t>();
  check_status(vk::flash_forward(p, current_stream(a.q)), "block-sparse forward");
  return r;
}

SparseBackwardResult GpuPath::sparse_backward(const SparseBackwardArgs& a) {
  const c10::DeviceGuard device(a.q.device());
  const vk::AttentionTuning* tuning = tuning_for(a.q.device());
  if (!a.q2k.defined()) return dense_backward(a, tuning);
  const Geometry g = geometry(a.q, a.q2k, a.tile_sizes, a.tile_volume);
  for (const auto& [t, name] :
       {std::pair<const at::Tensor*, const char*>{&a.k, "k"}, {&a.v, "v"}, {&a.out, "out"}, {&a.dout, "dout"}})
    check_tiled(*t, name, a.q);
  check_int32(a.tile_sizes, "tile_sizes", a.q);
  check_int32(a.q2k, "q2k", a.q);
  TORCH_CHECK(
      a.lse.scalar_type() == at::kFloat && a.lse.is_contiguous() && a.lse.numel() == int64_t(g.batch) * g.heads * g.seq,
      "attention GPU path: lse must be contiguous fp32 [B, H, Sp]");
  // dq, dk, dv [B, H, Sp, D]; delta fp32 [B, H, Sp] (workspace)
  SparseBackwardResult r;
  r.dq = at::empty(a.q.sizes(), a.q.options());
  r.dk = at::empty(a.q.sizes(), a.q.options());
  r.dv = at::empty(a.q.sizes(), a.q.options());
  const at::Tensor delta = at::empty({g.batch, g.heads, g.seq}, a.q.options().dtype(at::kFloat));
  auto p = launch_params<vk::FlashBackwardParams>(a.q, g.batch, g.heads, g.seq, g.dim, a.scale);
  p.tuning = tuning;
  p.q = bhsd_view(a.q);
  p.k = bhsd_view(a.k);
  p.v = bhsd_view(a.v);
  p.o = bhsd_view(a.out);
  p.dout = bhsd_view(a.dout);
  p.lse = a.lse.data_ptr<float>();
  p.delta = delta.data_ptr<float>();
  p.dq = bhsd_view(r.dq);
  p.dk = bhsd_view(r.dk);
  p.dv = bhsd_view(r.dv);
  if (!g.dense) {
    check_int32(a.k2q, "k2q", a.q);
    check_int32(a.k2q_count, "k2q_count", a.q);
    TORCH_CHECK(a.k2q.dim() == 4 && a.k2q.size(2) == g.tiles && a.k2q.size(3) == g.tiles &&
                    a.k2q_count.numel() == int64_t(g.batch) * g.heads * g.tiles,
                "attention GPU path: k2q must be [B, H, N, N] with counts [B, H, N]");
    p.q2k.index = a.q2k.data_ptr<int32_t>();
    p.q2k.max_len = int(a.q2k.size(3));
    p.k2q.index = a.k2q.data_ptr<int32_t>();
    p.k2q.count = a.k2q_count.data_ptr<int32_t>();
    p.k2q.max_len = int(a.k2q.size(3));
  }
  p.kv_block_valid = a.tile_sizes.data_ptr<int32_t>();
  check_status(vk::flash_backward(p, current_stream(a.q)), "block-sparse backward");
  return r;
}

TopkSelection GpuPath::select_topk(const at::Tensor& scores, int64_t topk) {
  const c10::DeviceGuard device(scores.device());
  TORCH_CHECK(scores.dim() == 4 && scores.size(2) == scores.size(3),
              "attention GPU path: coarse scores must be [B, H, N, N], got ", scores.sizes());
  const int64_t n = scores.size(3);
  TORCH_CHECK(topk >= 1 && topk <= n, "attention GPU path: topk ", topk, " is outside 1..", n);
  // scores fp32 [B, H, N, N] -> q2k int32 [B, H, N, topk], k2q int32 [B, H, N, N], counts [B, H, N]
  const at::Tensor s = scores.to(at::kFloat).contiguous();
  const auto iopts = s.options().dtype(at::kInt);
  TopkSelection sel;
  sel.q2k = at::empty({s.size(0), s.size(1), n, topk}, iopts);
  const at::Tensor q2k_count = at::empty({s.size(0), s.size(1), n}, iopts);
  sel.k2q = at::empty({s.size(0), s.size(1), n, n}, iopts);
  sel.k2q_count = at::empty({s.size(0), s.size(1), n}, iopts);
  void* stream = current_stream(s);
  check_status(vk::topk_select(s.data_ptr<float>(), s.numel() / n, int(n), n, int(topk), sel.q2k.data_ptr<int32_t>(),
                               q2k_count.data_ptr<int32_t>(), stream),
               "top-k selection");
  vk::BlockLists lists;
  lists.index = sel.q2k.data_ptr<int32_t>();
  lists.count = q2k_count.data_ptr<int32_t>();
  lists.max_len = int(topk);
  check_status(vk::invert_block_lists(s.size(0) * s.size(1), int(n), int(n), lists, sel.k2q.data_ptr<int32_t>(),
                                      sel.k2q_count.data_ptr<int32_t>(), stream),
               "list inversion");
  return sel;
}

TiledTokens GpuPath::tile(const at::Tensor& x, const TileLayout& layout, bool with_mean) {
  return layout.tile_volume == 64 ? gpu::tile_with_mean(x, layout, with_mean) : DevicePath::tile(x, layout, with_mean);
}

at::Tensor GpuPath::untile(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                           const at::Tensor& gate) {
  return layout.tile_volume == 64 ? gpu::untile_gated(fine, layout, coarse, gate)
                                  : DevicePath::untile(fine, layout, coarse, gate);
}

at::Tensor GpuPath::add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k,
                                      const at::Tensor& v, const std::string& feature_map, const at::Tensor& weight,
                                      const at::Tensor& bias) {
  // fp16 holds sums of up to ~65k feature values (softmax features sum to S over D): longer fp16 inputs
  // take the fp32 ATen branch; bf16 has the range.
  constexpr int64_t kHalfLinearMaxTokens = 32768;
  if (q.scalar_type() == at::kHalf && q.size(1) > kHalfLinearMaxTokens)
    return DevicePath::add_linear_branch(out, q, k, v, feature_map, weight, bias);
  return gpu::add_linear_branch(out, q, k, v, feature_map, weight, bias);
}

void register_gpu_device_paths() {
  register_device_path(c10::DeviceType::CUDA, std::make_unique<GpuPath>());
}

}  // namespace vidgraph::attention
