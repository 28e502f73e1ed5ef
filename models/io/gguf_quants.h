// GGML tensor types as GGUF files store them (ggml's `ggml_type` ids) and the CPU decoding of the
// ones Vidgraph reads to fp32. Block layouts follow ggml's definitions: a row of `block` elements
// is stored in `bytes` bytes, little-endian, fp16 scales; the first (fastest) GGUF dimension is cut
// into blocks.
//
//   F32, F16, BF16, F64          plain floats, one element per "block"
//   Q8_0   32 el., 34 B: fp16 d, int8 q[32]                        x = d·q
//   Q4_0   32 el., 18 B: fp16 d, 16 B of nibbles (low: 0-15)        x = d·(q − 8)
//   Q4_1   32 el., 20 B: fp16 d, fp16 m, nibbles                    x = d·q + m
//   Q5_0   32 el., 22 B: fp16 d, 32 high bits, nibbles              x = d·(q − 16)
//   Q5_1   32 el., 24 B: fp16 d, fp16 m, 32 high bits, nibbles      x = d·q + m
//   Q2_K  256 el., 84 B: 16 4-bit scale/min pairs, 2-bit q, fp16 d, dmin
//   Q3_K  256 el., 110 B: high-bit mask, 2-bit q, 16 6-bit scales, fp16 d
//   Q4_K  256 el., 144 B: fp16 d, dmin, 8 6-bit scale/min pairs, 4-bit q
//   Q5_K  256 el., 176 B: as Q4_K plus one high bit per element
//   Q6_K  256 el., 210 B: 4-bit low, 2-bit high, 16 int8 scales, fp16 d   x = d·s·(q − 32)
// Other ggml types (IQ*, TQ*, Q8_1, Q8_K, integer types) are known by size, so a file holding them
// still opens and names them, but they are not decoded.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace vidgraph::model_io {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22, IQ4_XS = 23,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct GgmlTypeInfo {
  GgmlType type;
  const char* name;   // "Q4_K"
  int64_t block;      // elements per block
  int64_t bytes;      // bytes per block
  bool decodable;     // ggml_dequantize reads it
};

// The type with GGUF id `id`, or nullopt for an id ggml does not define.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
const GgmlTypeInfo& ggml_type_info(GgmlType type);
// "F32 F16 BF16 F64 Q8_0 ...": the decodable types, for error messages.
std::string ggml_decodable_type_names();

// Decodes `count` elements (a multiple of the type's block) stored at `src` into `dst` (fp32).
// Throws std::invalid_argument for a type that is not decodable or a count off the block size.
void ggml_dequantize(GgmlType type, const uint8_t* src, float* dst, int64_t count);

// IEEE half and bfloat16 bit patterns to float (exact).
float half_to_float(uint16_t bits);
float bf16_to_float(uint16_t bits);

}  // namespace vidgraph::model_io
