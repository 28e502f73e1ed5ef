// Implements text_encoder_loader.h over models/t5: the encoder loads eagerly, can be released, and
// reloads on the next encode after a release.
#include "nodes/model/text_encoder_loader.h"

#include <filesystem>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "models/io/state_dict_file.h"
#include "models/t5/umt5_checkpoint.h"
#include "models/t5/umt5_prompt.h"
#include "nodes/model/model_handles.h"
#include "nodes/nodes_log.h"

namespace vidgraph::nodes {

namespace {

struct EncoderState {
  std::mutex mutex;
  std::string weights;
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType dtype = at::kFloat;
  std::shared_ptr<t5::Umt5Encoder> encoder;  // null after release()
  std::shared_ptr<t5::Umt5Tokenizer> tokenizer;

  const t5::Umt5Encoder& loaded() {
    if (!encoder) encoder = t5::load_umt5(weights, device, dtype);
    return *encoder;
  }
};

bool is_gguf(const std::string& weights) {
  std::error_code ec;
  return std::filesystem::is_regular_file(weights, ec) &&
         model_io::detect_weight_format(weights) == model_io::WeightFormat::Gguf;
}

}  // namespace

at::ScalarType text_encoder_dtype(const c10::Device& device) {
  return device.is_cpu() ? at::kFloat : at::kBFloat16;
}

TextEncoderHandle load_text_encoder(const std::string& weights, const std::string& tokenizer,
                                    c10::Device device) {
  auto state = std::make_shared<EncoderState>();
  state->weights = weights;
  state->device = device;
  state->dtype = text_encoder_dtype(device);
  // No tokenizer given: the one the encoder file carries (ComfyUI's `spiece_model`, GGUF metadata).
  std::string tokenizer_origin = tokenizer;
  std::optional<t5::Umt5Tokenizer> tok = tokenizer.empty() ? t5::load_umt5_embedded_tokenizer(weights, &tokenizer_origin)
                                                           : t5::load_umt5_tokenizer(tokenizer);
  if (!tok) {
    throw std::runtime_error("no tokenizer was given and the text encoder '" + weights + "' carries none (" +
                             (is_gguf(weights) ? "no tokenizer.ggml.tokens metadata" : "no 'spiece_model' tensor") +
                             "); set the tokenizer param to the umT5 spiece.model (google/umt5-xxl)");
  }
  state->tokenizer = std::make_shared<t5::Umt5Tokenizer>(std::move(*tok));
  TextEncoderHandle handle;
  handle.path = weights;
  handle.device = device;
  handle.text_dim = state->loaded().config().dim;
  // A tokenizer of another model gives a different video without any error: refuse it (or warn).
  const std::string doubt =
      t5::check_umt5_tokenizer(*state->tokenizer, state->loaded().config().vocab, weights, tokenizer_origin);
  if (!doubt.empty()) nodes_logger()->warn("{}", doubt);
  handle.bytes = module_bytes(*state->encoder);
  handle.encode = [state](const std::string& text) {
    std::lock_guard<std::mutex> lock(state->mutex);
    // [len, dim] -> [1, len, dim] float32 on the CPU
    const std::vector<at::Tensor> out = t5::encode_prompts(state->loaded(), *state->tokenizer, {text});
    return out.at(0).unsqueeze(0).to(c10::Device(c10::kCPU), at::kFloat).contiguous();
  };
  handle.release = [state] {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->encoder.reset();
  };
  return handle;
}

TextEncoderHandle rank0_text_encoder(const std::string& weights, c10::Device device) {
  TextEncoderHandle handle;
  handle.path = weights;
  handle.device = device;
  handle.encode = [](const std::string&) -> at::Tensor {
    throw std::runtime_error("this rank loads no text encoder: rank 0 encodes prompts and sends their "
                             "embeddings; run this node on one process");
  };
  return handle;
}

}  // namespace vidgraph::nodes
