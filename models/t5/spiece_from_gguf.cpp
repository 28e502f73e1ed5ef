// SentencePiece ModelProto from GGUF tokenizer metadata. See spiece_from_gguf.h.
#include "models/t5/spiece_from_gguf.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "models/t5/charsmap_check.h"

namespace vidgraph::t5 {
namespace {

// sentencepiece_model.proto field numbers (proto2).
constexpr int kModelPieces = 1, kModelTrainerSpec = 2, kModelNormalizerSpec = 3;
constexpr int kPiecePiece = 1, kPieceScore = 2, kPieceType = 3;
constexpr int kTrainerModelType = 3, kTrainerByteFallback = 35;
constexpr int kNormalizerName = 1, kNormalizerCharsmap = 2, kNormalizerAddDummyPrefix = 3,
              kNormalizerRemoveExtraWhitespaces = 4;
constexpr int kUnigram = 1;
// SentencePiece piece types (sentencepiece_model.proto).
constexpr int64_t kNormal = 1, kUnknown = 2, kUserDefined = 4, kUnused = 5, kBytePiece = 6;
// PrefixMatcher::PrefixMatch (normalizer.cc) keeps the user-defined pieces that start one place of
// a text in an array of 64 and reads past it when more do.
constexpr size_t kMaxNestedUserPieces = 64;

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
    return v->int_at(0) != 0;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw std::runtime_error("GGUF '" + origin_ + "': tokenizer metadata 'tokenizer.ggml." + key + "' " + what +
                             "; set the tokenizer param to the encoder's spiece.model instead.");
  }

 private:
  const model_io::GgufHeader& header_;
  const std::string& origin_;
};

// A token as messages quote it: at most 40 bytes.
std::string shown(std::string_view piece) {
  return "'" + std::string(piece.substr(0, 40)) + (piece.size() > 40 ? "...'" : "'");
}

// libsentencepiece's piece names for bytes (ByteToPiece: "<0x%02X>").
bool is_byte_name(const std::string& piece) {
  char expected[8];
  unsigned byte = 0;
  if (piece.size() != 6 || std::sscanf(piece.c_str(), "<0x%2X>", &byte) != 1) return false;
  std::snprintf(expected, sizeof expected, "<0x%02X>", byte);
  return piece == expected;
}

// Each token on its own: libsentencepiece refuses an empty one with a generic status, and builds its
// tries from C strings, so a NUL cuts a piece short (and two pieces may then collide in the trie
// builder). A NaN or infinite score makes the comparisons of its Viterbi search meaningless.
void check_token(const Metadata& meta, size_t i, const std::string& piece, double score, int64_t type) {
  const std::string token = "token " + std::to_string(i);
  if (type < kNormal || type > kBytePiece) {
    meta.fail("token_type", "gives " + token + " the type " + std::to_string(type));
  }
  if (piece.empty()) meta.fail("tokens", "says " + token + " is empty");
  if (piece.find('\0') != std::string::npos) meta.fail("tokens", "says " + token + " holds a NUL byte");
  if (!std::isfinite(float(score))) {
    meta.fail("scores", "gives " + token + " the score " + std::to_string(score) + ", not a finite number");
  }
  if (type == kBytePiece && !is_byte_name(piece)) {
    meta.fail("token_type", "makes " + token + " a byte token, but it is named " + shown(piece) + ", not <0xXX>");
  }
}

// ModelInterface::InitializePieces: one unknown piece, no piece twice among the pieces that encode
// text nor among the reserved ones, all 256 byte pieces or none, and something to encode text with.
void check_vocabulary(const Metadata& meta, const std::vector<std::string>& pieces, const std::vector<int64_t>& types) {
  std::vector<size_t> unknown;
  size_t bytes = 0, encoding = 0;
  std::unordered_map<std::string_view, size_t> seen[2];  // [0] pieces that encode text, [1] reserved
  for (size_t i = 0; i < pieces.size(); ++i) {
    const bool encodes = types[i] == kNormal || types[i] == kUserDefined || types[i] == kUnused;
    const auto [it, fresh] = seen[encodes ? 0 : 1].emplace(pieces[i], i);
    if (!fresh) {
      meta.fail("tokens", "has the token " + shown(pieces[i]) + " twice (tokens " + std::to_string(it->second) +
                              " and " + std::to_string(i) + ")");
    }
    if (types[i] == kUnknown) unknown.push_back(i);
    bytes += types[i] == kBytePiece ? 1 : 0;
    encoding += encodes ? 1 : 0;
  }
  if (unknown.empty()) meta.fail("token_type", "marks no token unknown; SentencePiece needs exactly one");
  if (unknown.size() > 1) {
    meta.fail("token_type", "marks " + std::to_string(unknown.size()) + " tokens unknown (" +
                                std::to_string(unknown[0]) + " and " + std::to_string(unknown[1]) +
                                "); SentencePiece needs exactly one");
  }
  if (bytes != 0 && bytes != 256) {
    meta.fail("token_type",
              "marks " + std::to_string(bytes) + " byte tokens; SentencePiece's byte fallback needs all 256");
  }
  if (encoding == 0) meta.fail("token_type", "has no normal, user-defined or unused token to encode text with");
}

