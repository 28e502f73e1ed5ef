// GGUF header parsing and validation from memory. See gguf.h.
#include "models/io/gguf.h"

#include <algorithm>
#include <cstring>

namespace vidgraph::model_io {
namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw GgufError("invalid GGUF file '" + origin + "': " + what);
}

std::string type_name(GgufValueType t) {
  static const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array",
                                "u64", "i64", "f64"};
  const auto i = uint32_t(t);
  return i < 13 ? names[i] : "type " + std::to_string(i);
}

// Element size in the file; strings are at least their 8-byte length.
uint64_t min_element_bytes(GgufValueType t) {
  switch (t) {
    case GgufValueType::U8: case GgufValueType::I8: case GgufValueType::Bool: return 1;
    case GgufValueType::U16: case GgufValueType::I16: return 2;
    case GgufValueType::U32: case GgufValueType::I32: case GgufValueType::F32: return 4;
    default: return 8;
  }
}

// Reads the header fields in order; every read is bounds-checked against the file and the limit.
class Cursor {
 public:
  Cursor(const uint8_t* bytes, uint64_t size, const std::string& origin)
      : bytes_(bytes), size_(size), origin_(origin) {}

  uint64_t pos() const { return pos_; }
  uint64_t left() const { return std::min(size_, kGgufMaxHeaderBytes) - pos_; }

  void need(uint64_t n, const std::string& what) {
    if (n <= size_ - pos_ && pos_ + n <= kGgufMaxHeaderBytes) return;
    if (n > size_ - pos_)
      fail(origin_, "the file ends inside the header: " + what + " at byte " + std::to_string(pos_) + " needs " +
                        std::to_string(n) + " bytes, " + std::to_string(size_ - pos_) + " are left (truncated?)");
    fail(origin_, "the header runs past the " + std::to_string(kGgufMaxHeaderBytes >> 20) +
                      " MiB limit while reading " + what + " (real headers are a few MB)");
  }
  template <typename T>
  T read(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string string(const std::string& what) {
    const auto n = read<uint64_t>(what + " length");
    if (n > kGgufMaxStringBytes)
      fail(origin_, what + " is " + std::to_string(n) + " bytes long, over the 16 MiB limit (damaged file?)");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(bytes_ + pos_), size_t(n));
    pos_ += n;
    return s;
  }

 private:
  const uint8_t* bytes_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& origin_;
};

void read_element(Cursor& c, GgufValueType t, GgufValue& v, const std::string& what) {
  switch (t) {
    case GgufValueType::U8: v.ints.push_back(c.read<uint8_t>(what)); break;
    case GgufValueType::I8: v.ints.push_back(c.read<int8_t>(what)); break;
    case GgufValueType::U16: v.ints.push_back(c.read<uint16_t>(what)); break;
    case GgufValueType::I16: v.ints.push_back(c.read<int16_t>(what)); break;
    case GgufValueType::U32: v.ints.push_back(c.read<uint32_t>(what)); break;
    case GgufValueType::I32: v.ints.push_back(c.read<int32_t>(what)); break;
    case GgufValueType::U64: v.ints.push_back(int64_t(c.read<uint64_t>(what))); break;
    case GgufValueType::I64: v.ints.push_back(c.read<int64_t>(what)); break;
    case GgufValueType::Bool: v.ints.push_back(c.read<uint8_t>(what) != 0); break;
    case GgufValueType::F32: v.floats.push_back(c.read<float>(what)); break;
    case GgufValueType::F64: v.floats.push_back(c.read<double>(what)); break;
    case GgufValueType::String: v.strings.push_back(c.string(what)); break;
    case GgufValueType::Array: break;  // refused by the caller
  }
}

GgufValueType value_type(Cursor& c, const std::string& origin, const std::string& what) {
  const auto t = c.read<uint32_t>(what);
  if (t > uint32_t(GgufValueType::F64))
    fail(origin, what + " has unknown value type " + std::to_string(t) + " (GGUF defines 0-12)");
  return GgufValueType(t);
}

