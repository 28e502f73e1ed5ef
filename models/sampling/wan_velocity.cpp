#include "models/sampling/wan_velocity.h"

#include <stdexcept>

#include <ATen/ops/cat.h>
#include <ATen/ops/zeros.h>

namespace vidgraph::sampling {
namespace {

// [l, D] or [1, l, D] -> [1, text_len, D], zero-padded (the model pads the same way).
at::Tensor pad_context(const at::Tensor& c, int64_t text_len, const char* what) {
  if (!c.defined()) {
    throw std::invalid_argument(std::string("The Wan velocity function needs the ") + what + " context.");
  }
  at::Tensor b = c.dim() == 2 ? c.unsqueeze(0) : c;
  if (b.dim() != 3 || b.size(0) != 1 || b.size(1) > text_len) {
    throw std::invalid_argument(std::string("The ") + what +
                                " context must be [l, D] or [1, l, D] with l <= " + std::to_string(text_len) + ".");
  }
  if (b.size(1) < text_len) {
    b = at::cat({b, at::zeros({1, text_len - b.size(1), b.size(2)}, b.options())}, 1);
  }
  return b;
}

// [C_y, F, H, W] -> [1, C_y, F, H, W] on the model's device; undefined stays undefined.
at::Tensor batch_condition(const at::Tensor& condition, const wan::WanModel& model) {
  if (!condition.defined()) return {};
  if (condition.dim() != 4) {
    throw std::invalid_argument("The conditioning tensor must be [C, F, H, W]; got " +
                                std::to_string(condition.dim()) + " dimensions.");
  }
  return condition.unsqueeze(0).to(model->device(), at::kFloat);
}

// x [1, C, F, H, W] followed by the condition along channels, which must match x's frames and size.
at::Tensor with_condition(const at::Tensor& xb, const at::Tensor& yb) {
  if (!yb.defined()) return xb;
  if (yb.sizes().slice(2) != xb.sizes().slice(2)) {
    throw std::invalid_argument("The conditioning tensor covers other frames or another size than the latent.");
  }
  return at::cat({xb, yb.to(xb.scalar_type())}, 1);
}

}  // namespace

VelocityFn make_wan_velocity(wan::WanModel model, WanVelocityOptions options) {
  const int64_t text_len = model->config().text_len;
  at::Tensor cond = pad_context(options.context, text_len, "prompt").to(model->device());
  at::Tensor uncond = options.context_null.defined()
                          ? pad_context(options.context_null, text_len, "negative prompt").to(model->device())
                          : at::Tensor();
  const at::Tensor condition = batch_condition(options.condition, model);
  options.condition = at::Tensor();  // the lambda keeps the batched copy only
  int calls = 0;
  return [model, options, cond, uncond, condition, calls](const at::Tensor& x, const at::Tensor& t,
                                               bool need_uncond) mutable -> std::vector<at::Tensor> {
    if (need_uncond && !uncond.defined()) {
      throw std::invalid_argument("Guidance is on but no negative-prompt context was given.");
    }
    const wan::AttentionRun& attention = calls++ < options.dense_steps ? options.dense_attention : options.attention;
    // The sampler's device may differ from the model's: run on the model's, answer on x's.
    const c10::Device out_device = x.device();
    at::Tensor xb = with_condition(x.unsqueeze(0).to(model->device()), condition);  // [1, C (+ C_y), F, H, W]
    at::Tensor tb = t.unsqueeze(0).to(model->device());  // [1, F]
    if (!need_uncond) {
      return {model->forward(xb, tb, cond, attention).squeeze(0).to(out_device)};
    }
    if (options.batch_cfg) {
      at::Tensor out =
          model
              ->forward(at::cat({xb, xb}, 0), at::cat({tb, tb}, 0), at::cat({cond, uncond.to(cond.scalar_type())}, 0),
                        attention)
              .to(out_device);  // [2, C, F, H, W]
      return {out.select(0, 0), out.select(0, 1)};
    }
    return {model->forward(xb, tb, cond, attention).squeeze(0).to(out_device),
            model->forward(xb, tb, uncond, attention).squeeze(0).to(out_device)};
  };
}

}  // namespace vidgraph::sampling
