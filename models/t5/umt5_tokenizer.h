// The umT5 tokenizer of Wan2.2 (`wan/modules/tokenizers.py` HuggingfaceTokenizer over
// `google/umt5-xxl`, clean='whitespace'), through Debian's libsentencepiece (sentencepiece_library.h)
// and the unigram `spiece.model`.
// Contract of encode(): each text is cleaned as the reference cleans it (prompt_clean.h: ftfy's
// fixes but its mojibake repair, HTML unescaped twice, whitespace collapsed), tokenized,
// cut to `length - 1` pieces, given the EOS id (`</s>` = 1), then padded with the pad id (0) to
// `length` (512 in Wan). mask is 1 on real tokens (EOS included) and 0 on padding.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vidgraph::t5 {

class SentencePiece;

struct TokenBatch {
  at::Tensor ids;   // [B, length] int64
  at::Tensor mask;  // [B, length] int64, 1 = real token
};

class Umt5Tokenizer {
 public:
  // Loads a SentencePiece model file (`spiece.model`); throws std::runtime_error naming the file.
  static Umt5Tokenizer load(const std::string& path);
  // From the bytes of a SentencePiece model (ComfyUI's `spiece_model` tensor); `origin` names them.
  static Umt5Tokenizer load_from_bytes(const std::string& bytes, const std::string& origin);

  TokenBatch encode(const std::vector<std::string>& texts, int64_t length = 512) const;
  // Token ids of one cleaned text, EOS appended, neither cut nor padded.
  std::vector<int64_t> ids(const std::string& text) const;
  int64_t vocab_size() const;
  int64_t pad_id() const { return pad_id_; }
  int64_t eos_id() const { return eos_id_; }
  int64_t unk_id() const;
  // The id of a piece ("</s>", "<pad>", ...), or unk_id() when the vocabulary lacks it.
  int64_t piece_id(const std::string& piece) const;

  // The reference's text cleaning (clean_prompt, prompt_clean.h).
  static std::string clean(const std::string& text);

 private:
  static Umt5Tokenizer from(std::shared_ptr<const SentencePiece> processor);
  std::shared_ptr<const SentencePiece> processor_;
  int64_t pad_id_ = 0;
  int64_t eos_id_ = 1;
};

}  // namespace vidgraph::t5
