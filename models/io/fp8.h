// fp8 codecs for safetensors' `F8_E4M3` and `F8_E5M2` dtypes, in our own code: LibTorch 1.13 has no
// float8 type, and this must build against LibTorch 2.x unchanged, so no at::kFloat8_* here.
//   E4M3FN (`F8_E4M3`, torch.float8_e4m3fn): 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; no
//     infinities; S.1111.111 is NaN; max ±448; subnormals m/8 · 2^-6.
//   E5M2 (`F8_E5M2`, torch.float8_e5m2): 1 sign, 5 exponent bits (bias 15), 2 mantissa bits; IEEE-like:
//     exponent 31 is ±inf (m = 0) or NaN; max ±57344; subnormals m/4 · 2^-14.
// Decoding is a 256-entry table per format; encoding (for writers and tests) rounds to nearest, ties to
// even, saturates to the largest finite value and keeps NaN.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace vidgraph::model_io {

enum class Fp8Format { E4M3FN, E5M2 };

// The format of a safetensors dtype string ("F8_E4M3", "F8_E5M2"), or nullopt for any other dtype.
std::optional<Fp8Format> fp8_format_of(const std::string& safetensors_dtype);
const char* fp8_dtype_name(Fp8Format format);

// Code -> value, all 256 codes.
const std::array<float, 256>& fp8_table(Fp8Format format);
inline float fp8_to_float(uint8_t code, Fp8Format format) { return fp8_table(format)[code]; }
uint8_t fp8_from_float(float value, Fp8Format format);

// A new contiguous fp32 CPU tensor of `shape` from `numel(shape)` codes at `codes`.
at::Tensor fp8_decode(const uint8_t* codes, const std::vector<int64_t>& shape, Fp8Format format);
// U8 codes (same shape, CPU) of a float tensor, for writing F8 safetensors.
at::Tensor fp8_encode(const at::Tensor& values, Fp8Format format);

// Weights kept as fp8 codes (on any device) are decoded by a lookup: the 256 values of `format`
// times `scale`, computed in fp32 and rounded once to `dtype` (as a dequantisation at load rounds),
// on `device`; fp8_lookup(codes, table) is then table[codes], in the table's dtype and device.
at::Tensor fp8_value_table(Fp8Format format, float scale, at::ScalarType dtype, c10::Device device);
at::Tensor fp8_lookup(const at::Tensor& codes, const at::Tensor& table);

}  // namespace vidgraph::model_io
