// A tiny Wan DiT written as Kijai's / ComfyUI's scaled-fp8 single file, for the loading tests.
#pragma once

#include <set>
#include <string>

#include "models/io/safetensors.h"
#include "models/io/scaled_fp8.h"
#include "models/wan/wan_checkpoint.h"

namespace vidgraph::test {

// Writes `model` to `base`-fp32.safetensors (official names, no prefix) and, from it,
// `base`.safetensors with the blocks' 2-D linear weights as fp8 codes and one F32 scale each, the
// rest as it was. Returns the names that went to fp8.
inline std::set<std::string> write_fp8_dit(wan::WanModelImpl& model, const std::string& base,
                                           model_io::Fp8Format format, model_io::Fp8ScaleNaming naming) {
  wan::WanSaveOptions so;
  so.layout = wan::WanLayout::SingleFile;
  so.prefix = "";
  const std::string fp32 = base + "-fp32.safetensors";
  wan::wan_save_checkpoint(model, fp32, so);
  const auto st = model_io::SafetensorsFile::open(fp32);
  model_io::NamedTensors tensors;
  std::set<std::string> quantise;
  for (const std::string& name : st.names()) {
    tensors.emplace_back(name, st.load(name));
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    if (name.rfind("blocks.", 0) == 0 && weight && tensors.back().second.dim() == 2 &&
        name.find("norm") == std::string::npos)
      quantise.insert(name);
  }
  model_io::save_scaled_fp8_safetensors(base + ".safetensors", tensors, quantise, format, naming, st.metadata());
  return quantise;
}

}  // namespace vidgraph::test