GgufValue read_value(Cursor& c, const std::string& key, const std::string& origin) {
  const std::string what = "metadata '" + key + "'";
  GgufValue v;
  v.type = value_type(c, origin, what + " type");
  if (v.type != GgufValueType::Array) {
    read_element(c, v.type, v, what);
    return v;
  }
  v.is_array = true;
  v.type = value_type(c, origin, what + " element type");
  if (v.type == GgufValueType::Array) fail(origin, what + " is an array of arrays, which GGUF readers do not take");
  const auto n = c.read<uint64_t>(what + " count");
  // Each element needs at least this many bytes: a count the file cannot hold is refused before
  // anything is reserved.
  if (n > c.left() / min_element_bytes(v.type))
    fail(origin, what + " claims " + std::to_string(n) + " " + type_name(v.type) + " elements, more than the " +
                     std::to_string(c.left()) + " header bytes left can hold (truncated or damaged file?)");
  for (uint64_t i = 0; i < n; ++i) read_element(c, v.type, v, what);
  return v;
}

uint64_t checked_mul(uint64_t a, uint64_t b, const std::string& origin, const std::string& what) {
  uint64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out) || out > uint64_t(INT64_MAX)) fail(origin, what + " is too large");
  return out;
}

GgufTensorInfo read_tensor_info(Cursor& c, uint64_t index, const std::string& origin) {
  GgufTensorInfo t;
  t.name = c.string("the name of tensor " + std::to_string(index));
  const std::string where = "tensor '" + t.name + "'";
  const auto n_dims = c.read<uint32_t>(where + " dimension count");
  if (n_dims > kGgufMaxDims)
    fail(origin, where + " has " + std::to_string(n_dims) + " dimensions, more than " + std::to_string(kGgufMaxDims));
  uint64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const auto n = c.read<uint64_t>(where + " dimensions");
    numel = checked_mul(numel, n, origin, where + "'s shape");
    t.dims.push_back(int64_t(n));
  }
  const auto type_id = c.read<uint32_t>(where + " type");
  const auto info = ggml_type_info(type_id);
  if (!info) fail(origin, where + " has unknown GGML type id " + std::to_string(type_id) + " (a newer ggml type?)");
  t.type = info->type;
  t.offset = c.read<uint64_t>(where + " offset");
  const int64_t row = t.dims.empty() ? 1 : t.dims[0];
  if (row % info->block != 0)
    fail(origin, where + " is " + info->name + " but its first dimension " + std::to_string(row) +
                     " is not a multiple of the type's block of " + std::to_string(info->block));
  t.bytes = checked_mul(numel / uint64_t(info->block), uint64_t(info->bytes), origin, where + "'s byte size");
  t.shape.assign(t.dims.rbegin(), t.dims.rend());
  return t;
}

// ComfyUI-GGUF's record of a tensor stored reshaped: an integer array in torch order.
void apply_orig_shape(GgufTensorInfo& t, const GgufHeader& h, const std::string& origin) {
  const auto it = h.metadata.find("comfy.gguf.orig_shape." + t.name);
  if (it == h.metadata.end()) return;
  const GgufValue& v = it->second;
  if (!v.is_array || v.ints.size() != v.size() || v.ints.size() > kGgufMaxDims)
    fail(origin, "metadata '" + it->first + "' is not an array of at most 8 integers");
  uint64_t numel = 1;
  for (const int64_t d : v.ints) {
    if (d < 0) fail(origin, "metadata '" + it->first + "' has a negative dimension");
    numel = checked_mul(numel, uint64_t(d), origin, "metadata '" + it->first + "'");
  }
  if (int64_t(numel) != t.numel())
    fail(origin, "metadata '" + it->first + "' gives " + std::to_string(numel) + " elements, the tensor has " +
                     std::to_string(t.numel()));
  t.shape = v.ints;
}

uint64_t read_alignment(const GgufHeader& h, const std::string& origin) {
  const auto it = h.metadata.find("general.alignment");
  if (it == h.metadata.end()) return 32;
  const GgufValue& v = it->second;
  if (v.is_array || v.ints.size() != 1) fail(origin, "general.alignment is not an integer");
  const int64_t a = v.ints[0];
  if (a <= 0 || a > (1 << 20) || (a & (a - 1)) != 0)
    fail(origin, "general.alignment is " + std::to_string(a) + ", not a power of two up to 1 MiB");
  return uint64_t(a);
}

