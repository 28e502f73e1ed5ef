// Internal: finds the DiT, VAE, text-encoder and tokenizer files of a Wan2.2 model folder, in the
// layouts users have: the official release (Wan-AI/Wan2.2-TI2V-5B), a diffusers repo
// (transformer/, vae/, text_encoder/, tokenizer/), and our tiny demo model. Explicit paths win.
// Then the files the loaders (models/wan, models/vae, models/t5) will read for each part are the
// checkpoint manifest's, so that Load Wan Model fingerprints and checks exactly those, never the
// rest of a folder (which could be `/`, or hold unreadable or special files the loaders never touch).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/result.h"
#include "engine/run_options.h"
#include "models/io/checkpoint_manifest.h"
#include "models/io/model_folders.h"

namespace vidgraph::nodes {

struct ModelFiles {
  std::string dit;           // folder or .safetensors (layout detected by models/wan)
  std::string vae;           // .pth, .safetensors or a diffusers vae/ folder
  std::string text_encoder;  // .pth, .safetensors or folder
  std::string tokenizer;     // SentencePiece .model
  std::string low_noise_dit;  // a two-expert model's low-noise expert beside the DiT, or ""
};

// Fills every empty field of `given` from `folder` (its fixed layouts first), then from
// ComfyUI-style `folders` (model_folder_pick.h: picked by content); then low_noise_dit from the DiT's
// name (model_io::low_noise_partner: an A14B high-noise expert's partner). The tokenizer stays empty when
// none is found and the text encoder file carries one (`spiece_model`). An error names what is
// missing, the places looked at, and the param to set instead; an explicit path that is a FIFO,
// device or socket is refused naming its param.
engine::Result<ModelFiles> locate_model_files(const std::string& folder, ModelFiles given,
                                              const model_io::ModelFolders& folders = {});

// locate_model_files over Load Wan Model's params (model_path, dit, vae, text_encoder, tokenizer,
// model_paths_file), resolved with the run's path rules; model_path may be a ComfyUI models folder.
engine::Result<ModelFiles> model_files_from_params(const nlohmann::json& params,
                                                   const engine::RunOptions& options);

// The checkpoint manifest of `files` (models/io/checkpoint_manifest.h): every file the loaders read
// (model_io::model_part_files of each part, the one rule the loaders follow, and the tokenizer's
// spiece.model), their headers and fingerprint. Load Wan Model's cache key, preflight and compute
// get the same one while the files are unchanged. Only the folders the loaders look into are
// listed, never recursively.
std::shared_ptr<const model_io::CheckpointManifest> model_manifest(const ModelFiles& files);

// "" when every file of `manifest` is a regular, readable file, else a sentence naming the file,
// what it is and the param to fix (`folder_param` when the file was found in a folder).
std::string check_model_read_files(const model_io::CheckpointManifest& manifest, const ModelFiles& given);

}  // namespace vidgraph::nodes
