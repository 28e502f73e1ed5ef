// Internal (LibTorch): the MODEL, VAE and TEXT_ENCODER values made by Load Wan Model. Handles are
// immutable once built and shared by every consumer; the engine's cache keeps them loaded between
// runs while the loader's params and files are unchanged.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "models/vae/wan_vae.h"
#include "models/wan/wan_model.h"

namespace vidgraph::nodes {

// Which expert of a two-expert model (Wan2.2-A14B) a DiT is: the timesteps it runs at when
// sampling, and trains on.
enum class WanExpert { None, HighNoise, LowNoise };

struct DitHandle {
  std::shared_ptr<wan::WanModelImpl> model;
  std::string path;
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType dtype = at::kFloat;
  WanExpert expert = WanExpert::None;  // kept by Load LoRA, Train Wan and Distill Wan
  // experts_on_gpu "active": the blocks this expert offloads while it samples; the other expert
  // then waits with all of its blocks in host memory (sampling/expert_swap.h). -1 = stays as loaded.
  int64_t swap_offload_blocks = -1;
};

struct VaeHandle {
  std::shared_ptr<vae::WanVae> vae;
  std::string path;
  c10::Device device = c10::Device(c10::kCPU);
  at::ScalarType dtype = at::kFloat;  // the reference runs the VAE in fp32 (Load Wan Model's vae_dtype)
};

// The umT5 encoder and its tokenizer behind one call: text -> [1, L, text_dim] float32 on the CPU,
// trimmed to the real token count (EOS included). `release` frees or offloads the encoder's weights
// (Encode Text calls it when asked to free memory); encode reloads them when needed.
struct TextEncoderHandle {
  std::function<at::Tensor(const std::string& text)> encode;
  std::function<void()> release;
  std::string path;
  c10::Device device = c10::Device(c10::kCPU);  // where the encoder runs
  int64_t text_dim = 0;
  std::size_t bytes = 0;
};

// "[1, 48, 3, 4, 6]"
std::string shape_text(const at::Tensor& tensor);

// Bytes held by a module's parameters and buffers (for the cache budget).
std::size_t module_bytes(const torch::nn::Module& module);

}  // namespace vidgraph::nodes