void check_layout(std::vector<GgufTensorInfo> tensors, uint64_t data_size, uint64_t alignment,
                  const std::string& origin) {
  for (const auto& t : tensors) {
    const std::string where = "tensor '" + t.name + "'";
    if (t.offset % alignment != 0)
      fail(origin, where + " starts at data offset " + std::to_string(t.offset) + ", not a multiple of the alignment " +
                       std::to_string(alignment));
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      fail(origin, where + " (bytes " + std::to_string(t.offset) + "-" + std::to_string(t.offset + t.bytes) +
                       " of the data section) runs past the end of the file's " + std::to_string(data_size) +
                       " data bytes (truncated?)");
  }
  std::sort(tensors.begin(), tensors.end(),
            [](const GgufTensorInfo& a, const GgufTensorInfo& b) { return a.offset < b.offset; });
  const GgufTensorInfo* last = nullptr;
  for (const auto& t : tensors) {
    if (t.bytes == 0) continue;
    if (last != nullptr && t.offset < last->offset + last->bytes)
      fail(origin, "tensors '" + last->name + "' and '" + t.name + "' overlap in the data section");
    if (last == nullptr || t.offset + t.bytes > last->offset + last->bytes) last = &t;
  }
}

}  // namespace

size_t GgufValue::size() const { return ints.size() + floats.size() + strings.size(); }

const std::string& GgufValue::as_string(const std::string& key) const {
  if (is_array || strings.size() != 1) throw GgufError("GGUF metadata '" + key + "' is not a string");
  return strings[0];
}

int64_t GgufValue::as_int(const std::string& key) const {
  if (is_array || ints.size() != 1) throw GgufError("GGUF metadata '" + key + "' is not an integer");
  return ints[0];
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

GgufHeader parse_gguf_header(const uint8_t* bytes, uint64_t size, const std::string& origin) {
  if (size < 4 || std::memcmp(bytes, "GGUF", 4) != 0) fail(origin, "it does not start with the magic \"GGUF\"");
  Cursor c(bytes + 0, size, origin);
  c.read<uint32_t>("the magic");
  GgufHeader h;
  h.version = c.read<uint32_t>("the version");
  if (h.version != 2 && h.version != 3)
    fail(origin, "version " + std::to_string(h.version) + " is not supported (Vidgraph reads GGUF versions 2 and 3)");
  const auto n_tensors = c.read<uint64_t>("the tensor count");
  const auto n_kv = c.read<uint64_t>("the metadata count");
  // A key-value pair takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 4 + 8.
  if (n_kv > c.left() / 13)
    fail(origin, "the metadata count " + std::to_string(n_kv) + " cannot fit in the " + std::to_string(c.left()) +
                     " bytes left (truncated or damaged file?)");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("metadata key " + std::to_string(i));
    GgufValue v = read_value(c, key, origin);
    if (!h.metadata.emplace(key, std::move(v)).second) fail(origin, "metadata key '" + key + "' appears twice");
  }
  if (n_tensors > c.left() / 24)
    fail(origin, "the tensor count " + std::to_string(n_tensors) + " cannot fit in the " + std::to_string(c.left()) +
                     " bytes left (truncated or damaged file?)");
  h.alignment = read_alignment(h, origin);
  std::map<std::string, size_t> seen;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t = read_tensor_info(c, i, origin);
    if (!seen.emplace(t.name, i).second) fail(origin, "tensor '" + t.name + "' appears twice");
    apply_orig_shape(t, h, origin);
    h.tensors.push_back(std::move(t));
  }
  h.data_offset = (c.pos() + h.alignment - 1) / h.alignment * h.alignment;
  const uint64_t data_size = size > h.data_offset ? size - h.data_offset : 0;
  check_layout(h.tensors, data_size, h.alignment, origin);
  return h;
}

std::string gguf_unreadable_reason(const GgufTensorInfo& info, const std::string& origin) {
  const GgmlTypeInfo& type = ggml_type_info(info.type);
  if (type.decodable) return {};
  return "tensor '" + info.name + "' of '" + origin + "' uses GGUF type " + type.name +
         ", which Vidgraph does not read (it reads " + ggml_decodable_type_names() +
         "); use a Q4_K_M, Q5_K_M, Q6_K or Q8_0 file";
}

}  // namespace vidgraph::model_io
