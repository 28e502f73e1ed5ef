#include "umt5_tokenizer.h"

#include <map>
#include <stdexcept>

#include <ATen/ops/tensor.h>

#include "sentencepiece_library.h"

namespace vidgraph::t5 {

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    cp = 0xFFFD;  // as Python does for invalid references
  }
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

const std::map<std::string, uint32_t>& named_entities() {
  static const std::map<std::string, uint32_t> e = {
      {"amp", '&'},      {"lt", '<'},       {"gt", '>'},       {"quot", '"'},      {"apos", '\''},    {"nbsp", 0xA0},
      {"copy", 0xA9},    {"reg", 0xAE},     {"trade", 0x2122}, {"hellip", 0x2026}, {"mdash", 0x2014}, {"ndash", 0x2013},
      {"lsquo", 0x2018}, {"rsquo", 0x2019}, {"ldquo", 0x201C}, {"rdquo", 0x201D},  {"laquo", 0xAB},   {"raquo", 0xBB},
      {"middot", 0xB7},  {"deg", 0xB0},     {"times", 0xD7},   {"divide", 0xF7},   {"euro", 0x20AC},  {"pound", 0xA3},
      {"yen", 0xA5},     {"cent", 0xA2},    {"sect", 0xA7},    {"para", 0xB6},     {"bull", 0x2022},  {"eacute", 0xE9},
      {"egrave", 0xE8},  {"agrave", 0xE0},  {"aacute", 0xE1},  {"ccedil", 0xE7},   {"ouml", 0xF6},    {"uuml", 0xFC},
      {"auml", 0xE4},    {"szlig", 0xDF},   {"ntilde", 0xF1},  {"iexcl", 0xA1},    {"iquest", 0xBF},  {"shy", 0xAD},
      {"plusmn", 0xB1},  {"micro", 0xB5},   {"frac12", 0xBD}};
  return e;
}

// Length of the UTF-8 whitespace character at s[i] (Python's str.isspace set), 0 when none.
size_t whitespace_len(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) {
    return 1;
  }
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  if (c == 0xC2 && (at(1) == 0x85 || at(1) == 0xA0)) {
    return 2;
  }
  if (c == 0xE1 && at(1) == 0x9A && at(2) == 0x80) {
    return 3;  // U+1680
  }
  if (c == 0xE2 && at(1) == 0x80 &&
      ((at(2) >= 0x80 && at(2) <= 0x8A) || at(2) == 0xA8 || at(2) == 0xA9 || at(2) == 0xAF)) {
    return 3;  // U+2000..200A, 2028, 2029, 202F
  }
  if (c == 0xE2 && at(1) == 0x81 && at(2) == 0x9F) {
    return 3;  // U+205F
  }
  if (c == 0xE3 && at(1) == 0x80 && at(2) == 0x80) {
    return 3;  // U+3000
  }
  return 0;
}

}  // namespace

std::string html_unescape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] != '&') {
      out += text[i++];
      continue;
    }
    const size_t semi = text.find(';', i + 1);
    if (semi != std::string::npos && semi - i <= 12) {
      const std::string body = text.substr(i + 1, semi - i - 1);
      if (body.size() >= 2 && body[0] == '#') {
        const bool hex = body[1] == 'x' || body[1] == 'X';
        const std::string digits = body.substr(hex ? 2 : 1);
        if (!digits.empty() &&
            digits.find_first_not_of(hex ? "0123456789abcdefABCDEF" : "0123456789") == std::string::npos) {
          append_utf8(out, uint32_t(std::min<unsigned long>(std::stoul(digits, nullptr, hex ? 16 : 10), 0x110000ul)));
          i = semi + 1;
          continue;
        }
      }
      const auto it = named_entities().find(body);
      if (it != named_entities().end()) {
        append_utf8(out, it->second);
        i = semi + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::string Umt5Tokenizer::clean(const std::string& text) {
  const std::string unescaped = html_unescape(html_unescape(text));
  std::string out;
  bool pending_space = false;
  for (size_t i = 0; i < unescaped.size();) {
    const size_t ws = whitespace_len(unescaped, i);
    if (ws > 0) {
      pending_space = !out.empty();
      i += ws;
      continue;
    }
    if (pending_space) {
      out += ' ';
      pending_space = false;
    }
    out += unescaped[i++];
  }
  return out;
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
