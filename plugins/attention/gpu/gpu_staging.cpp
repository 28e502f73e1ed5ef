// GPU staging around the block-sparse kernels: tiling, tile means, gated untiling, SLA* linear
// branch. See gpu_staging.h.
#include "plugins/attention/gpu/gpu_staging.h"

#include "plugins/attention/attention_methods.h"
#include "plugins/attention/gpu/gpu_util.h"

#include <ATen/TensorOperators.h>
#include <ATen/ops/addcdiv.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/csrc/autograd/custom_function.h>

namespace vidgraph::attention::gpu {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One gather_rows pass between token order x [B, S, H, D] (to_tiled) and tiled order [B, H, Sp, D]:
// out row i = x row index[i] (-1: zero). Output contiguous: [B, H, rows_out, D] or [B, rows_out, H, D].
at::Tensor gather_between(const at::Tensor& x, const at::Tensor& index, int64_t rows_out, bool to_tiled) {
  TORCH_CHECK(x.dim() == 4 && is_kernel_dtype(x.scalar_type()), "attention GPU path: row gather of ", x.sizes(), " ",
              x.scalar_type(), " (needs a 4-D bf16/fp16/fp32 tensor)");
  const c10::DeviceGuard device(x.device());  // launch and allocate on x's GPU
  const at::Tensor in = rows_ready_or_copy(x);
  const int64_t b = in.size(0), h = to_tiled ? in.size(2) : in.size(1), d = in.size(3);
  const at::Tensor out =
      to_tiled ? at::empty({b, h, rows_out, d}, in.options()) : at::empty({b, rows_out, h, d}, in.options());
  const vk::TensorView vin = to_tiled ? rows_view(in, 1, 2) : rows_view(in, 2, 1);
  const vk::TensorView vout = to_tiled ? rows_view(out, 2, 1) : rows_view(out, 1, 2);
  check_status(vk::gather_rows(element_type(in), int(b), int(rows_out), int(h), int(d), vin, vout,
                               index.data_ptr<int32_t>(), current_stream(in)),
               to_tiled ? "tiling gather" : "untiling gather");
  return out;
}

// Tiling (to_tiled) or untiling as an autograd Function: the gradient of one is the other.
class GatherFunction : public torch::autograd::Function<GatherFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const TileLayout* layout, bool to_tiled) {
    ctx->saved_data["to_tiled"] = to_tiled;
    ctx->saved_data["back_index"] = to_tiled ? layout->scatter_i32 : layout->gather_i32;
    ctx->saved_data["back_rows"] = to_tiled ? layout->tokens : layout->padded_len;
    return {gather_between(x, to_tiled ? layout->gather_i32 : layout->scatter_i32,
                           to_tiled ? layout->padded_len : layout->tokens, to_tiled)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const bool to_tiled = ctx->saved_data["to_tiled"].toBool();
    return {gather_between(grads[0], ctx->saved_data["back_index"].toTensor(), ctx->saved_data["back_rows"].toInt(),
                           !to_tiled),
            at::Tensor(), at::Tensor()};
  }
};

