// Internal: finds the DiT, VAE, text-encoder and tokenizer files of a Wan2.2 model folder, in the
// layouts users have: the official release (Wan-AI/Wan2.2-TI2V-5B), a diffusers repo
// (transformer/, vae/, text_encoder/, tokenizer/), and our tiny demo model. Explicit paths win.
#pragma once

#include <string>

#include "engine/result.h"

namespace vidgraph::nodes {

struct ModelFiles {
  std::string dit;           // folder or .safetensors (layout detected by models/wan)
  std::string vae;           // .pth, .safetensors or a diffusers vae/ folder
  std::string text_encoder;  // .pth, .safetensors or folder
  std::string tokenizer;     // SentencePiece .model
};

// Fills every empty field of `given` from `folder`. An error names what is missing, the places
// looked at, and the param to set instead.
engine::Result<ModelFiles> locate_model_files(const std::string& folder, ModelFiles given);

}  // namespace vidgraph::nodes
