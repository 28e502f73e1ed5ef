// GGML block decoders. See gguf_quants.h for the layouts.
#include "models/io/gguf_quants.h"

#include <cstring>
#include <stdexcept>

namespace vidgraph::model_io {
namespace {

constexpr int64_t kQK = 32;   // elements of a Q4/Q5/Q8 block
constexpr int64_t kQKK = 256; // elements of a K-quant super-block

constexpr GgmlTypeInfo kTypes[] = {
    {GgmlType::F32, "F32", 1, 4, true},          {GgmlType::F16, "F16", 1, 2, true},
    {GgmlType::Q4_0, "Q4_0", kQK, 18, true},     {GgmlType::Q4_1, "Q4_1", kQK, 20, true},
    {GgmlType::Q5_0, "Q5_0", kQK, 22, true},     {GgmlType::Q5_1, "Q5_1", kQK, 24, true},
    {GgmlType::Q8_0, "Q8_0", kQK, 34, true},     {GgmlType::Q8_1, "Q8_1", kQK, 36, false},
    {GgmlType::Q2_K, "Q2_K", kQKK, 84, true},    {GgmlType::Q3_K, "Q3_K", kQKK, 110, true},
    {GgmlType::Q4_K, "Q4_K", kQKK, 144, true},   {GgmlType::Q5_K, "Q5_K", kQKK, 176, true},
    {GgmlType::Q6_K, "Q6_K", kQKK, 210, true},   {GgmlType::Q8_K, "Q8_K", kQKK, 292, false},
    {GgmlType::IQ2_XXS, "IQ2_XXS", kQKK, 66, false}, {GgmlType::IQ2_XS, "IQ2_XS", kQKK, 74, false},
    {GgmlType::IQ3_XXS, "IQ3_XXS", kQKK, 98, false}, {GgmlType::IQ1_S, "IQ1_S", kQKK, 50, false},
    {GgmlType::IQ4_NL, "IQ4_NL", kQK, 18, false},    {GgmlType::IQ3_S, "IQ3_S", kQKK, 110, false},
    {GgmlType::IQ2_S, "IQ2_S", kQKK, 82, false},     {GgmlType::IQ4_XS, "IQ4_XS", kQKK, 136, false},
    {GgmlType::I8, "I8", 1, 1, false},           {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},         {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, true},          {GgmlType::IQ1_M, "IQ1_M", kQKK, 56, false},
    {GgmlType::BF16, "BF16", 1, 2, true},        {GgmlType::TQ1_0, "TQ1_0", kQKK, 54, false},
    {GgmlType::TQ2_0, "TQ2_0", kQKK, 66, false}, {GgmlType::MXFP4, "MXFP4", kQK, 17, false},
};

uint16_t u16(const uint8_t* p) { return uint16_t(p[0] | (p[1] << 8)); }
float f16(const uint8_t* p) { return half_to_float(u16(p)); }

void q8_0(const uint8_t* b, float* y) {
  const float d = f16(b);
  for (int i = 0; i < 32; ++i) y[i] = d * float(int8_t(b[2 + i]));
}

// Nibble j of a 32-element block: low nibbles are elements 0-15, high nibbles 16-31.
void q4_0(const uint8_t* b, float* y) {
  const float d = f16(b);
  const uint8_t* qs = b + 2;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float((qs[j] & 0x0F) - 8);
    y[j + 16] = d * float((qs[j] >> 4) - 8);
  }
}

void q4_1(const uint8_t* b, float* y) {
  const float d = f16(b), m = f16(b + 2);
  const uint8_t* qs = b + 4;
  for (int j = 0; j < 16; ++j) {
    y[j] = d * float(qs[j] & 0x0F) + m;
    y[j + 16] = d * float(qs[j] >> 4) + m;
  }
}

// Q5: bit j of the 32-bit high mask is the fifth bit of element j.
void q5(const uint8_t* qh_bytes, const uint8_t* qs, float d, float m, int offset, float* y) {
  uint32_t qh = 0;
  std::memcpy(&qh, qh_bytes, 4);  // little-endian hosts only (as the whole reader)
  for (int j = 0; j < 16; ++j) {
    const int lo = (qs[j] & 0x0F) | int(((qh >> j) & 1u) << 4);
    const int hi = (qs[j] >> 4) | int(((qh >> (j + 16)) & 1u) << 4);
    y[j] = d * float(lo - offset) + m;
    y[j + 16] = d * float(hi - offset) + m;
  }
}

// The 6-bit scale and min of sub-block j (0-7) of a Q4_K / Q5_K super-block.
void scale_min_k4(int j, const uint8_t* s, float& scale, float& min) {
  if (j < 4) {
    scale = float(s[j] & 63);
    min = float(s[j + 4] & 63);
  } else {
    scale = float((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    min = float((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q4_K: 8 sub-blocks of 32; pairs of sub-blocks share 32 bytes (low nibbles first).
void q4_k(const uint8_t* b, float* y) {
  const float d = f16(b), dmin = f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* q = b + 16;
  for (int pair = 0; pair < 4; ++pair, q += 32) {
    float s0, m0, s1, m1;
    scale_min_k4(2 * pair, scales, s0, m0);
    scale_min_k4(2 * pair + 1, scales, s1, m1);
    for (int l = 0; l < 32; ++l) *y++ = d * s0 * float(q[l] & 0x0F) - dmin * m0;
    for (int l = 0; l < 32; ++l) *y++ = d * s1 * float(q[l] >> 4) - dmin * m1;
  }
}

// Q5_K: as Q4_K; bits 2·pair and 2·pair + 1 of qh[l] are the fifth bits of the pair's elements l.
void q5_k(const uint8_t* b, float* y) {
  const float d = f16(b), dmin = f16(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + 48;
  for (int pair = 0; pair < 4; ++pair, q += 32) {
    float s0, m0, s1, m1;
    scale_min_k4(2 * pair, scales, s0, m0);
    scale_min_k4(2 * pair + 1, scales, s1, m1);
    const uint8_t bit0 = uint8_t(1u << (2 * pair)), bit1 = uint8_t(2u << (2 * pair));
    for (int l = 0; l < 32; ++l) *y++ = d * s0 * float((q[l] & 0x0F) + ((qh[l] & bit0) ? 16 : 0)) - dmin * m0;
    for (int l = 0; l < 32; ++l) *y++ = d * s1 * float((q[l] >> 4) + ((qh[l] & bit1) ? 16 : 0)) - dmin * m1;
  }
}

// Q6_K: two halves of 128; in each, ql[l], ql[l+32] hold low nibbles of four 32-runs and qh[l]
// their two high bits; 16 int8 scales, one per 16 elements.
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16(b + 208);
  for (int half = 0; half < 2; ++half, y += 128, ql += 64, qh += 32, sc += 8) {
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      y[l] = d * float(sc[is]) * float(q1);
      y[l + 32] = d * float(sc[is + 2]) * float(q2);
      y[l + 64] = d * float(sc[is + 4]) * float(q3);
      y[l + 96] = d * float(sc[is + 6]) * float(q4);
    }
  }
}

// Q2_K: 16 sub-blocks of 16; scale byte = min (high nibble) | scale (low nibble); each 32-byte run
// of q holds four 2-bit planes.
void q2_k(const uint8_t* b, float* y) {
  const uint8_t* scales = b;
  const uint8_t* q = b + 16;
  const float d = f16(b + 80), dmin = f16(b + 82);
  int is = 0;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part) {
        const uint8_t sc = scales[is++];
        const float dl = d * float(sc & 0x0F), ml = dmin * float(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * float((q[l + 16 * part] >> shift) & 3) - ml;
      }
    }
  }
}

// Q3_K: 16 6-bit scales (offset 32) packed in 12 bytes: low 4 bits in bytes 0-7 (two per byte),
// high 2 bits in bytes 8-11; element value = 2-bit q, minus 4 when its bit of hmask is clear.
void q3_k(const uint8_t* b, float* y) {
  const uint8_t* hmask = b;
  const uint8_t* q = b + 32;
  const uint8_t* packed = b + 96;
  const float d = f16(b + 108);
  int scales[16];
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? (packed[i] & 0x0F) : (packed[i - 8] >> 4);
    const int high = (packed[8 + (i % 4)] >> (2 * (i / 4))) & 3;
    scales[i] = (low | (high << 4)) - 32;
  }
  int is = 0;
  uint8_t bit = 1;
  for (int half = 0; half < 2; ++half, q += 32) {
    for (int shift = 0; shift < 8; shift += 2, bit = uint8_t(bit << 1)) {
      for (int part = 0; part < 2; ++part) {
        const float dl = d * float(scales[is++]);
        for (int l = 0; l < 16; ++l) {
          const int k = l + 16 * part;
          *y++ = dl * float(((q[k] >> shift) & 3) - ((hmask[k] & bit) ? 0 : 4));
        }
      }
    }
  }
}

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const auto& t : kTypes) {
    if (uint32_t(t.type) == id) return t;
  }
  return std::nullopt;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return t;
  }
  throw std::invalid_argument("unknown GGML type id " + std::to_string(uint32_t(type)));
}

