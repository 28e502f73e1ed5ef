// fp8 decode tables and encoder. See fp8.h.
#include "models/io/fp8.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/index_select.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace vidgraph::model_io {
namespace {

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Normal values are built as fp32 bit patterns (exponent re-biased, mantissa shifted up);
// subnormals as m · 2^(1 - bias - mantissa_bits).
std::array<float, 256> build_table(int exponent_bits, int mantissa_bits, bool ieee_specials) {
  std::array<float, 256> t{};
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const uint32_t max_exp = (1u << exponent_bits) - 1;
  const uint32_t max_man = (1u << mantissa_bits) - 1;
  for (uint32_t code = 0; code < 256; ++code) {
    const uint32_t sign = code >> 7;
    const uint32_t exp = (code >> mantissa_bits) & max_exp;
    const uint32_t man = code & max_man;
    float v;
    if (ieee_specials && exp == max_exp) {
      v = man == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
    } else if (!ieee_specials && exp == max_exp && man == max_man) {
      v = std::numeric_limits<float>::quiet_NaN();
    } else if (exp == 0) {
      v = std::ldexp(float(man), 1 - bias - mantissa_bits);
    } else {
      v = from_bits(((exp - bias + 127) << 23) | (man << (23 - mantissa_bits)));
    }
    t[code] = sign ? -v : v;
  }
  return t;
}

}  // namespace

std::optional<Fp8Format> fp8_format_of(const std::string& dtype) {
  if (dtype == "F8_E4M3") return Fp8Format::E4M3FN;
  if (dtype == "F8_E5M2") return Fp8Format::E5M2;
  return std::nullopt;
}

const char* fp8_dtype_name(Fp8Format format) { return format == Fp8Format::E4M3FN ? "F8_E4M3" : "F8_E5M2"; }

const std::array<float, 256>& fp8_table(Fp8Format format) {
  static const std::array<float, 256> e4m3 = build_table(4, 3, /*ieee_specials=*/false);
  static const std::array<float, 256> e5m2 = build_table(5, 2, /*ieee_specials=*/true);
  return format == Fp8Format::E4M3FN ? e4m3 : e5m2;
}

uint8_t fp8_from_float(float value, Fp8Format format) {
  const std::array<float, 256>& t = fp8_table(format);
  if (std::isnan(value)) return 0x7f;  // S.1111.111 is NaN in both formats
  if (format == Fp8Format::E5M2 && std::isinf(value)) return value > 0 ? 0x7c : 0xfc;
  // The nearest finite code by search over the non-negative codes (saturating), ties to the even code.
  const float mag = std::fabs(value);
  int best = 0;
  for (int code = 1; code < 128; ++code) {
    if (!std::isfinite(t[code])) continue;
    const float d = std::fabs(t[code] - mag), bd = std::fabs(t[best] - mag);
    if (d < bd || (d == bd && (code & 1) == 0)) best = code;
  }
  return uint8_t(best | (std::signbit(value) ? 0x80 : 0));
}

at::Tensor fp8_decode(const uint8_t* codes, const std::vector<int64_t>& shape, Fp8Format format) {
  at::Tensor out = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
  const std::array<float, 256>& t = fp8_table(format);
  float* dst = out.data_ptr<float>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) dst[i] = t[codes[i]];
  return out;
}

at::Tensor fp8_encode(const at::Tensor& values, Fp8Format format) {
  const at::Tensor src = values.detach().to(c10::Device(c10::kCPU), at::kFloat).contiguous();
  at::Tensor out = at::empty(src.sizes(), at::TensorOptions().dtype(at::kByte));
  const float* s = src.data_ptr<float>();
  uint8_t* d = out.data_ptr<uint8_t>();
  for (int64_t i = 0; i < src.numel(); ++i) d[i] = fp8_from_float(s[i], format);
  return out;
}

at::Tensor fp8_value_table(Fp8Format format, float scale, at::ScalarType dtype, c10::Device device) {
  std::array<float, 256> values = fp8_table(format);
  for (float& v : values) v *= scale;
  const at::Tensor table = at::from_blob(values.data(), {256}, at::TensorOptions().dtype(at::kFloat));
  return table.to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
}

at::Tensor fp8_lookup(const at::Tensor& codes, const at::Tensor& table) {
  // index_select takes int32 indices: 4 bytes per weight in flight for one layer, not 8.
  // (Codes in host memory, as a block swap's offloaded blocks keep them, look up on the host.)
  const at::Tensor t = table.device() == codes.device() ? table : table.to(codes.device());
  return t.index_select(0, codes.reshape({-1}).to(at::kInt)).view(codes.sizes());
}

}  // namespace vidgraph::model_io
