#include "plugins/attention/gpu/gpu_vae_kernels.h"

#include "plugins/attention/gpu/gpu_util.h"
#include "vidgraph/kernels/vae_kernels.h"

#include <ATen/ops/empty_like.h>
#include <c10/util/Exception.h>

namespace vidgraph::attention {

namespace vk = vidgraph::kernels;
using gpu::check_status;
using gpu::current_stream;
using gpu::element_type;
using gpu::is_half;

namespace {

// A [B, C, T, H, W] or [N, C, H, W] bf16/fp16 activation on the GPU, dense with its channels
// innermost: then it is [positions, C] in memory, whatever the order of the positions.
void check_activation(const char* op, const char* name, const at::Tensor& t) {
  TORCH_CHECK(t.defined() && (t.dim() == 4 || t.dim() == 5) && t.is_cuda(), op, ": ", name,
              " must be a [B, C, T, H, W] or [N, C, H, W] tensor on the GPU, got ",
              t.defined() ? c10::str(t.sizes(), " on ", t.device()) : std::string("none"));
  TORCH_CHECK(is_half(t.scalar_type()), op, ": ", name, " must be bf16 or fp16, got ", t.scalar_type());
  TORCH_CHECK(t.stride(1) == 1 && t.is_non_overlapping_and_dense(), op, ": ", name,
              " must be channels-last (channels innermost, dense), got strides ", t.strides());
  TORCH_CHECK(t.size(1) % 4 == 0, op, ": ", name, "'s channels (", t.size(1), ") must be a multiple of 4");
}

// A per-channel vector of x's dtype with C contiguous elements on x's device; undefined = absent.
void check_vector(const char* op, const char* name, const at::Tensor& v, const at::Tensor& x) {
  if (!v.defined()) return;
  TORCH_CHECK(v.numel() == x.size(1) && v.is_contiguous() && v.scalar_type() == x.scalar_type() &&
                  v.device() == x.device(),
              op, ": ", name, " must hold ", x.size(1), " contiguous ", x.scalar_type(), " elements on ", x.device(),
              ", got ", v.sizes(), " ", v.scalar_type(), " on ", v.device());
}

// Same sizes, and the same strides wherever a size is above 1 (a size-1 dim's stride is arbitrary).
bool same_layout(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return false;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (a.size(d) > 1 && a.stride(d) != b.stride(d)) return false;
  }
  return true;
}

}  // namespace

bool GpuVaeKernels::supports(c10::Device device, at::ScalarType dtype) const {
  return device.is_cuda() && is_half(dtype);
}

at::Tensor GpuVaeKernels::rms_norm_silu(const at::Tensor& x, const at::Tensor& bias, const at::Tensor& gamma,
                                        bool silu) {
  const char* op = "rms_norm_silu";
  check_activation(op, "x", x);
  TORCH_CHECK(gamma.defined(), op, ": gamma is missing");
  check_vector(op, "gamma", gamma, x);
  check_vector(op, "bias", bias, x);
  at::Tensor out = at::empty_like(x);  // dense x: the same strides
  vk::RmsNormSiluParams p;
  p.rows = x.numel() / x.size(1);
  p.dim = int(x.size(1));
  p.type = element_type(x);
  p.x = x.data_ptr();
  p.bias = bias.defined() ? bias.data_ptr() : nullptr;
  p.gamma = gamma.data_ptr();
  p.silu = silu;
  p.out = out.data_ptr();
  check_status(vk::rms_norm_silu(p, current_stream(x)), op);
  return out;
}

at::Tensor GpuVaeKernels::bias_residual(const at::Tensor& y, const at::Tensor& bias, const at::Tensor& h) {
  const char* op = "bias_residual";
  check_activation(op, "y", y);
  check_activation(op, "h", h);
  TORCH_CHECK(same_layout(h, y) && h.scalar_type() == y.scalar_type() &&
                  h.device() == y.device(),
              op, ": h (", h.sizes(), ", strides ", h.strides(), ") must be laid out like y (", y.sizes(),
              ", strides ", y.strides(), "), of its dtype, on its device");
  check_vector(op, "bias", bias, y);
  vk::BiasResidualParams p;
  p.rows = y.numel() / y.size(1);
  p.dim = int(y.size(1));
  p.type = element_type(y);
  p.y = y.data_ptr();
  p.bias = bias.defined() ? bias.data_ptr() : nullptr;
  p.h = h.data_ptr();
  check_status(vk::bias_residual(p, current_stream(y)), op);
  return y;
}

}  // namespace vidgraph::attention
