// libFuzzer target: the restricted unpickler of models/io (the data.pkl record of a PyTorch zip
// .pth state dict), from memory.
//
// Contract checked (models/io/pth_pickle.h): any input is either a list of tensor records or a
// std::runtime_error naming the origin; nothing is executed, no other exception escapes, no
// out-of-bounds access or unbounded allocation (ASan, UBSan, libFuzzer's -rss_limit_mb).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "models/io/pth_pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string pickle(reinterpret_cast<const char*>(data), size);
  try {
    (void)vidgraph::model_io::pth_unpickle_state_dict(pickle, "fuzz.pth/data.pkl");
  } catch (const std::runtime_error&) {
    // Refused with a message.
  }
  return 0;
}
