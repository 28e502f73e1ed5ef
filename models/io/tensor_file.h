// One weight file read tensor by tensor, whatever its format: a .safetensors file (plain, or fp8
// with ComfyUI's scales: scaled_fp8.h) or a .gguf file (gguf.h), told apart by the first bytes.
// Loaders that pick tensors by name (the Wan DiT) use this instead of one reader per format.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/io/fp8.h"
#include "models/io/safetensors.h"

namespace vidgraph::model_io {

class GgufFile;

struct TensorFileEntry {
  std::string name;
  std::vector<int64_t> shape;  // torch order
  std::string dtype;           // as the file names it: "BF16", "F8_E4M3", "Q4_K", ...
  bool is_float = false;       // a float type this reader decodes to floats
  std::string unreadable;      // why this tensor cannot be loaded ("" when it can)
};

// An fp8 tensor as stored: its codes and its scale in ComfyUI's convention (1 when it has none).
struct Fp8Stored {
  at::Tensor codes;  // U8
  Fp8Format format = Fp8Format::E4M3FN;
  float scale = 1.0f;
};

class TensorFile {
 public:
  // Throws std::runtime_error (SafetensorsError / GgufError) naming the file.
  static TensorFile open(const std::string& path);
  // The same, shared: a file's header is read once while the file is unchanged (same device,
  // inode, size, modification and change times), so inspecting, fingerprinting and loading a
  // model read each header once. The most recently used files stay open (memory-mapped).
  static std::shared_ptr<const TensorFile> open_shared(const std::string& path);
  // How many headers open() and open_shared() have read from disk in this process (for tests).
  static int64_t header_reads();

  TensorFile(TensorFile&&) noexcept;
  TensorFile& operator=(TensorFile&&) noexcept;
  ~TensorFile();

  const std::string& path() const;
  bool is_gguf() const;
  // The reader underneath, for loaders that need more than tensors (a tokenizer in the metadata or
  // in a U8 tensor): exactly one of the two is non-null.
  const SafetensorsFile* safetensors() const;
  const GgufFile* gguf() const;
  // The model tensors (fp8 scales and markers left out), in file order.
  const std::vector<TensorFileEntry>& entries() const;
  // String metadata: the safetensors `__metadata__`, or the string-valued GGUF keys.
  const std::map<std::string, std::string>& metadata() const;
  // `name` dequantised on `device` in `dtype` (when none: as stored for plain floats, else fp32).
  at::Tensor load(const std::string& name, c10::Device device, std::optional<at::ScalarType> dtype) const;
  // `name` as stored when that is fp8 (a safetensors F8_* tensor), codes on `device`; else nullopt.
  std::optional<Fp8Stored> load_fp8(const std::string& name, c10::Device device) const;
  // Every tensor, in file order (fp8 dequantised, GGUF decoded): what load_state_dict_file gives
  // for a safetensors or GGUF file, which it reads through this.
  NamedTensors load_all(c10::Device device, std::optional<at::ScalarType> dtype) const;

 private:
  struct Impl;
  explicit TensorFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vidgraph::model_io