// The longest run of user-defined pieces each a prefix of the next: in sorted order a piece's
// prefixes come before it, so a stack of the run so far finds it in one pass.
void check_user_pieces(const Metadata& meta, const std::vector<std::string>& pieces,
                       const std::vector<int64_t>& types) {
  std::vector<std::string_view> user;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (types[i] == kUserDefined) user.push_back(pieces[i]);
  }
  std::sort(user.begin(), user.end());
  std::vector<std::string_view> run;
  for (const std::string_view piece : user) {
    while (!run.empty() && piece.substr(0, run.back().size()) != run.back()) run.pop_back();
    run.push_back(piece);
    if (run.size() > kMaxNestedUserPieces) {
      meta.fail("tokens", "has " + std::to_string(run.size()) + " user-defined tokens each a prefix of the next (" +
                              shown(run.front()) + " to " + shown(piece) + "); SentencePiece has room for " +
                              std::to_string(kMaxNestedUserPieces));
    }
  }
}

// The normaliser's table, as bytes, checked (charsmap_check.h); empty when the metadata has none.
std::string read_charsmap(const Metadata& meta) {
  std::string charsmap;
  const model_io::GgufValue* c = meta.find("precompiled_charsmap");
  if (c == nullptr) return charsmap;
  if (!c->is_array || !c->is_int()) meta.fail("precompiled_charsmap", "is not an integer array");
  charsmap.reserve(c->size());
  for (size_t i = 0; i < c->size(); ++i) {
    const int64_t b = c->int_at(i);
    if (b < -128 || b > 255) meta.fail("precompiled_charsmap", "holds " + std::to_string(b) + ", not a byte");
    charsmap.push_back(char(uint8_t(b)));
  }
  if (charsmap.empty()) return charsmap;
  if (const std::string problem = charsmap_problem(charsmap); !problem.empty()) {
    meta.fail("precompiled_charsmap", problem + ": not a SentencePiece normaliser table");
  }
  return charsmap;
}

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
  if (n == 0) meta.fail("tokens", "is empty");
  const model_io::GgufValue& scores = meta.array("scores", n);
  const model_io::GgufValue& types = meta.array("token_type", n);
  if (!scores.is_float()) meta.fail("scores", "is not a float array");
  if (!types.is_int()) meta.fail("token_type", "is not an integer array");
  // Materialised here, where the tokenizer is built from them (never when a file is only listed).
  const std::vector<std::string> pieces = tokens->string_list();
  const std::vector<double> piece_scores = scores.float_list();
  const std::vector<int64_t> piece_types = types.int_list();

  for (size_t i = 0; i < n; ++i) check_token(meta, i, pieces[i], piece_scores[i], piece_types[i]);
  check_vocabulary(meta, pieces, piece_types);
  check_user_pieces(meta, pieces, piece_types);
  const std::string charsmap = read_charsmap(meta);

  ProtoWriter proto;
  bool byte_pieces = false;
  for (size_t i = 0; i < n; ++i) {
    byte_pieces = byte_pieces || piece_types[i] == kBytePiece;
    ProtoWriter piece;
    piece.bytes_field(kPiecePiece, pieces[i]);
    piece.float_field(kPieceScore, float(piece_scores[i]));
    piece.uint_field(kPieceType, uint64_t(piece_types[i]));
    proto.bytes_field(kModelPieces, piece.out);
  }
  ProtoWriter trainer;
  trainer.uint_field(kTrainerModelType, kUnigram);
  if (byte_pieces) trainer.uint_field(kTrainerByteFallback, 1);
  proto.bytes_field(kModelTrainerSpec, trainer.out);

  ProtoWriter normalizer;
  // The name is informational; the charsmap is what normalises (none: text is left as it is).
  normalizer.bytes_field(kNormalizerName, charsmap.empty() ? "identity" : "nmt_nfkc");
  if (!charsmap.empty()) normalizer.bytes_field(kNormalizerCharsmap, charsmap);
  if (const auto v = meta.flag("add_space_prefix")) normalizer.uint_field(kNormalizerAddDummyPrefix, *v);
  if (const auto v = meta.flag("remove_extra_whitespaces")) normalizer.uint_field(kNormalizerRemoveExtraWhitespaces, *v);
  proto.bytes_field(kModelNormalizerSpec, normalizer.out);
  return proto.out;
}

}  // namespace vidgraph::t5
