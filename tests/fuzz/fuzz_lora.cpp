// libFuzzer target: a LoRA file as users have them (models/wan: every layout's key suffixes and
// prefixes, alpha, diff and diff_b, full weights) read from arbitrary bytes, then applied to the
// tiny Wan DiT. The reader takes a path: each input is written to one .safetensors file in a private
// temporary folder (the state-dict reader tells formats by their first bytes).
//
// Contract checked: every problem is a std::runtime_error or a LibTorch error naming what failed
// (anything else escaping, a crash or a hang is a finding); the base model is never changed.
#include <unistd.h>

#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "models/wan/wan_lora.h"
#include "models/wan/wan_tiny.h"

namespace {

using namespace vidgraph::wan;

const std::string& lora_path() {
  static const std::string path = [] {
    char dir[] = "/tmp/vidgraph-fuzz-lora-XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    return std::string(dir) + "/lora.safetensors";
  }();
  return path;
}

WanModelImpl& base() {
  static WanModel* model = new WanModel(wan_make_model(wan_tiny_config(), 1));  // shared by every input
  return **model;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  {
    std::ofstream out(lora_path(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
  }
  const float first = base().parameters().front().flatten()[0].item<float>();
  try {
    const WanLoraResult applied = wan_apply_lora(base(), wan_read_lora(lora_path()), 0.5);
    (void)applied;
  } catch (const std::runtime_error&) {
  } catch (const c10::Error&) {
  }
  if (base().parameters().front().flatten()[0].item<float>() != first) std::abort();
  return 0;
}
