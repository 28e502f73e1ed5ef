// The prefixes exporters put before a DiT's module names: ComfyUI's full checkpoints
// (`model.diffusion_model.`), its UNet files saved with `diffusion_model.`, other repacks (`model.`)
// and diffusers pipelines saved whole (`transformer.`). Loaders, the LoRA reader and the file
// listing all strip these; PEFT LoRAs nest `base_model.model.` before them.
#pragma once

#include <array>

namespace vidgraph::model_io {

inline constexpr std::array<const char*, 4> kDitKeyPrefixes = {"model.diffusion_model.", "diffusion_model.",
                                                               "model.", "transformer."};

}  // namespace vidgraph::model_io