// Tiling with the per-tile means formed in the same pass; the gradient of both in one pass back to
// token order (no full-size mean gradient, no sum of two tiled gradients).
class TileWithMeanFunction : public torch::autograd::Function<TileWithMeanFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x_in, const TileLayout* layout) {
    TORCH_CHECK(x_in.dim() == 4 && is_kernel_dtype(x_in.scalar_type()) && layout->tile_volume == 64,
                "attention GPU path: tiling with means of ", x_in.sizes(), " ", x_in.scalar_type(),
                " (needs a 4-D bf16/fp16/fp32 tensor and 64-slot tiles)");
    const c10::DeviceGuard device(x_in.device());
    const at::Tensor x = rows_ready_or_copy(x_in);
    const int64_t b = x.size(0), h = x.size(2), d = x.size(3), n = layout->num_tiles;
    const at::Tensor tiled = at::empty({b, h, n * 64, d}, x.options());
    const at::Tensor mean = at::empty({b, n, h, d}, x.options().dtype(at::kFloat));  // viewed as [B, H, N, D]
    check_status(vk::tile_with_mean(element_type(x), int(b), int(n), int(h), int(d), rows_view(x, 1, 2),
                                    rows_view(tiled, 2, 1), layout->gather_i32.data_ptr<int32_t>(),
                                    layout->tile_sizes_i32.data_ptr<int32_t>(), mean.data_ptr<float>(),
                                    current_stream(x)),
                 "tiling with means");
    ctx->set_materialize_grads(false);  // an unused output's gradient stays undefined: no zeros to add
    ctx->saved_data["slot"] = layout->scatter_i32;
    ctx->saved_data["tile_sizes"] = layout->tile_sizes_i32;
    ctx->saved_data["tokens"] = layout->tokens;
    ctx->saved_data["tiled_shape"] = tiled.sizes().vec();
    ctx->saved_data["dtype"] = static_cast<int64_t>(x.scalar_type());
    return {tiled, mean};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor& any = grads[0].defined() ? grads[0] : grads[1];
    const c10::DeviceGuard device(any.device());
    const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    const at::Tensor d_mean = grads[1].defined() ? grads[1].to(at::kFloat).contiguous() : at::Tensor();
    const std::vector<int64_t> shape = ctx->saved_data["tiled_shape"].toIntVector();  // [B, H, Sp, D]
    // Only the means used: the tiled gradient is zero.
    const at::Tensor d_tiled = grads[0].defined() ? rows_ready_or_copy(grads[0].to(dtype))
                                                  : at::zeros(shape, any.options().dtype(dtype));
    const int64_t b = shape[0], h = shape[1], n = shape[2] / 64, d = shape[3];
    const int64_t tokens = ctx->saved_data["tokens"].toInt();
    const at::Tensor dx = at::empty({b, tokens, h, d}, d_tiled.options());
    check_status(vk::tile_with_mean_backward(element_type(dx), int(b), int(tokens), int(n), int(h), int(d),
                                             rows_view(d_tiled, 2, 1),
                                             d_mean.defined() ? d_mean.data_ptr<float>() : nullptr,
                                             ctx->saved_data["slot"].toTensor().data_ptr<int32_t>(),
                                             ctx->saved_data["tile_sizes"].toTensor().data_ptr<int32_t>(),
                                             rows_view(dx, 1, 2), current_stream(dx)),
                 "tiling with means backward");
    return {dx, at::Tensor()};
  }
};

// The gated untile, fine + gate * coarse[tile] back in token order, as one kernel each way.
class UntileGatedFunction : public torch::autograd::Function<UntileGatedFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, const at::Tensor& fine_in, const at::Tensor& coarse_in,
                               const at::Tensor& gate_in, const TileLayout* layout) {
    const c10::DeviceGuard device(fine_in.device());
    const at::Tensor fine = rows_ready_or_copy(fine_in), coarse = rows_ready_or_copy(coarse_in);
    const int64_t b = fine.size(0), h = fine.size(1), d = fine.size(3), dg = gate_in.size(3);
    TORCH_CHECK(layout->tile_volume == 64 && fine.size(2) == layout->padded_len && (dg == 1 || dg == d),
                "attention GPU path: gated untile of ", fine.sizes(), " with a gate of ", gate_in.sizes());
    const at::Tensor gate = dg == 1 ? gate_in.contiguous() : rows_ready_or_copy(gate_in);
    const at::Tensor out = at::empty({b, layout->tokens, h, d}, fine.options());
    check_status(vk::untile_gated(element_type(fine), int(b), int(layout->tokens), int(h), int(d), int(dg),
                                  rows_view(fine, 2, 1), rows_view(gate, 1, 2), rows_view(coarse, 2, 1),
                                  rows_view(out, 1, 2), layout->scatter_i32.data_ptr<int32_t>(), current_stream(fine)),
                 "gated untile");
    ctx->save_for_backward({coarse, gate});
    ctx->saved_data["token"] = layout->gather_i32;
    return {out};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor &coarse = saved[0], &gate = saved[1];
    const c10::DeviceGuard device(coarse.device());
    const at::Tensor grad = rows_ready_or_copy(grads[0].to(coarse.scalar_type()));
    const int64_t b = coarse.size(0), h = coarse.size(1), n = coarse.size(2), d = coarse.size(3), dg = gate.size(3);
    const at::Tensor d_fine = at::empty({b, h, n * 64, d}, coarse.options());
    const at::Tensor d_coarse = at::empty_like(coarse, at::MemoryFormat::Contiguous);
    const at::Tensor d_gate = at::empty(gate.sizes(), gate.options());
    check_status(vk::untile_gated_backward(element_type(coarse), int(b), int(n), int(h), int(d), int(dg),
                                           rows_view(grad, 1, 2), rows_view(gate, 1, 2), rows_view(coarse, 2, 1),
                                           ctx->saved_data["token"].toTensor().data_ptr<int32_t>(),
                                           rows_view(d_fine, 2, 1), rows_view(d_gate, 1, 2),
                                           rows_view(d_coarse, 2, 1), current_stream(grad)),
                 "gated untile backward");
    return {d_fine, d_coarse, d_gate, at::Tensor()};
  }
};

