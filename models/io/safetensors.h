// Safetensors reader and writer (https://huggingface.co/docs/safetensors format: 8-byte little-endian
// header size N, N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end)}, "__metadata__":
// {string: string}}, then the data region).
//
// Reader: the file is memory-mapped (read-only, shared); the header is validated on open (the file's
// magic bytes — a GGUF, zip, HTML... file is named as such —, size bound of 16 MiB, nesting of at
// most 8 levels, no duplicate keys, JSON object, every entry's dtype supported — F64 F32 F16 BF16
// F8_E4M3 F8_E5M2 I64 I32 I16 I8 U8 BOOL —, shape non-negative with a product that fits int64, offsets inside the data
// region, end - begin == numel * element size, non-empty entries non-overlapping). load() copies one
// tensor straight from the mapping to the requested device and dtype: the file is never read into
// memory as a whole. F8 tensors (1 byte each) are decoded by fp8.h to fp32 and then converted to the
// requested dtype (fp32 when none is given); the ComfyUI scale convention is in scaled_fp8.h. Errors throw SafetensorsError whose message
// names the file (and the tensor).
// Writer: atomic — writes <path>.tmp-<pid>-<n>, fsyncs it, renames it over <path>, fsyncs the folder;
// a failure leaves any previous file untouched. Tensors are written contiguous, little-endian, from
// any device; the header is padded with spaces to a multiple of 8 bytes.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace vidgraph::model_io {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SafetensorsEntry {
  std::string name;
  std::string dtype;            // as in the file: "F32", "BF16", ...
  at::ScalarType scalar_type;   // the matching ATen type (U8 for F8_*: the stored codes)
  std::vector<int64_t> shape;
  uint64_t begin = 0;           // byte offsets inside the data region
  uint64_t end = 0;
};

// The ATen type for a safetensors dtype string, or nullopt if unsupported.
std::optional<at::ScalarType> safetensors_dtype_to_scalar(const std::string& dtype);
// The safetensors dtype string for an ATen type; throws SafetensorsError if unsupported.
std::string safetensors_dtype_name(at::ScalarType type);

// The parsed, validated header: entries sorted by data offset, and the `__metadata__` strings.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;
  std::map<std::string, std::string> metadata;
};

// Header limits. Real headers are far smaller: ~150 bytes per tensor, so a 5B DiT shard (< 1,000
// tensors) has ~150 KB and even a 100,000-tensor file stays under 16 MiB; real headers nest 3 levels
// (object > entry > shape). The size bound also bounds the parser's memory (< ~15x the header).
constexpr uint64_t kSafetensorsMaxHeaderBytes = 16ull * 1024 * 1024;
constexpr int kSafetensorsMaxHeaderDepth = 8;

// From-memory parsers (the file reader uses them; fuzz targets can too). `origin` names the file in
// errors. Both throw SafetensorsError.
// The JSON header text alone, against a data region of `data_size` bytes.
SafetensorsHeader parse_safetensors_header(const char* json, size_t size, uint64_t data_size,
                                           const std::string& origin);
SafetensorsHeader parse_safetensors_header(const std::string& json, uint64_t data_size, const std::string& origin);
// The header size prefix of a whole file of `size` bytes at `bytes`: checks the magic bytes, the
// limit and that the header fits; returns the header size.
uint64_t safetensors_header_size(const uint8_t* bytes, uint64_t size, const std::string& origin);
// A whole file held in memory: prefix, header and data-region bounds.
SafetensorsHeader parse_safetensors_bytes(const std::string& file_bytes, const std::string& origin);

class SafetensorsFile {
 public:
  // Maps and validates `path`; throws SafetensorsError naming the file and the problem.
  static SafetensorsFile open(const std::string& path);

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  const std::string& path() const;
  // Tensor names in file (data offset) order.
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  // Throws SafetensorsError naming the file and the tensor when absent.
  const SafetensorsEntry& entry(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const;

  // A new tensor (owning its memory) with the data of `name`, on `device`, converted to `dtype`
  // when given. Throws SafetensorsError naming the file and the tensor.
  at::Tensor load(const std::string& name, c10::Device device = c10::Device(c10::kCPU),
                  std::optional<at::ScalarType> dtype = std::nullopt) const;
  // The stored bytes of an F8_* tensor `name` as U8 codes on `device` (fp8.h decodes them).
  at::Tensor load_fp8_codes(const std::string& name, c10::Device device = c10::Device(c10::kCPU)) const;

 private:
  struct Impl;
  explicit SafetensorsFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// Writes `tensors` (unique names, any device, supported dtypes) and `metadata` atomically to `path`.
// `dtypes` names the stored dtype of U8 tensors that hold fp8 codes ({name: "F8_E4M3" | "F8_E5M2"},
// codes from fp8_encode). Throws SafetensorsError naming the file (and tensor) on failure.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {},
                      const std::map<std::string, std::string>& dtypes = {});

}  // namespace vidgraph::model_io
