// GGUF reader (the llama.cpp / ggml weight format: ggml's docs/gguf.md), versions 2 and 3,
// little-endian:
//   "GGUF", u32 version, u64 tensor count, u64 metadata count,
//   metadata: {string key, u32 value type, value} (value types: u8 i8 u16 i16 u32 i32 f32 bool
//             string array u64 i64 f64; an array is u32 element type, u64 count, elements),
//   tensor infos: {string name, u32 n_dims, u64 dims[n_dims] (dims[0] fastest), u32 ggml type,
//                  u64 offset into the data section},
//   padding to `general.alignment` (default 32), the data section (each tensor aligned).
// Strings are u64 length + bytes.
//
// The file is memory-mapped; the header is validated on open against hostile input: every count,
// length and offset is checked against the bytes left before anything is allocated, key, tensor and
// array-element counts against caps real files never approach (kGgufMax*, below), the header
// must end within kGgufMaxHeaderBytes, names are unique, tensors lie inside the data section,
// aligned, sized by their type and shape, and do not overlap. Tensor types must be ggml types
// (gguf_quants.h); undecodable ones are named when loaded. Errors throw GgufError naming the file.
//
// Shapes are given in torch order (dims reversed). ComfyUI-GGUF's `comfy.gguf.orig_shape.<name>`
// (an i32 array, torch order) restores tensors its converter stored reshaped; tensors of more than
// four dimensions (the Wan `patch_embedding.weight` put back by its fix_5d_tensors.py) are read as
// stored. load() decodes quantised blocks on the CPU to fp32 (F32/F16/BF16 are copied directly),
// then converts to the requested device and dtype.
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
#include <string_view>
#include <vector>

#include "models/io/gguf_quants.h"
#include "models/io/safetensors.h"

namespace vidgraph::model_io {

class GgufError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class GgufValueType : uint32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, Bool = 7, String = 8, Array = 9,
  U64 = 10, I64 = 11, F64 = 12,
};

// One metadata value: a scalar is an array of one element with `is_array` false. Elements are kept
// compactly, as the file stores them (numbers as their little-endian bytes, strings concatenated with
// their end offsets), so a header costs about its own size in memory, never a heap object per element.
struct GgufValue {
  GgufValueType type = GgufValueType::U8;  // the element type (never Array)
  bool is_array = false;
  bool loaded = true;   // false: an array a listing parse skipped (size() known, elements not kept)
  uint64_t count = 0;   // elements
  std::string bytes;    // numeric elements as stored: count * element size bytes
  std::string text;     // string elements, concatenated
  std::vector<uint64_t> ends;  // string i is text[ends[i - 1], ends[i])

  size_t size() const { return size_t(count); }
  bool is_int() const;     // integer or bool elements
  bool is_float() const;   // f32 / f64 elements
  bool is_string() const;
  // Element i (u64 above 2^63 wrap: not used by models); throws GgufError on another type, an index
  // out of range or an array that was not loaded.
  int64_t int_at(size_t i) const;
  double float_at(size_t i) const;
  std::string_view string_at(size_t i) const;
  // All elements, materialised; for the few callers that need them as vectors (the tokenizer).
  std::vector<int64_t> int_list() const;
  std::vector<double> float_list() const;
  std::vector<std::string> string_list() const;
  // The scalar as a string / integer; throws GgufError (naming `key`) on another type.
  std::string as_string(const std::string& key) const;
  int64_t as_int(const std::string& key) const;
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> dims;   // as stored, ggml order (dims[0] fastest)
  std::vector<int64_t> shape;  // torch order, after comfy.gguf.orig_shape
  GgmlType type = GgmlType::F32;
  uint64_t offset = 0;  // into the data section
  uint64_t bytes = 0;
  int64_t numel() const;
};

// Header limits: real headers are far smaller (a umT5 GGUF with its 256k-piece tokenizer has ~6 MB,
// a DiT ~100 KB).
constexpr uint64_t kGgufMaxHeaderBytes = 256ull * 1024 * 1024;
constexpr uint64_t kGgufMaxStringBytes = 16ull * 1024 * 1024;
constexpr uint32_t kGgufMaxDims = 8;
// Counts real files never approach (a umT5 or Wan GGUF has < 100 keys and < 2,000 tensors, a 256k-piece
// tokenizer array 256k elements): each key or tensor info costs a few hundred bytes of bookkeeping
// however small its bytes in the file, so without these caps a 256 MiB header could take gigabytes.
constexpr uint64_t kGgufMaxMetadataKeys = 65536;
constexpr uint64_t kGgufMaxTensors = 262144;
constexpr uint64_t kGgufMaxArrayElements = 16ull * 1024 * 1024;

// How much of the header to keep: Listing (model_file_info.h) skips the elements of metadata arrays
// (tokenizer tables of megabytes) except ComfyUI-GGUF's shapes, after checking they lie in the file.
enum class GgufRead { All, Listing };

struct GgufHeader {
  uint32_t version = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  // start of the data section in the file
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;  // file order
};

// Parses and validates the header of a whole file held at `bytes` (`size` bytes); `origin` names
// it in errors. The fuzz targets and GgufFile::open use it.
GgufHeader parse_gguf_header(const uint8_t* bytes, uint64_t size, const std::string& origin,
                             GgufRead read = GgufRead::All);

class GgufFile {
 public:
  static GgufFile open(const std::string& path, GgufRead read = GgufRead::All);

  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  ~GgufFile();

  const std::string& path() const;
  const GgufHeader& header() const;
  const std::vector<GgufTensorInfo>& tensors() const;
  const GgufTensorInfo* find(const std::string& name) const;
  const GgufValue* metadata(const std::string& key) const;
  // `general.architecture`, or "" when absent.
  std::string architecture() const;

  // The tensor decoded to fp32 on the CPU, then converted to `device` and `dtype` (when none: F16,
  // BF16 and F32 tensors keep their type, the others are fp32).
  // Throws GgufError naming the file and tensor for a type Vidgraph does not decode.
  at::Tensor load(const std::string& name, c10::Device device = c10::Device(c10::kCPU),
                  std::optional<at::ScalarType> dtype = std::nullopt) const;

 private:
  struct Impl;
  explicit GgufFile(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Every tensor of the file, in file order (dtypes as GgufFile::load gives them).
NamedTensors load_gguf_tensors(const GgufFile& file, c10::Device device = c10::Device(c10::kCPU),
                               std::optional<at::ScalarType> dtype = std::nullopt);

// "tensor 'x' of 'f' uses GGUF type IQ4_XS, which Vidgraph does not read; use a Q4_K_M, Q5_K_M,
// Q6_K or Q8_0 file" when `info`'s type is not decodable, else "".
std::string gguf_unreadable_reason(const GgufTensorInfo& info, const std::string& origin);

}  // namespace vidgraph::model_io
