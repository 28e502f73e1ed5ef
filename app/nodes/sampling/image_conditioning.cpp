// Implements image_conditioning.h.
#include "nodes/sampling/image_conditioning.h"

#include <vector>

#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/zeros.h>

#include "models/sampling/i2v_condition.h"

namespace vidgraph::nodes {

at::Tensor image_video(const VaeHandle& vae, const Image& image) {
  const at::Tensor pixels =
      at::from_blob(const_cast<std::uint8_t*>(image.rgb.data()), {image.height, image.width, 3},
                    at::TensorOptions().dtype(at::kByte));
  return (pixels.to(at::kFloat) / 127.5 - 1.0)
      .permute({2, 0, 1})
      .unsqueeze(0)
      .unsqueeze(2)
      .to(vae.device, vae.dtype);
}

at::Tensor encode_i2v_condition(const VaeHandle& vae, const at::Tensor& first, int64_t frames,
                                const vae::VaeCallbacks& callbacks, const at::Tensor& last) {
  const bool last_given = last.defined();
  const at::Tensor head = first.to(vae.device, vae.dtype);
  std::vector<at::Tensor> video{head, at::zeros({1, 3, frames - 1 - int64_t(last_given), head.size(3), head.size(4)},
                                                head.options())};
  if (last_given) video.push_back(last.to(vae.device, vae.dtype));
  const at::Tensor latent = vae.vae->encode(at::cat(video, 2), callbacks)[0].to(at::kFloat);  // [z, T, h, w]
  return sampling::i2v_condition(latent, last_given);
}

}  // namespace vidgraph::nodes
