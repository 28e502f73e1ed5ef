// libFuzzer target: a LoRA file as users have them (models/wan: every layout's key suffixes and
// prefixes, alpha, diff and diff_b, full weights) read from arbitrary bytes, then applied to the
// tiny Wan DiT. The reader takes a path: each input is written to one .safetensors file in a private
// temporary folder (the state-dict reader tells formats by their first bytes).
//
// Contract checked: every problem is a std::runtime_error or a LibTorch error naming what failed
// (anything else escaping, a crash or a hang is a finding); the base model is never changed.
#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "fuzz_input_file.h"
#include "models/wan/wan_lora.h"
#include "models/wan/wan_tiny.h"

namespace {

using namespace vidgraph::wan;

WanModelImpl& base() {
  static WanModel* model = new WanModel(wan_make_model(wan_tiny_config(), 1));  // shared by every input
  return **model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string& path = fuzz::write_input("lora.safetensors", data, size);
  const float first = base().parameters().front().flatten()[0].item<float>();
  try {
    const WanLoraResult applied = wan_apply_lora(base(), wan_read_lora(path), 0.5);
    (void)applied;
  } catch (const std::runtime_error&) {
  } catch (const c10::Error&) {
  }
  if (base().parameters().front().flatten()[0].item<float>() != first) std::abort();
  return 0;
}
