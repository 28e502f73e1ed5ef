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
  // The next n bytes, checked, as a view into the file.
  std::string_view take(uint64_t n, const std::string& what) {
    need(n, what);
    const std::string_view v(reinterpret_cast<const char*>(bytes_ + pos_), size_t(n));
    pos_ += n;
    return v;
  }
  std::string_view string_view(const std::string& what) {
    const auto n = read<uint64_t>(what + " length");
    if (n > kGgufMaxStringBytes)
      fail(origin_, what + " is " + std::to_string(n) + " bytes long, over the 16 MiB limit (damaged file?)");
    return take(n, what);
  }
  std::string string(const std::string& what) { return std::string(string_view(what)); }

 private:
  const uint8_t* bytes_;
  uint64_t size_;
  uint64_t pos_ = 0;
  const std::string& origin_;
};

// Element size in the file for the numeric types (strings have their own length).
uint64_t element_bytes(GgufValueType t) { return t == GgufValueType::String ? 0 : min_element_bytes(t); }

// `n` elements of type `t`, kept compactly (gguf.h) or, when `keep` is false, only checked to lie
// inside the header.
void read_elements(Cursor& c, GgufValue& v, uint64_t n, bool keep, const std::string& what) {
  v.count = n;
  v.loaded = keep;
  if (v.type != GgufValueType::String) {
    const std::string_view raw = c.take(n * element_bytes(v.type), what);  // n is bounded by the bytes left
    if (keep) v.bytes.assign(raw);
    return;
  }
  if (keep) v.ends.reserve(size_t(n));
  for (uint64_t i = 0; i < n; ++i) {
    const std::string_view s = c.string_view(what);
    if (!keep) continue;
    v.text.append(s);
    v.ends.push_back(v.text.size());
  }
}

GgufValueType value_type(Cursor& c, const std::string& origin, const std::string& what) {
  const auto t = c.read<uint32_t>(what);
  if (t > uint32_t(GgufValueType::F64))
    fail(origin, what + " has unknown value type " + std::to_string(t) + " (GGUF defines 0-12)");
  return GgufValueType(t);
}

// Array elements a listing still needs: ComfyUI-GGUF's shapes (read_tensor_info applies them).
bool kept_when_listing(const std::string& key) { return key.rfind("comfy.gguf.orig_shape.", 0) == 0; }

GgufValue read_value(Cursor& c, const std::string& key, GgufRead read, const std::string& origin) {
  const std::string what = "metadata '" + key + "'";
  GgufValue v;
  v.type = value_type(c, origin, what + " type");
  if (v.type != GgufValueType::Array) {
    read_elements(c, v, 1, true, what);
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
  if (n > kGgufMaxArrayElements)
    fail(origin, what + " has " + std::to_string(n) + " elements, over the limit of " +
                     std::to_string(kGgufMaxArrayElements) + " (real tokenizers have about 256,000; damaged file?)");
  read_elements(c, v, n, read == GgufRead::All || kept_when_listing(key), what);
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
  if (!v.is_array || !v.is_int() || v.size() > kGgufMaxDims)
    fail(origin, "metadata '" + it->first + "' is not an array of at most 8 integers");
  const std::vector<int64_t> shape = v.int_list();
  uint64_t numel = 1;
  for (const int64_t d : shape) {
    if (d < 0) fail(origin, "metadata '" + it->first + "' has a negative dimension");
    numel = checked_mul(numel, uint64_t(d), origin, "metadata '" + it->first + "'");
  }
  if (int64_t(numel) != t.numel())
    fail(origin, "metadata '" + it->first + "' gives " + std::to_string(numel) + " elements, the tensor has " +
                     std::to_string(t.numel()));
  t.shape = shape;
}

uint64_t read_alignment(const GgufHeader& h, const std::string& origin) {
  const auto it = h.metadata.find("general.alignment");
  if (it == h.metadata.end()) return 32;
  const GgufValue& v = it->second;
  if (v.is_array || !v.is_int()) fail(origin, "general.alignment is not an integer");
  const int64_t a = v.int_at(0);
  if (a <= 0 || a > (1 << 20) || (a & (a - 1)) != 0)
    fail(origin, "general.alignment is " + std::to_string(a) + ", not a power of two up to 1 MiB");
  return uint64_t(a);
}

// Offsets and sizes checked one by one, then overlaps over the tensors sorted by offset (indices
// sorted, not copies of the infos: the check costs 8 bytes a tensor).
void check_layout(const std::vector<GgufTensorInfo>& tensors, uint64_t data_size, uint64_t alignment,
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
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  const GgufTensorInfo* last = nullptr;
  for (const size_t i : order) {
    const GgufTensorInfo& t = tensors[i];
    if (t.bytes == 0) continue;
    if (last != nullptr && t.offset < last->offset + last->bytes)
      fail(origin, "tensors '" + last->name + "' and '" + t.name + "' overlap in the data section");
    if (last == nullptr || t.offset + t.bytes > last->offset + last->bytes) last = &t;
  }
}

// Tensor names must be unique; found by sorting indices rather than a map of copied names.
void check_unique_names(const std::vector<GgufTensorInfo>& tensors, const std::string& origin) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (tensors[order[i]].name == tensors[order[i - 1]].name)
      fail(origin, "tensor '" + tensors[order[i]].name + "' appears twice");
  }
}

