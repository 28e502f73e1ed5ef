// libFuzzer target: the GGUF header reader of models/io on a whole file held in memory (counts,
// strings, metadata arrays, tensor infos, alignment, data bounds), then the rebuilding of a
// SentencePiece model from its tokenizer metadata (models/t5/spiece_from_gguf.h).
//
// Contract checked: malformed input throws std::runtime_error (GgufError, or the tokenizer's
// message naming the key) and nothing else; no out-of-bounds read, no overflow (ASan, UBSan).
#include <cstddef>
#include <cstdint>
#include <stdexcept>

#include "models/io/gguf.h"
#include "models/t5/spiece_from_gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const vidgraph::model_io::GgufHeader header = vidgraph::model_io::parse_gguf_header(data, size, "fuzz.gguf");
    (void)vidgraph::t5::spiece_model_from_gguf(header, "fuzz.gguf");
  } catch (const std::runtime_error&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
