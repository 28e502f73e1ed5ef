#include "models/sampling/i2v_condition.h"

#include <stdexcept>
#include <string>

#include <ATen/ops/cat.h>
#include <ATen/ops/ones.h>

namespace vidgraph::sampling {

at::Tensor i2v_mask(int64_t frames, int64_t h, int64_t w, bool last_given) {
  if (frames < (last_given ? 5 : 1) || (frames - 1) % kI2vMaskChannels != 0 || h < 1 || w < 1) {
    throw std::invalid_argument("The image-to-video mask needs 4k + 1 frames (at least 5 with a last frame) and a "
                                "positive latent size; got " + std::to_string(frames) + " frames on " +
                                std::to_string(h) + "x" + std::to_string(w) + ".");
  }
  // Official layout (wan/image2video.py): a per-frame mask [F, h, w] (1 = given: the first frame),
  // the first entry repeated 4 times so that F + 3 entries fold into T groups of 4 consecutive
  // frames, viewed [T, 4, h, w] and transposed to [4, T, h, w]: channel c of latent frame t is
  // frame 4t + c - 3's mask (frame 0 for the first group).
  at::Tensor per_frame = at::ones({frames, h, w}, at::TensorOptions().dtype(at::kFloat));
  per_frame.narrow(0, 1, frames - 1).zero_();
  if (last_given) per_frame[frames - 1].fill_(1.0);
  const at::Tensor first = per_frame.narrow(0, 0, 1).expand({kI2vMaskChannels, h, w});
  const at::Tensor folded = at::cat({first, per_frame.narrow(0, 1, frames - 1)}, 0);  // [F + 3, h, w]
  const int64_t latent_frames = (frames - 1) / kI2vMaskChannels + 1;
  return folded.view({latent_frames, kI2vMaskChannels, h, w}).transpose(0, 1).contiguous();
}

at::Tensor i2v_condition(const at::Tensor& image_latent, bool last_given) {
  if (image_latent.dim() != 4) {
    throw std::invalid_argument("The image latent must be [z, T, h, w]; got " + std::to_string(image_latent.dim()) +
                                " dimensions.");
  }
  const int64_t frames = (image_latent.size(1) - 1) * kI2vMaskChannels + 1;
  const at::Tensor mask = i2v_mask(frames, image_latent.size(2), image_latent.size(3), last_given);
  return at::cat({mask.to(image_latent.device()), image_latent.to(at::kFloat)}, 0);
}

}  // namespace vidgraph::sampling
