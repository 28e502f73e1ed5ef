#include "umt5_tokenizer.h"

#include <stdexcept>

#include <ATen/ops/tensor.h>

#include "prompt_clean.h"
#include "sentencepiece_library.h"

namespace vidgraph::t5 {

std::string Umt5Tokenizer::clean(const std::string& text) {
  return clean_prompt(text);
}

Umt5Tokenizer Umt5Tokenizer::from(std::shared_ptr<const SentencePiece> processor) {
  Umt5Tokenizer tok;
  tok.processor_ = std::move(processor);
  tok.pad_id_ = tok.processor_->pad_id() >= 0 ? tok.processor_->pad_id() : 0;
  tok.eos_id_ = tok.processor_->eos_id() >= 0 ? tok.processor_->eos_id() : 1;
  return tok;
}

Umt5Tokenizer Umt5Tokenizer::load(const std::string& path) {
  return from(SentencePiece::load(path));
}

Umt5Tokenizer Umt5Tokenizer::load_from_bytes(const std::string& bytes, const std::string& origin) {
  return from(SentencePiece::load_from_bytes(bytes, origin));
}

int64_t Umt5Tokenizer::unk_id() const {
  return processor_->unk_id();
}

int64_t Umt5Tokenizer::piece_id(const std::string& piece) const {
  return processor_->piece_to_id(piece);
}

int64_t Umt5Tokenizer::vocab_size() const {
  return processor_->piece_size();
}

std::vector<int64_t> Umt5Tokenizer::ids(const std::string& text) const {
  const std::vector<int> pieces = processor_->encode(clean(text));
  std::vector<int64_t> out(pieces.begin(), pieces.end());
  out.push_back(eos_id_);
  return out;
}

TokenBatch Umt5Tokenizer::encode(const std::vector<std::string>& texts, int64_t length) const {
  if (length < 1) {
    throw std::invalid_argument("the token length must be at least 1");
  }
  std::vector<int64_t> ids_flat(size_t(int64_t(texts.size()) * length), pad_id_);
  std::vector<int64_t> mask_flat(ids_flat.size(), 0);
  for (size_t b = 0; b < texts.size(); ++b) {
    std::vector<int64_t> t = ids(texts[b]);
    if (int64_t(t.size()) > length) {
      t.resize(size_t(length));
      t.back() = eos_id_;  // truncation keeps the special token, as HF does
    }
    for (size_t i = 0; i < t.size(); ++i) {
      ids_flat[b * size_t(length) + i] = t[i];
      mask_flat[b * size_t(length) + i] = 1;
    }
  }
  const auto opts = at::TensorOptions().dtype(at::kLong);
  const int64_t batch = int64_t(texts.size());
  return {at::tensor(ids_flat, opts).view({batch, length}), at::tensor(mask_flat, opts).view({batch, length})};
}

}  // namespace vidgraph::t5
