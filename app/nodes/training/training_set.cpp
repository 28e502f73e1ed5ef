// Implements training_set.h over models/io's safetensors reader and writer.
#include "nodes/training/training_set.h"

#include <cerrno>
#include <stdexcept>

#include <c10/util/Exception.h>

#include "models/io/safetensors.h"
#include "nodes/output_path.h"

namespace vidgraph::nodes {

namespace {

constexpr const char* kLatent = "latent";
constexpr const char* kContext = "context";
constexpr const char* kCondition = "condition";

std::string meta(const std::map<std::string, std::string>& metadata, const std::string& key) {
  const auto it = metadata.find(key);
  return it == metadata.end() ? std::string() : it->second;
}

// Opens `path` and checks it is a sample file with the two tensors of the right ranks.
model_io::SafetensorsFile open_sample(const std::string& path) {
  auto file = model_io::SafetensorsFile::open(path);
  if (meta(file.metadata(), "vidgraph_format") != kTrainingSampleFormat || !file.contains(kLatent) ||
      !file.contains(kContext) || file.entry(kLatent).shape.size() != 4 ||
      file.entry(kContext).shape.size() != 2 ||
      (file.contains(kCondition) && file.entry(kCondition).shape.size() != 4)) {
    throw std::runtime_error("'" + path + "' is not a " + kTrainingSampleFormat + " file (latent " +
                             "[C, F, h, w], context [L, text_dim], optional condition [4 + C, F, h, w])");
  }
  return file;
}

}  // namespace

std::string write_training_sample(const std::string& path, const TrainingSampleData& data) {
  if (data.latent.dim() != 4 || data.context.dim() != 2 || (data.condition.defined() && data.condition.dim() != 4)) {
    return "A training sample needs latent [C, F, h, w], context [L, text_dim] and an optional condition "
           "[4 + C, F, h, w] (writing '" + path + "').";
  }
  remove_stale_temporaries(path);
  const std::string temp = temporary_sibling(path);
  const std::map<std::string, std::string> metadata = {
      {"vidgraph_format", kTrainingSampleFormat}, {"caption", data.caption}, {"source", data.source},
      {"mode", data.mode}, {"settings", data.settings}};
  try {
    model_io::NamedTensors tensors{{kLatent, data.latent.contiguous().to(at::kFloat)},
                                   {kContext, data.context.contiguous().to(at::kFloat)}};
    if (data.condition.defined()) tensors.emplace_back(kCondition, data.condition.contiguous().to(at::kFloat));
    model_io::save_safetensors(temp, tensors, metadata);
  } catch (const std::exception& e) {
    remove_temporary(temp);
    return std::string("Could not write training sample '") + path + "': " + e.what();
  }
  const int rc = move_no_replace(temp, path);
  if (rc == 0) return {};
  remove_temporary(temp);
  if (rc == EEXIST) return {};  // the same content key, written by another run: keep that one
  return "Could not publish training sample '" + path + "': " + describe_errno(rc) + ".";
}

TrainingSampleData read_training_sample(const std::string& path) {
  try {
    const auto file = open_sample(path);
    TrainingSampleData data;
    data.latent = file.load(kLatent, c10::Device(c10::kCPU), at::kFloat);
    data.context = file.load(kContext, c10::Device(c10::kCPU), at::kFloat);
    if (file.contains(kCondition)) data.condition = file.load(kCondition, c10::Device(c10::kCPU), at::kFloat);
    data.caption = meta(file.metadata(), "caption");
    data.source = meta(file.metadata(), "source");
    data.mode = meta(file.metadata(), "mode");
    data.settings = meta(file.metadata(), "settings");
    return data;
  } catch (const c10::Error& e) {
    throw std::runtime_error("Reading training sample '" + path + "' failed: " + e.what_without_backtrace());
  }
}

std::string read_training_sample_info(const std::string& path, TrainingSampleFile* out) {
  try {
    const auto file = open_sample(path);
    out->path = path;
    out->latent_shape = file.entry(kLatent).shape;
    out->context_shape = file.entry(kContext).shape;
    out->condition_shape = file.contains(kCondition) ? file.entry(kCondition).shape : std::vector<int64_t>{};
    out->source = meta(file.metadata(), "source");
    out->image_to_video = meta(file.metadata(), "mode") == "i2v";
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace vidgraph::nodes
