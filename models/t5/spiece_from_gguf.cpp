// SentencePiece ModelProto from GGUF tokenizer metadata. See spiece_from_gguf.h.
#include "models/t5/spiece_from_gguf.h"

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace vidgraph::t5 {
namespace {

// sentencepiece_model.proto field numbers (proto2).
constexpr int kModelPieces = 1, kModelTrainerSpec = 2, kModelNormalizerSpec = 3;
constexpr int kPiecePiece = 1, kPieceScore = 2, kPieceType = 3;
constexpr int kTrainerModelType = 3, kTrainerByteFallback = 35;
constexpr int kNormalizerName = 1, kNormalizerCharsmap = 2, kNormalizerAddDummyPrefix = 3,
              kNormalizerRemoveExtraWhitespaces = 4;
constexpr int kUnigram = 1, kBytePiece = 6;

// The protobuf wire format, as much of it as a ModelProto needs.
struct ProtoWriter {
  std::string out;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      out.push_back(char(v | 0x80));
      v >>= 7;
    }
    out.push_back(char(v));
  }
  void key(int field, int wire_type) { varint(uint64_t(field) << 3 | uint64_t(wire_type)); }
  void uint_field(int field, uint64_t v) {
    key(field, 0);
    varint(v);
  }
  void bytes_field(int field, const std::string& bytes) {
    key(field, 2);
    varint(bytes.size());
    out += bytes;
  }
  void float_field(int field, float v) {
    key(field, 5);
    char b[4];
    std::memcpy(b, &v, 4);  // little-endian hosts only, as the GGUF reader
    out.append(b, 4);
  }
};

class Metadata {
 public:
  Metadata(const model_io::GgufHeader& header, const std::string& origin) : header_(header), origin_(origin) {}
  const model_io::GgufValue* find(const std::string& key) const {
    const auto& m = header_.metadata;
    const auto it = m.find("tokenizer.ggml." + key);
    return it == m.end() ? nullptr : &it->second;
  }
  const model_io::GgufValue& array(const std::string& key, size_t size) const {
    const model_io::GgufValue* v = find(key);
    if (v == nullptr || !v->is_array) fail(key, "is missing or not an array");
    if (v->size() != size) fail(key, "has " + std::to_string(v->size()) + " elements for " + std::to_string(size) + " tokens");
    return *v;
  }
  std::optional<bool> flag(const std::string& key) const {
    const model_io::GgufValue* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (v->is_array || v->type != model_io::GgufValueType::Bool) fail(key, "is not a bool");
    return v->ints.at(0) != 0;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error("GGUF '" + origin_ + "': tokenizer metadata 'tokenizer.ggml." + key + "' " + what +
                             "; set the tokenizer param to the encoder's spiece.model instead.");
  }

 private:
  const model_io::GgufHeader& header_;
  const std::string& origin_;
};

}  // namespace

std::optional<std::string> spiece_model_from_gguf(const model_io::GgufHeader& header, const std::string& origin) {
  const Metadata meta(header, origin);
  const model_io::GgufValue* tokens = meta.find("tokens");
  if (tokens == nullptr) return std::nullopt;
  const model_io::GgufValue* model = meta.find("model");
  const std::string kind = model == nullptr ? "" : model->as_string("tokenizer.ggml.model");
  if (kind != "t5") meta.fail("model", "is '" + kind + "', not 't5' (a SentencePiece unigram model)");
  if (!tokens->is_array || tokens->type != model_io::GgufValueType::String) meta.fail("tokens", "is not a string array");
  const size_t n = tokens->size();
  const model_io::GgufValue& scores = meta.array("scores", n);
  const model_io::GgufValue& types = meta.array("token_type", n);
  if (scores.floats.size() != n) meta.fail("scores", "is not a float array");
  if (types.ints.size() != n) meta.fail("token_type", "is not an integer array");

  ProtoWriter proto;
  bool byte_pieces = false;
  for (size_t i = 0; i < n; ++i) {
    const int64_t type = types.ints[i];
    if (type < 1 || type > 6) meta.fail("token_type", "gives token " + std::to_string(i) + " the type " + std::to_string(type));
    byte_pieces = byte_pieces || type == kBytePiece;
    ProtoWriter piece;
    piece.bytes_field(kPiecePiece, tokens->strings[i]);
    piece.float_field(kPieceScore, float(scores.floats[i]));
    piece.uint_field(kPieceType, uint64_t(type));
    proto.bytes_field(kModelPieces, piece.out);
  }
  ProtoWriter trainer;
  trainer.uint_field(kTrainerModelType, kUnigram);
  if (byte_pieces) trainer.uint_field(kTrainerByteFallback, 1);
  proto.bytes_field(kModelTrainerSpec, trainer.out);

  ProtoWriter normalizer;
  std::string charsmap;
  if (const model_io::GgufValue* c = meta.find("precompiled_charsmap")) {
    if (!c->is_array || c->ints.size() != c->size()) meta.fail("precompiled_charsmap", "is not an integer array");
    for (const int64_t b : c->ints) {
      if (b < -128 || b > 255) meta.fail("precompiled_charsmap", "holds " + std::to_string(b) + ", not a byte");
      charsmap.push_back(char(uint8_t(b)));
    }
  }
  // The name is informational; the charsmap is what normalises (none: text is left as it is).
  normalizer.bytes_field(kNormalizerName, charsmap.empty() ? "identity" : "nmt_nfkc");
  if (!charsmap.empty()) normalizer.bytes_field(kNormalizerCharsmap, charsmap);
  if (const auto v = meta.flag("add_space_prefix")) normalizer.uint_field(kNormalizerAddDummyPrefix, *v);
  if (const auto v = meta.flag("remove_extra_whitespaces")) normalizer.uint_field(kNormalizerRemoveExtraWhitespaces, *v);
  proto.bytes_field(kModelNormalizerSpec, normalizer.out);
  return proto.out;
}

}  // namespace vidgraph::t5
