// libFuzzer target: GGUF tokenizer metadata to an encoded prompt. The header is parsed from memory,
// the SentencePiece model rebuilt from its `tokenizer.ggml.*` keys and checked
// (models/t5/spiece_from_gguf.h), then loaded into libsentencepiece and asked to encode a few texts:
// fixed prompts that reach the normaliser's tables and the model's pieces, and the input's last bytes.
//
// Contract checked: metadata libsentencepiece cannot use safely is refused with std::runtime_error
// before it loads; what is accepted loads and encodes without a crash (a SIGSEGV or abort is a
// finding). libsentencepiece itself is not instrumented: its out-of-bounds reads show only when
// they fault, which the corrupt tables of tests/gguf/tst_gguf_models.cpp make them do.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "models/io/gguf.h"
#include "models/t5/sentencepiece_library.h"
#include "models/t5/spiece_from_gguf.h"

namespace {

// Texts through NFKC rules (U+1D43, full-width letters, a ligature), whitespace the normaliser
// collapses, a malformed UTF-8 byte and control characters.
const char* const kPrompts[] = {
    "a red circle moving right on a dark background",
    "\xe1\xb5\x83 \xef\xbd\x81\xef\xbd\x82 \xef\xac\x81ne   two  spaces ",
    "\xff\xfe\x01\x7f tail",
    "<unk></s><pad>\xe2\x96\x81",
};

void encode_all(const vidgraph::t5::SentencePiece& sp, const std::uint8_t* data, std::size_t size) {
  for (const char* prompt : kPrompts) (void)sp.encode(prompt);
  const std::size_t tail = std::min<std::size_t>(size, 48);
  (void)sp.encode(std::string(reinterpret_cast<const char*>(data + size - tail), tail));
}

}  // namespace

// libsentencepiece, opened around the sanitizer's dlopen (sentencepiece_library.cpp says why),
// allocates and frees through different entry points of the sanitizer's one heap (malloc, then
// operator delete), which the sanitizer's pairing check would report as a finding.
extern "C" const char* __asan_default_options() {
  return "alloc_dealloc_mismatch=0";
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const vidgraph::model_io::GgufHeader header = vidgraph::model_io::parse_gguf_header(data, size, "fuzz.gguf");
    const auto model = vidgraph::t5::spiece_model_from_gguf(header, "fuzz.gguf");
    if (!model) return 0;
    const auto sp = vidgraph::t5::SentencePiece::load_from_bytes(*model, "fuzz.gguf");
    encode_all(*sp, data, size);
  } catch (const std::runtime_error&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
