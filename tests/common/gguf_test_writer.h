// Test helper: writes GGUF files byte by byte from the format's definition (ggml docs/gguf.md), so
// the reader is tested against files it did not write itself. Header-only.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/round.h>
#include <ATen/ops/scalar_tensor.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace vidgraph::test {

// GGUF value type ids.
enum GgufKv : uint32_t { kU8 = 0, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };
// ggml tensor type ids.
enum GgmlId : uint32_t {
  kTF32 = 0, kTF16 = 1, kTQ4_0 = 2, kTQ4_1 = 3, kTQ5_0 = 6, kTQ5_1 = 7, kTQ8_0 = 8, kTQ2_K = 10, kTQ3_K = 11,
  kTQ4_K = 12, kTQ5_K = 13, kTQ6_K = 14, kTIQ4_XS = 23, kTBF16 = 30,
};

template <typename T>
std::string le(T v) {
  std::string s(sizeof(T), '\0');
  std::memcpy(s.data(), &v, sizeof(T));
  return s;
}
inline std::string gguf_str(const std::string& s) { return le<uint64_t>(s.size()) + s; }

struct GgufTestTensor {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order (fastest first)
  uint32_t type = kTF32;
  std::string data;
  int64_t offset = -1;  // data offset; -1 = next aligned place
};

struct GgufTestWriter {
  uint32_t version = 3;
  uint64_t alignment = 32;  // used for placement; add "general.alignment" yourself to change it
  uint64_t n_kv = 0;
  std::string kv;
  std::vector<GgufTestTensor> tensors;

  void raw_kv(const std::string& key, uint32_t type, const std::string& value) {
    kv += gguf_str(key) + le<uint32_t>(type) + value;
    ++n_kv;
  }
  void string_kv(const std::string& key, const std::string& value) { raw_kv(key, kString, gguf_str(value)); }
  void u32_kv(const std::string& key, uint32_t value) { raw_kv(key, kU32, le(value)); }
  void i32_array_kv(const std::string& key, const std::vector<int32_t>& values) {
    std::string body = le<uint32_t>(kI32) + le<uint64_t>(values.size());
    for (int32_t v : values) body += le(v);
    raw_kv(key, kArray, body);
  }
  void bool_kv(const std::string& key, bool value) { raw_kv(key, kBool, std::string(1, value ? '\1' : '\0')); }
  void f32_array_kv(const std::string& key, const std::vector<float>& values) {
    std::string body = le<uint32_t>(kF32) + le<uint64_t>(values.size());
    for (float v : values) body += le(v);
    raw_kv(key, kArray, body);
  }
  void u8_array_kv(const std::string& key, const std::string& bytes) {
    raw_kv(key, kArray, le<uint32_t>(kU8) + le<uint64_t>(bytes.size()) + bytes);
  }
  void string_array_kv(const std::string& key, const std::vector<std::string>& values) {
    std::string body = le<uint32_t>(kString) + le<uint64_t>(values.size());
    for (const std::string& v : values) body += gguf_str(v);
    raw_kv(key, kArray, body);
  }
  void tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, std::string data) {
    tensors.push_back({name, std::move(dims), type, std::move(data)});
  }

  std::string bytes() const {
    std::string head = "GGUF" + le<uint32_t>(version) + le<uint64_t>(tensors.size()) + le<uint64_t>(n_kv) + kv;
    std::string data;
    std::string infos;
    for (const auto& t : tensors) {
      uint64_t offset = t.offset >= 0 ? uint64_t(t.offset) : (data.size() + alignment - 1) / alignment * alignment;
      if (t.offset < 0) {
        data.resize(offset, '\0');
        data += t.data;
      }
      infos += gguf_str(t.name) + le<uint32_t>(uint32_t(t.dims.size()));
      for (uint64_t d : t.dims) infos += le(d);
      infos += le<uint32_t>(t.type) + le<uint64_t>(offset);
    }
    std::string out = head + infos;
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    return out + data;
  }
};

inline uint16_t half_bits(float f) {
  const at::Tensor t = at::scalar_tensor(f, at::kFloat).to(at::kHalf);
  uint16_t b;
  std::memcpy(&b, t.data_ptr(), 2);
  return b;
}

// The raw bytes of a contiguous CPU tensor.
inline std::string tensor_bytes(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), size_t(c.numel() * c.element_size()));
}

// Q8_0 quantisation as ggml's reference quantiser does it: per 32 elements d = max|x| / 127,
// q = round(x / d). `t` is float, its last dim a multiple of 32.
inline std::string encode_q8_0(const at::Tensor& t) {
  const at::Tensor x = t.to(at::kFloat).contiguous().reshape({-1, 32});
  std::string out;
  for (int64_t b = 0; b < x.size(0); ++b) {
    const float* v = x[b].data_ptr<float>();
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[i]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    out += le(half_bits(d));
    for (int i = 0; i < 32; ++i) out += char(int8_t(std::lround(v[i] * id)));
  }
  return out;
}

// `t` as a GGUF tensor of `type` (F32, F16, BF16 or Q8_0), dims reversed to ggml order.
inline void add_torch_tensor(GgufTestWriter& w, const std::string& name, const at::Tensor& t, uint32_t type) {
  std::vector<uint64_t> dims(t.sizes().rbegin(), t.sizes().rend());
  std::string data;
  if (type == kTF32) data = tensor_bytes(t.to(at::kFloat));
  if (type == kTF16) data = tensor_bytes(t.to(at::kHalf));
  if (type == kTBF16) data = tensor_bytes(t.to(at::kBFloat16));
  if (type == kTQ8_0) data = encode_q8_0(t);
  w.tensor(name, dims, type, data);
}

}  // namespace vidgraph::test