// The header's counts against the file's bytes and the caps (gguf.h) before anything is reserved.
void check_count(uint64_t n, uint64_t min_bytes, uint64_t cap, const Cursor& c, const std::string& what,
                 const std::string& origin) {
  if (n > c.left() / min_bytes)
    fail(origin, "the " + what + " count " + std::to_string(n) + " cannot fit in the " + std::to_string(c.left()) +
                     " bytes left (truncated or damaged file?)");
  if (n > cap)
    fail(origin, "the " + what + " count " + std::to_string(n) + " is over Vidgraph's limit of " +
                     std::to_string(cap) + " (real model files have a few thousand at most; damaged file?)");
}

// Element i of a numeric value, widened as the element type says.
template <typename T>
T element(const GgufValue& v, size_t i) {
  T out;
  std::memcpy(&out, v.bytes.data() + i * sizeof(T), sizeof(T));
  return out;
}

void check_access(const GgufValue& v, size_t i, bool type_ok, const char* wanted) {
  if (!type_ok) throw GgufError(std::string("GGUF metadata value is not ") + wanted);
  if (!v.loaded) throw GgufError("GGUF metadata array was skipped when the header was listed (GgufRead::Listing)");
  if (i >= v.count)
    throw GgufError("GGUF metadata element " + std::to_string(i) + " is out of range (" + std::to_string(v.count) +
                    " elements)");
}

}  // namespace

bool GgufValue::is_int() const {
  return type != GgufValueType::String && type != GgufValueType::F32 && type != GgufValueType::F64;
}
bool GgufValue::is_float() const { return type == GgufValueType::F32 || type == GgufValueType::F64; }
bool GgufValue::is_string() const { return type == GgufValueType::String; }

int64_t GgufValue::int_at(size_t i) const {
  check_access(*this, i, is_int(), "an integer");
  switch (type) {
    case GgufValueType::U8: return element<uint8_t>(*this, i);
    case GgufValueType::I8: return element<int8_t>(*this, i);
    case GgufValueType::U16: return element<uint16_t>(*this, i);
    case GgufValueType::I16: return element<int16_t>(*this, i);
    case GgufValueType::U32: return element<uint32_t>(*this, i);
    case GgufValueType::I32: return element<int32_t>(*this, i);
    case GgufValueType::U64: return int64_t(element<uint64_t>(*this, i));
    case GgufValueType::I64: return element<int64_t>(*this, i);
    case GgufValueType::Bool: return element<uint8_t>(*this, i) != 0;
    default: return 0;
  }
}

double GgufValue::float_at(size_t i) const {
  check_access(*this, i, is_float(), "a float");
  return type == GgufValueType::F32 ? element<float>(*this, i) : element<double>(*this, i);
}

std::string_view GgufValue::string_at(size_t i) const {
  check_access(*this, i, is_string(), "a string");
  const uint64_t begin = i == 0 ? 0 : ends[i - 1];
  return std::string_view(text).substr(size_t(begin), size_t(ends[i] - begin));
}

std::vector<int64_t> GgufValue::int_list() const {
  std::vector<int64_t> out(size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = int_at(i);
  return out;
}

std::vector<double> GgufValue::float_list() const {
  std::vector<double> out(size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = float_at(i);
  return out;
}

std::vector<std::string> GgufValue::string_list() const {
  std::vector<std::string> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) out.emplace_back(string_at(i));
  return out;
}

std::string GgufValue::as_string(const std::string& key) const {
  if (is_array || !is_string() || count != 1) throw GgufError("GGUF metadata '" + key + "' is not a string");
  return std::string(string_at(0));
}

int64_t GgufValue::as_int(const std::string& key) const {
  if (is_array || !is_int() || count != 1) throw GgufError("GGUF metadata '" + key + "' is not an integer");
  return int_at(0);
}

int64_t GgufTensorInfo::numel() const {
  int64_t n = 1;
  for (const int64_t d : dims) n *= d;
  return n;
}

GgufHeader parse_gguf_header(const uint8_t* bytes, uint64_t size, const std::string& origin, GgufRead read) {
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
  check_count(n_kv, 13, kGgufMaxMetadataKeys, c, "metadata", origin);
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.string("metadata key " + std::to_string(i));
    GgufValue v = read_value(c, key, read, origin);
    if (!h.metadata.emplace(key, std::move(v)).second) fail(origin, "metadata key '" + key + "' appears twice");
  }
  check_count(n_tensors, 24, kGgufMaxTensors, c, "tensor", origin);
  h.alignment = read_alignment(h, origin);
  h.tensors.reserve(size_t(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t = read_tensor_info(c, i, origin);
    apply_orig_shape(t, h, origin);
    h.tensors.push_back(std::move(t));
  }
  check_unique_names(h.tensors, origin);
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
