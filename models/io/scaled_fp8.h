// ComfyUI's "scaled fp8" weights in a safetensors file (comfy/ops.py, comfy/utils.py
// convert_old_quants): a linear weight `<layer>.weight` stored as F8_E4M3 (or F8_E5M2) with an fp32
// per-tensor scale `<layer>.scale_weight` (newer files: `<layer>.weight_scale`); the real weight is
// fp8 × scale. Markers and extras that are not model tensors: `scaled_fp8` (its dtype names the fp8
// type), `<layer>.scale_input` / `input_scale` (activation scales, unused when computing in
// bf16/fp32), `<layer>.comfy_quant` (U8 JSON {"format": ...}) and the `_quantization_metadata`
// metadata entry ({"layers": {name: {"format": ...}}}).
// Contract: a file is "scaled" when it has any of these; then every F8 tensor must have exactly one
// scale, each scale is a single float value, and every quantisation format named is an fp8 one.
// An F8 file with none of them is plain fp8 (scale 1). Violations throw SafetensorsError naming the
// file and the tensor. Dequantisation is done in fp32 and rounded once to the requested dtype.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "models/io/fp8.h"
#include "models/io/safetensors.h"

namespace vidgraph::model_io {

struct ScaledFp8Layout {
  bool scaled = false;                          // the file follows the convention above
  std::map<std::string, std::string> scale_of;  // weight name -> its scale tensor's name
  std::set<std::string> auxiliary;              // scales, markers, input scales, comfy_quant: not weights
};

// Reads only the header (and the small comfy_quant tensors); validates as above.
ScaledFp8Layout scaled_fp8_layout(const SafetensorsFile& file);

// The tensor `name` (not an auxiliary one), dequantised when it has a scale, on `device` in `dtype`
// (fp32 for F8 tensors when none is given; other tensors keep theirs).
at::Tensor load_dequantized(const SafetensorsFile& file, const ScaledFp8Layout& layout, const std::string& name,
                            c10::Device device, std::optional<at::ScalarType> dtype);

// Every non-auxiliary tensor of `file` except those in `skip`, dequantised, in file order.
NamedTensors load_safetensors_weights(const SafetensorsFile& file, c10::Device device,
                                      std::optional<at::ScalarType> dtype, const std::set<std::string>& skip = {});

// Writer of the same convention (tests, repacks). Each tensor named in `quantise` (a float
// `<layer>.weight`) is stored as fp8 codes of W / s with s = max|W| / the format's max (1 for an
// all-zero W) and s as an F32 scalar; the others are written as they are.
// ScaleWeight: `<layer>.scale_weight` + the `scaled_fp8` marker (shape [0], the fp8 dtype), as the
// ComfyUI files of the Wan2.2 template; WeightScale: `<layer>.weight_scale` + `<layer>.comfy_quant`
// (U8 JSON {"format": "float8_e4m3fn" | "float8_e5m2"}), as newer ComfyUI writes them.
enum class Fp8ScaleNaming { ScaleWeight, WeightScale };
void save_scaled_fp8_safetensors(const std::string& path, const NamedTensors& tensors,
                                 const std::set<std::string>& quantise, Fp8Format format = Fp8Format::E4M3FN,
                                 Fp8ScaleNaming naming = Fp8ScaleNaming::ScaleWeight,
                                 const std::map<std::string, std::string>& metadata = {});

}  // namespace vidgraph::model_io