// phi in x's dtype. elu + 1 is formed as exp(min(x, 0)) for x <= 0, x + 1 above: elu(x) + 1 in bf16
// would cancel catastrophically for negative x (elu(x) near -1).
at::Tensor feature_in_dtype(const at::Tensor& x, const std::string& map) {
  if (map == "elu") return at::where(x > 0, x + 1.0, at::exp(at::clamp_max(x, 0.0)));
  return feature_map(x, map);
}

}  // namespace

TiledTokens tile_with_mean(const at::Tensor& x, const TileLayout& layout, bool with_mean) {
  if (!with_mean) return {GatherFunction::apply(x, &layout, true)[0], {}};
  const variable_list out = TileWithMeanFunction::apply(x, &layout);
  // [B, N, H, D] -> [B, H, N, D] (a view outside the Function: its output stays a plain tensor)
  return {out[0], out[1].permute({0, 2, 1, 3})};
}

at::Tensor untile_gather(const at::Tensor& tiled, const TileLayout& layout) {
  return GatherFunction::apply(tiled, &layout, false)[0];
}

at::Tensor untile_gated(const at::Tensor& fine, const TileLayout& layout, const at::Tensor& coarse,
                        const at::Tensor& gate) {
  if (!gate.defined()) return untile_gather(fine, layout);
  const at::ScalarType dt = fine.scalar_type();
  // coarse [B, H, N, D] and the gate [B, S, H, Dg] in fine's dtype: their conversions' gradients
  // stay with autograd, outside the Function.
  return UntileGatedFunction::apply(fine, coarse.to(dt), gate.to(dt), &layout)[0];
}

at::Tensor add_linear_branch(const at::Tensor& out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             const std::string& feature_map_name, const at::Tensor& weight, const at::Tensor& bias) {
  const at::ScalarType dt = q.scalar_type();
  // [B, S, H, D] -> [B, H, S, D] views; feature maps in the input dtype (softmax computes in fp32)
  const auto bhsd = [](const at::Tensor& x) { return x.permute({0, 2, 1, 3}); };
  const at::Tensor fq = bhsd(feature_in_dtype(q, feature_map_name));
  const at::Tensor fk = bhsd(feature_in_dtype(k, feature_map_name));
  const at::Tensor kv = at::matmul(fk.transpose(-1, -2), bhsd(v));                // [B, H, D, D]
  const at::Tensor kv_w = at::matmul(kv, weight.to(dt).t());                      // [B, H, D, D]: proj_l folded
  const at::Tensor ksum = at::sum(fk, {2}, /*keepdim=*/true, at::kFloat).to(dt);  // [B, H, 1, D]
  const at::Tensor num = at::matmul(fq, kv_w);                                    // [B, H, S, D]
  const at::Tensor den = at::matmul(fq, ksum.transpose(-1, -2)) + 1e-5;           // [B, H, S, 1]
  // out + num / den as [B, S, H, D] (one pass), then the bias
  const at::Tensor sum = at::addcdiv(out, bhsd(num), bhsd(den));
  return bias.defined() ? sum + bias.to(sum.scalar_type()) : sum;
}

}  // namespace vidgraph::attention::gpu
