// Internal (LibTorch): the TRAINING_SET value (Encode Dataset -> Train Wan) and the sample file
// format, the one place that writes and reads it.
//
// A sample file is a safetensors file in the dataset cache folder, named by its content key
// (`<key>.safetensors`, key = 16 hex digits, see Encode Dataset):
//   tensor `latent`   [C, F, h, w] float32: the VAE's normalised latent of the clip
//   tensor `context`  [L, text_dim] float32: the umT5 embedding of the caption (real tokens only)
//   tensor `condition` (mode i2v with a 16-channel VAE, the Wan2.1 VAE of Wan2.2-I2V-A14B)
//                     [4 + C, F, h, w] float32: the image conditioning of the clip's first frame
//                     (sampling/image_conditioning.h), which that model takes beside its latent
//   metadata          vidgraph_format = vidgraph-training-sample-v1, caption, source (the clip's
//                     file name), mode (t2v | i2v), settings (JSON of what made it)
// The TRAINING_SET value lists the files and their shapes, and holds the encoding of the dropout
// prompt (one small tensor); the trainer loads the samples when it starts, so training needs
// neither the clips nor the text encoder.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace vidgraph::nodes {

inline constexpr const char* kTrainingSampleFormat = "vidgraph-training-sample-v1";

struct TrainingSampleFile {
  std::string path;
  std::string source;                  // the clip's name in the dataset
  std::vector<int64_t> latent_shape;   // [C, F, h, w]
  std::vector<int64_t> context_shape;  // [L, text_dim]
  bool image_to_video = false;
  std::vector<int64_t> condition_shape;  // [4 + C, F, h, w]; empty when the sample has none
};

struct TrainingSet {
  std::string cache_folder;
  std::vector<TrainingSampleFile> samples;
  // [L, text_dim] float32: the prompt a sample trains on when Train Wan drops its caption.
  at::Tensor dropout_context;
};

struct TrainingSampleData {
  at::Tensor latent;   // [C, F, h, w] float32
  at::Tensor context;  // [L, text_dim] float32
  at::Tensor condition;  // [4 + C, F, h, w] float32, or undefined
  std::string caption;
  std::string source;
  std::string mode;      // "t2v" | "i2v"
  std::string settings;  // JSON text
};

// Writes `data` to `path` through a temporary sibling published without replacing anything: when
// `path` appeared meanwhile (another run wrote the same key), that file is kept. "" or an error
// naming the file.
std::string write_training_sample(const std::string& path, const TrainingSampleData& data);

// Reads a whole sample; throws std::runtime_error naming the file when it is not a sample file.
TrainingSampleData read_training_sample(const std::string& path);

// Reads only the header: fills `out`'s shapes, source and mode. "" or a sentence naming the file
// (a damaged cache entry is reported, never served).
std::string read_training_sample_info(const std::string& path, TrainingSampleFile* out);

}  // namespace vidgraph::nodes
