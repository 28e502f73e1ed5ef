// libFuzzer target: the safetensors reader of models/io on a whole file held in memory (the
// 8-byte header size, the JSON header, the data-region bounds of every tensor).
//
// Contract checked: malformed input throws SafetensorsError (a std::runtime_error naming the
// origin) and nothing else; no out-of-bounds read, no overflow (ASan, UBSan).
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    (void)vidgraph::model_io::parse_safetensors_bytes(bytes, "fuzz.safetensors");
  } catch (const vidgraph::model_io::SafetensorsError&) {
    // Refused with a message: the expected outcome for most inputs.
  }
  return 0;
}
