// Internal: Load Wan Model's memory check, made before any weight is read. Every part's bytes where
// it will live are estimated from the headers the manifest already holds (the DiT experts by
// wan::wan_estimate_load, the VAE and the text encoder by their tensors at the dtype they load in),
// summed per place (the device; the host for offloaded blocks and a CPU text encoder) and compared
// with what is free there, so a model that cannot fit is refused in a second, not after minutes of
// loading, with the numbers and the settings that would make it fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "models/wan/wan_checkpoint.h"

namespace vidgraph::nodes {

struct LoadPart {
  std::string name;     // "DiT", "low-noise expert", "VAE", "text encoder"
  c10::Device device;   // where its weights go
  int64_t bytes = 0;    // estimated, on that device
  int64_t host_bytes = 0;  // of a DiT whose blocks are offloaded: those blocks, in host memory
  bool dit = false;        // a DiT expert with blocks on the device (more offload_blocks move them)
};

struct LoadMemoryCheck {
  c10::Device device;  // the model's device (the DiT's and the VAE's)
  // Bytes the model may take on `device`: memory_limit_gib when set, else what is free there
  // (device::free_device_memory); -1 = unknown, nothing is checked on the device.
  int64_t device_budget = -1;
  int64_t host_budget = -1;   // the RAM the process may still take, for the host parts
  int64_t block_bytes = 0;    // one DiT block's weights on the device (for the offload advice)
  int64_t blocks = 0;         // DiT blocks per expert
  int64_t offload_blocks = 0; // as asked
  bool keep_fp8 = false;      // as asked
};

// "" when the parts fit, else the sentence refusing the load: what each part needs, what is free,
// and what would make it fit (offload_blocks with the count, keep_fp8, text_encoder_device cpu).
std::string check_load_memory(const std::vector<LoadPart>& parts, const LoadMemoryCheck& check);

// The elements of every tensor a weight part holds, from its headers (safetensors, GGUF) or, for
// a .pth file, from its pickle (the tensor data is not read). -1 when they cannot be read: the
// loader names the problem when it runs.
int64_t part_elements(const std::vector<std::string>& weight_files,
                      const std::vector<std::shared_ptr<const model_io::TensorFile>>& headers);

}  // namespace vidgraph::nodes
