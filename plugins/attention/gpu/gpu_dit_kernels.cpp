#include "plugins/attention/gpu/gpu_dit_kernels.h"

#include "plugins/attention/gpu/gpu_util.h"
#include "vidgraph/kernels/dit_kernels.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/Exception.h>

#include <limits>

namespace vidgraph::attention {

namespace vk = vidgraph::kernels;
using gpu::check_status;
using gpu::current_stream;
using gpu::element_type;
using gpu::is_half;

namespace {

// [B, L, C] contiguous on the GPU, C a multiple of 4, of `dtype` (bf16 or fp16 when Undefined),
// sizes that fit the kernels' ints.
void check_activation(const char* op, const char* name, const at::Tensor& t, at::ScalarType dtype) {
  TORCH_CHECK(t.defined() && t.dim() == 3 && t.is_cuda() && t.is_contiguous(), op, ": ", name,
              " must be a contiguous [B, L, C] tensor on the GPU, got ",
              t.defined() ? c10::str(t.sizes(), " on ", t.device()) : std::string("none"));
  const bool any_half = dtype == at::ScalarType::Undefined;
  TORCH_CHECK(any_half ? is_half(t.scalar_type()) : t.scalar_type() == dtype, op, ": ", name, " must be ",
              any_half ? "bf16 or fp16" : c10::toString(dtype), ", got ", t.scalar_type());
  TORCH_CHECK(t.size(2) % 4 == 0, op, ": ", name, "'s last dim (", t.size(2), ") must be a multiple of 4");
  TORCH_CHECK(t.size(0) * t.size(1) <= std::numeric_limits<int32_t>::max(), op, ": ", name, " has too many rows (",
              t.size(0) * t.size(1), ")");
}

void check_vector(const char* op, const char* name, const at::Tensor& v, const at::Tensor& x) {
  if (!v.defined()) return;
  TORCH_CHECK(v.dim() == 1 && v.size(0) == x.size(2) && v.is_contiguous() && v.scalar_type() == at::kFloat &&
                  v.device() == x.device(),
              op, ": ", name, " must be fp32 [", x.size(2), "] on ", x.device(), ", got ", v.sizes(), " ",
              v.scalar_type(), " on ", v.device());
}

// Modulation vectors [B, G, C] fp32 (C contiguous) for x [B, L, C]; their group count (1 if absent).
vk::GroupVectors group_vectors(const char* op, const char* name, const at::Tensor& v, const at::Tensor& x,
                               int64_t* groups) {
  vk::GroupVectors g;
  if (!v.defined()) return g;
  TORCH_CHECK(v.dim() == 3 && v.size(0) == x.size(0) && v.size(2) == x.size(2) && v.stride(2) == 1 &&
                  v.scalar_type() == at::kFloat && v.device() == x.device(),
              op, ": ", name, " must be fp32 [B, G, C] = [", x.size(0), ", G, ", x.size(2), "] on ", x.device(),
              ", got ", v.sizes(), " ", v.scalar_type(), " on ", v.device());
  TORCH_CHECK(v.size(1) > 0 && x.size(1) % v.size(1) == 0, op, ": ", name, "'s ", v.size(1),
              " groups do not divide the ", x.size(1), " tokens");
  TORCH_CHECK(*groups == 0 || *groups == v.size(1), op, ": the modulation tensors disagree on the group count");
  *groups = v.size(1);
  g.data = v.data_ptr<float>();
  g.stride_b = v.stride(0);
  g.stride_g = v.stride(1);
  return g;
}

}  // namespace

bool GpuDitKernels::supports(c10::Device device, at::ScalarType compute_dtype) const {
  return device.is_cuda() && is_half(compute_dtype);
}

at::Tensor GpuDitKernels::layer_norm_modulate(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                              double eps, const at::Tensor& shift, const at::Tensor& scale,
                                              at::ScalarType dtype) {
  const char* op = "layer_norm_modulate";
  check_activation(op, "x", x, at::kFloat);
  check_vector(op, "weight", weight, x);
  check_vector(op, "bias", bias, x);
  TORCH_CHECK(is_half(dtype), op, ": the result must be bf16 or fp16, not ", dtype);
  TORCH_CHECK(shift.defined() == scale.defined(), op, ": give both shift and scale, or neither");
  at::Tensor out = at::empty(x.sizes(), x.options().dtype(dtype));
  vk::NormModulateParams p;
  int64_t groups = 0;
  p.shift = group_vectors(op, "shift", shift, x, &groups);
  p.scale = group_vectors(op, "scale", scale, x, &groups);
  p.batch = int(x.size(0));
  p.rows = int(x.size(1));
  p.dim = int(x.size(2));
  p.groups = int(groups > 0 ? groups : 1);
  p.x = x.data_ptr<float>();
  p.weight = weight.defined() ? weight.data_ptr<float>() : nullptr;
  p.bias = bias.defined() ? bias.data_ptr<float>() : nullptr;
  p.eps = float(eps);
  p.out_type = element_type(out);
  p.out = out.data_ptr();
  check_status(vk::norm_modulate(p, current_stream(x)), op);
  return out;
}

at::Tensor GpuDitKernels::rms_norm_rope(const at::Tensor& y, const at::Tensor& weight, double eps,
                                        const at::Tensor& cos, const at::Tensor& sin, int64_t heads) {
  const char* op = "rms_norm_rope";
  check_activation(op, "y", y, at::ScalarType::Undefined);
  TORCH_CHECK(weight.defined(), op, ": the weight is missing");
  check_vector(op, "weight", weight, y);
  const int64_t C = y.size(2);
  TORCH_CHECK(heads > 0 && C % heads == 0 && (C / heads) % 2 == 0, op, ": ", heads, " heads do not split ", C,
              " channels into even head dims");
  TORCH_CHECK(cos.defined() == sin.defined(), op, ": give both cos and sin, or neither");
  for (const at::Tensor* t : {&cos, &sin}) {
    if (!t->defined()) continue;
    TORCH_CHECK(t->dim() == 2 && t->size(0) == y.size(1) && t->size(1) == C / heads / 2 && t->is_contiguous() &&
                    t->scalar_type() == at::kFloat && t->device() == y.device(),
                op, ": the RoPE tables must be fp32 [", y.size(1), ", ", C / heads / 2, "] on ", y.device(), ", got ",
                t->sizes(), " ", t->scalar_type(), " on ", t->device());
  }
  at::Tensor out = at::empty_like(y);
  vk::RmsNormRopeParams p;
  p.batch = int(y.size(0));
  p.rows = int(y.size(1));
  p.dim = int(C);
  p.heads = int(heads);
  p.type = element_type(y);
  p.y = y.data_ptr();
  p.out = out.data_ptr();
  p.weight = weight.data_ptr<float>();
  p.eps = float(eps);
  p.cos = cos.defined() ? cos.data_ptr<float>() : nullptr;
  p.sin = sin.defined() ? sin.data_ptr<float>() : nullptr;
  check_status(vk::rms_norm_rope(p, current_stream(y)), op);
  return out;
}

at::Tensor GpuDitKernels::gate_residual(const at::Tensor& h, const at::Tensor& y, const at::Tensor& gate,
                                        const at::Tensor& out) {
  const char* op = "gate_residual";
  check_activation(op, "h", h, at::kFloat);
  check_activation(op, "y", y, at::ScalarType::Undefined);
  check_activation(op, "out", out, at::kFloat);
  TORCH_CHECK(y.sizes() == h.sizes() && out.sizes() == h.sizes() && y.device() == h.device() &&
                  out.device() == h.device(),
              op, ": h ", h.sizes(), ", y ", y.sizes(), " and out ", out.sizes(), " must match, on one device");
  vk::GateResidualParams p;
  int64_t groups = 0;
  p.gate = group_vectors(op, "gate", gate, h, &groups);
  p.batch = int(h.size(0));
  p.rows = int(h.size(1));
  p.dim = int(h.size(2));
  p.groups = int(groups > 0 ? groups : 1);
  p.h = h.data_ptr<float>();
  p.y_type = element_type(y);
  p.y = y.data_ptr();
  p.out = out.data_ptr<float>();
  check_status(vk::gate_residual(p, current_stream(h)), op);
  return out;
}

}  // namespace vidgraph::attention
