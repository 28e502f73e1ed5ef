// The tokenizer a GGUF text encoder carries: llama.cpp's converter (which made city96's umT5 GGUFs)
// stores the SentencePiece model as metadata, not as the model file: `tokenizer.ggml.model` = "t5"
// (a unigram model), `.tokens` (strings), `.scores` (f32), `.token_type` (SentencePiece piece types:
// 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte), `.add_space_prefix`,
// `.remove_extra_whitespaces` and `.precompiled_charsmap` (the normaliser's NFKC tables, u8 array).
// This rebuilds the bytes of a SentencePiece ModelProto from them (the protobuf wire format, written
// here), which libsentencepiece loads as it loads spiece.model: same pieces, scores and
// normalisation, so the same ids.
#pragma once

#include <optional>
#include <string>

#include "models/io/gguf.h"

namespace vidgraph::t5 {

// nullopt when the header has no `tokenizer.ggml.tokens`; throws std::runtime_error naming `origin`
// (the file) and the key when the metadata is not a unigram tokenizer or is inconsistent (arrays of
// different lengths, unknown piece types, a charsmap that is not bytes), or when libsentencepiece
// would refuse or misread the model rebuilt from it: an empty token or one holding a NUL, a score
// that is not finite, not exactly one unknown token, a token twice, byte tokens misnamed or not all
// 256, nothing to encode text with, more than 64 user-defined tokens nested as prefixes, or a
// normaliser table that would send its reader outside it (charsmap_check.h).
std::optional<std::string> spiece_model_from_gguf(const model_io::GgufHeader& header, const std::string& origin);

}  // namespace vidgraph::t5
