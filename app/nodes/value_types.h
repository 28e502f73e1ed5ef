// Port value-type names of the built-in nodes and the plain (LibTorch-free) objects some carry.
// Objects with tensors (LATENT, CONDITIONING, the model handles) are opaque outside app/nodes:
// the GUI sees only their type names and byte sizes.
#pragma once

#include <string>

#include "nodes/frames.h"

namespace vidgraph::nodes {

inline constexpr const char* kImageType = "IMAGE";           // nodes::Image
inline constexpr const char* kPromptType = "PROMPT";         // nodes::PromptText
inline constexpr const char* kModelType = "MODEL";           // the Wan DiT (opaque)
inline constexpr const char* kVaeType = "VAE";               // the Wan2.2 VAE (opaque)
inline constexpr const char* kTextEncoderType = "TEXT_ENCODER";  // umT5 + tokenizer (opaque)
inline constexpr const char* kConditioningType = "CONDITIONING"; // text embeddings (opaque)
inline constexpr const char* kLatentType = "LATENT";         // video latents (opaque)
inline constexpr const char* kVideoType = "VIDEO";           // nodes::Video
inline constexpr const char* kPathType = "PATH";             // std::string: a written file
inline constexpr const char* kDatasetType = "DATASET";       // captioned training clips (opaque)
inline constexpr const char* kTrainingSetType = "TRAINING_SET";  // encoded samples on disk (opaque)

// Positive and negative prompt text.
struct PromptText {
  std::string positive;
  std::string negative;
};

// Decoded frames and their intended playback rate. Preview events carry a Video too.
struct Video {
  Frames frames;
  double fps = 24.0;
};

}  // namespace vidgraph::nodes
