// Prompt encoding as the reference's `T5EncoderModel.__call__` does it: tokenize to `length` (512)
// with the mask, run the encoder on all ids, then trim each output to its real length (EOS
// included). `pad_context` zero-pads trimmed outputs back to [B, length, dim] the way `WanModel`
// does before its text embedding (zeros, no mask).
// Limits: the token limit is the reference's: texts are cut to `length` tokens (511 + EOS), so
// normal long prompts behave as in Wan2.2. Texts of more than kMaxPromptChars characters are
// refused before tokenizing (a pasted file, not a prompt: tokenizing megabytes takes seconds and
// memory for tokens that are cut anyway).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "umt5_encoder.h"
#include "umt5_tokenizer.h"

namespace vidgraph::t5 {

// 100,000 characters: ~50 times what 512 umT5 tokens hold in English (~2,000 characters).
constexpr int64_t kMaxPromptChars = 100000;

// Characters (Unicode code points) of UTF-8 text; a byte that starts no character counts as one.
int64_t utf8_char_count(const std::string& text);

// "" when `text` has at most kMaxPromptChars characters, else a sentence that names `what` (e.g.
// "The positive param"), the size and the limit.
std::string check_prompt_size(const std::string& text, const std::string& what);

// One [len_i, dim] tensor per text, in the encoder's dtype and on its device. Throws
// std::invalid_argument (check_prompt_size's sentence) for a text over kMaxPromptChars.
std::vector<at::Tensor> encode_prompts(const Umt5Encoder& encoder, const Umt5Tokenizer& tokenizer,
                                       const std::vector<std::string>& texts, int64_t length = 512);

// [len_i, dim] tensors -> [B, length, dim], rows past len_i zero; longer inputs are cut.
at::Tensor pad_context(const std::vector<at::Tensor>& contexts, int64_t length = 512);

} // namespace vidgraph::t5
