// Implements load_memory.h.
#include "nodes/model/load_memory.h"

#include <exception>

#include "models/device/device_memory.h"
#include "models/io/pth_reader.h"
#include "models/io/tensor_file.h"

namespace vidgraph::nodes {

namespace {

using device::format_gib;

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

bool on_host(const LoadPart& part, const c10::Device& model_device) {
  return part.device.is_cpu() && !model_device.is_cpu();
}

// "DiT 10.01 GiB, VAE 1.31 GiB" over the parts that put bytes where `host` says.
std::string itemise(const std::vector<LoadPart>& parts, const c10::Device& model_device, bool host) {
  std::string text;
  for (const LoadPart& p : parts) {
    const int64_t bytes = host ? (on_host(p, model_device) ? p.bytes : p.host_bytes)
                               : (on_host(p, model_device) ? 0 : p.bytes);
    if (bytes == 0) continue;
    text += (text.empty() ? "" : ", ") + p.name + " " + format_gib(bytes);
  }
  return text;
}

// What would make the device's parts fit `deficit` bytes less.
std::string advice(const std::vector<LoadPart>& parts, const LoadMemoryCheck& c, int64_t deficit) {
  if (c.device.is_cpu()) return " Close other programs, or load it on a GPU.";
  std::string text;
  int64_t experts = 0;
  for (const LoadPart& p : parts) {
    if (p.name == "text encoder" && !on_host(p, c.device)) {
      text += " text_encoder_device cpu moves the text encoder's " + format_gib(p.bytes) + " to the host.";
    }
    if (p.dit) experts += 1;
  }
  if (c.block_bytes > 0 && experts > 0) {
    const int64_t per_step = c.block_bytes * experts;
    const int64_t more = (deficit + per_step - 1) / per_step;
    if (c.offload_blocks + more <= c.blocks) {
      text += " offload_blocks " + std::to_string(c.offload_blocks + more) + " (of " + std::to_string(c.blocks) +
              ") keeps enough blocks in host memory, " + format_gib(c.block_bytes) + " a block.";
    } else {
      text += " Even offload_blocks " + std::to_string(c.blocks) + " would not fit.";
    }
  }
  if (!c.keep_fp8) text += " An fp8 DiT file with keep_fp8 takes half of bfloat16.";
  return text;
}

}  // namespace

std::string check_load_memory(const std::vector<LoadPart>& parts, const LoadMemoryCheck& c) {
  int64_t device_bytes = 0;
  int64_t host_bytes = 0;
  for (const LoadPart& p : parts) {
    (on_host(p, c.device) ? host_bytes : device_bytes) += p.bytes;
    host_bytes += p.host_bytes;
  }
  if (c.device_budget >= 0 && device_bytes > c.device_budget) {
    return "The model needs about " + format_gib(device_bytes) + " on " + c.device.str() + " for its weights (" +
           itemise(parts, c.device, false) + ") but " + format_gib(c.device_budget) + " " +
           (c.device.is_cpu() ? "of RAM are available" : "are free there") +
           "; nothing was loaded." + advice(parts, c, device_bytes - c.device_budget);
  }
  if (c.host_budget >= 0 && host_bytes > c.host_budget) {
    return "The model keeps about " + format_gib(host_bytes) + " in host memory (" + itemise(parts, c.device, true) +
           ") but " + format_gib(c.host_budget) + " of RAM are available; nothing was loaded. Offload fewer "
           "blocks or free memory.";
  }
  return std::string();
}

int64_t part_elements(const std::vector<std::string>& weight_files,
                      const std::vector<std::shared_ptr<const model_io::TensorFile>>& headers) {
  int64_t n = 0;
  try {
    if (!headers.empty()) {
      for (const auto& header : headers) {
        for (const auto& entry : header->entries()) n += element_count(entry.shape);
      }
      return n;
    }
    for (const std::string& file : weight_files) {
      for (const auto& record : model_io::PthReader::open(file).tensors()) n += element_count(record.sizes);
    }
    return weight_files.empty() ? -1 : n;
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace vidgraph::nodes
