#include "umt5_prompt.h"

#include <algorithm>
#include <stdexcept>

#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>

namespace vidgraph::t5 {

int64_t utf8_char_count(const std::string& text) {
  int64_t n = 0;
  for (const char c : text) {
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // continuation bytes start no character
  }
  return n;
}

std::string check_prompt_size(const std::string& text, const std::string& what) {
  // Bytes bound characters from above: most prompts are cleared without counting.
  if (int64_t(text.size()) <= kMaxPromptChars) return {};
  const int64_t chars = utf8_char_count(text);
  if (chars <= kMaxPromptChars) return {};
  return what + " has " + std::to_string(chars) + " characters (" + std::to_string(text.size()) +
         " bytes), more than the " + std::to_string(kMaxPromptChars) + " a prompt may have; the "
         "text encoder reads only the first 512 tokens (about 2,000 characters of English), so "
         "shorten the prompt.";
}

std::vector<at::Tensor> encode_prompts(const Umt5Encoder& encoder, const Umt5Tokenizer& tokenizer,
                                       const std::vector<std::string>& texts, int64_t length) {
  if (tokenizer.vocab_size() > encoder.config().vocab) {
    throw std::invalid_argument("the tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                                " pieces but the text encoder only " + std::to_string(encoder.config().vocab) +
                                " embeddings: they do not belong together");
  }
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string bad = check_prompt_size(texts[i], "Prompt " + std::to_string(i + 1));
    if (!bad.empty()) throw std::invalid_argument(bad);
  }
  const TokenBatch batch = tokenizer.encode(texts, length);
  c10::NoGradGuard no_grad;  // results stay ordinary tensors (in-place use allowed)
  const at::Tensor hidden = encoder.forward(batch.ids, batch.mask);  // [B,length,dim]
  std::vector<at::Tensor> out;
  for (int64_t b = 0; b < hidden.size(0); ++b) {
    const int64_t real = batch.mask[b].sum().item<int64_t>();
    out.push_back(hidden[b].slice(0, 0, real).clone());
  }
  return out;
}

at::Tensor pad_context(const std::vector<at::Tensor>& contexts, int64_t length) {
  if (contexts.empty()) {
    throw std::invalid_argument("pad_context needs at least one context");
  }
  const at::Tensor& first = contexts.front();
  at::Tensor out = at::zeros({int64_t(contexts.size()), length, first.size(1)}, first.options());
  for (size_t b = 0; b < contexts.size(); ++b) {
    const int64_t n = std::min(length, contexts[b].size(0));
    out[int64_t(b)].slice(0, 0, n).copy_(contexts[b].slice(0, 0, n));
  }
  return out;
}

}  // namespace vidgraph::t5