std::string ggml_decodable_type_names() {
  std::string out;
  for (const auto& t : kTypes) {
    if (t.decodable) out += (out.empty() ? "" : " ") + std::string(t.name);
  }
  return out;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise the mantissa
    int e = -1;
    do {
      mant <<= 1;
      ++e;
    } while ((mant & 0x400u) == 0);
    bits = sign | (uint32_t(112 - e) << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16_to_float(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void ggml_dequantize(GgmlType type, const uint8_t* src, float* dst, int64_t count) {
  const GgmlTypeInfo& info = ggml_type_info(type);
  if (!info.decodable) throw std::invalid_argument(std::string("GGML type ") + info.name + " is not decoded");
  if (count % info.block != 0)
    throw std::invalid_argument(std::to_string(count) + " elements are not whole " + info.name + " blocks");
  const int64_t blocks = count / info.block;
  for (int64_t i = 0; i < blocks; ++i, src += info.bytes, dst += info.block) {
    switch (type) {
      case GgmlType::F32: std::memcpy(dst, src, 4); break;
      case GgmlType::F16: *dst = f16(src); break;
      case GgmlType::BF16: *dst = bf16_to_float(u16(src)); break;
      case GgmlType::F64: { double v; std::memcpy(&v, src, 8); *dst = float(v); break; }
      case GgmlType::Q8_0: q8_0(src, dst); break;
      case GgmlType::Q4_0: q4_0(src, dst); break;
      case GgmlType::Q4_1: q4_1(src, dst); break;
      case GgmlType::Q5_0: q5(src + 2, src + 6, f16(src), 0.0f, 16, dst); break;
      case GgmlType::Q5_1: q5(src + 4, src + 8, f16(src), f16(src + 2), 0, dst); break;
      case GgmlType::Q2_K: q2_k(src, dst); break;
      case GgmlType::Q3_K: q3_k(src, dst); break;
      case GgmlType::Q4_K: q4_k(src, dst); break;
      case GgmlType::Q5_K: q5_k(src, dst); break;
      case GgmlType::Q6_K: q6_k(src, dst); break;
      default: throw std::invalid_argument(std::string("GGML type ") + info.name + " is not decoded");
    }
  }
}

}  // namespace vidgraph::model_io
