// Access to Debian's libsentencepiece without linking it.
// Why: libsentencepiece.so.0 (0.1.97) carries its own protobuf 3.14 and exports those symbols;
// Debian's LibTorch links the system libprotobuf 3.21. Linked into one process, each library's
// protobuf calls bind to the other's copy and the program crashes while loading (protobuf's
// static initialisers) or aborts on the version check. So the library is opened at run time with
// RTLD_LOCAL | RTLD_DEEPBIND (its own protobuf stays private to it) and the few entry points we use
// are looked up by name: constructor, destructor, Load(string_view), LoadFromSerializedProto(
// string_view), Encode(string_view, vector<int>*), pad_id, eos_id, unk_id, PieceToId, GetPieceSize,
// and util::Status's destructor and ToString.
// Contract: load() throws std::runtime_error naming the model file (or saying that the library
// is missing); a SentencePiece is immutable after load and safe to use from several threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace vidgraph::t5 {

class SentencePiece {
 public:
  static std::unique_ptr<SentencePiece> load(const std::string& model_path);
  // From the model file's bytes (ComfyUI's `spiece_model` tensor); `origin` names them in errors.
  static std::unique_ptr<SentencePiece> load_from_bytes(const std::string& bytes, const std::string& origin);
  ~SentencePiece();
  SentencePiece(const SentencePiece&) = delete;
  SentencePiece& operator=(const SentencePiece&) = delete;

  // Piece ids of `text` (no special tokens added).
  std::vector<int> encode(const std::string& text) const;
  int pad_id() const;
  int eos_id() const;
  int unk_id() const;
  // The id of `piece`, or unk_id() when the vocabulary has no such piece.
  int piece_to_id(const std::string& piece) const;
  int piece_size() const;

 private:
  SentencePiece() = default;
  static std::unique_ptr<SentencePiece> create(const std::string& origin);
  void* processor_ = nullptr;  // a sentencepiece::SentencePieceProcessor built in our memory
};

// Trains a SentencePiece model with libsentencepiece_train.so.0 (opened the same way), given the
// flags of `spm_train` ("--input=corpus.txt --model_prefix=out --vocab_size=200 ..."). Throws
// std::runtime_error with the trainer's message. For tests and the tiny demo model.
void train_sentencepiece(const std::string& flags);

}  // namespace vidgraph::t5
