// Prompt encoding as the reference's `T5EncoderModel.__call__` does it: tokenize to `length` (512)
// with the mask, run the encoder on all ids, then trim each output to its real length (EOS
// included). `pad_context` zero-pads trimmed outputs back to [B, length, dim] the way `WanModel`
// does before its text embedding (zeros, no mask).
#pragma once

#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "umt5_encoder.h"
#include "umt5_tokenizer.h"

namespace vidgraph::t5 {

// One [len_i, dim] tensor per text, in the encoder's dtype and on its device.
std::vector<at::Tensor> encode_prompts(const Umt5Encoder& encoder, const Umt5Tokenizer& tokenizer,
                                       const std::vector<std::string>& texts, int64_t length = 512);

// [len_i, dim] tensors -> [B, length, dim], rows past len_i zero; longer inputs are cut.
at::Tensor pad_context(const std::vector<at::Tensor>& contexts, int64_t length = 512);

} // namespace vidgraph::t5
