// ComfyUI scaled-fp8 convention. See scaled_fp8.h.
#include "models/io/scaled_fp8.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/max.h>
#include <ATen/ops/mul.h>

#include <nlohmann/json.hpp>

#include "models/io/fp8.h"

namespace vidgraph::model_io {
namespace {

[[noreturn]] void fail(const SafetensorsFile& file, const std::string& what) {
  throw SafetensorsError("scaled-fp8 safetensors file '" + file.path() + "': " + what);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

bool is_float_dtype(const std::string& dtype) {
  return dtype == "F32" || dtype == "F16" || dtype == "BF16" || dtype == "F64";
}

void check_format(const SafetensorsFile& file, const std::string& where, const nlohmann::json& entry) {
  if (!entry.is_object() || !entry.contains("format") || !entry["format"].is_string())
    fail(file, where + " has no \"format\" string");
  const std::string format = entry["format"].get<std::string>();
  if (format.rfind("float8_e4m3fn", 0) != 0 && format.rfind("float8_e5m2", 0) != 0)
    fail(file, where + " uses the quantisation format '" + format +
                   "', which Vidgraph does not read (supported: float8_e4m3fn, float8_e5m2)");
}

}  // namespace

ScaledFp8Layout scaled_fp8_layout(const SafetensorsFile& file) {
  ScaledFp8Layout layout;
  const std::vector<std::string> names = file.names();
  for (const std::string& name : names) {
    const SafetensorsEntry& e = file.entry(name);
    if (name == "scaled_fp8" || ends_with(name, ".scaled_fp8")) {
      layout.scaled = true;
      layout.auxiliary.insert(name);
    } else if (ends_with(name, ".scale_input") || ends_with(name, ".input_scale")) {
      layout.auxiliary.insert(name);
    } else if (ends_with(name, ".comfy_quant")) {
      layout.scaled = true;
      layout.auxiliary.insert(name);
      if (e.dtype != "U8") fail(file, "tensor '" + name + "' is " + e.dtype + ", expected U8 (JSON bytes)");
      const at::Tensor bytes = file.load(name);
      const char* text = static_cast<const char*>(bytes.data_ptr());
      const auto parsed = nlohmann::json::parse(text, text + bytes.numel(), nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) fail(file, "tensor '" + name + "' is not JSON");
      check_format(file, "tensor '" + name + "'", parsed);
    }
    for (const std::string suffix : {".scale_weight", ".weight_scale"}) {
      if (!ends_with(name, suffix)) continue;
      layout.scaled = true;
      layout.auxiliary.insert(name);
      const std::string weight = name.substr(0, name.size() - suffix.size()) + ".weight";
      if (!file.contains(weight)) fail(file, "scale tensor '" + name + "' has no weight '" + weight + "'");
      if (!is_float_dtype(e.dtype)) fail(file, "scale tensor '" + name + "' is " + e.dtype + ", expected F32");
      int64_t numel = 1;
      for (int64_t d : e.shape) numel *= d;
      if (numel != 1)
        fail(file, "scale tensor '" + name + "' has shape " + shape_text(e.shape) +
                       ", expected a single value ([] or [1]) for '" + weight + "'");
      const std::string& weight_dtype = file.entry(weight).dtype;
      if (!fp8_format_of(weight_dtype) && !is_float_dtype(weight_dtype))
        fail(file, "tensor '" + weight + "' is " + weight_dtype + " but has the scale '" + name + "'");
      if (!layout.scale_of.emplace(weight, name).second)
        fail(file, "tensor '" + weight + "' has two scales, '" + layout.scale_of[weight] + "' and '" + name + "'");
    }
  }
  const auto meta = file.metadata().find("_quantization_metadata");
  if (meta != file.metadata().end()) {
    layout.scaled = true;
    const auto parsed = nlohmann::json::parse(meta->second, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_object())
      fail(file, "metadata '_quantization_metadata' is not a JSON object");
    if (parsed.contains("layers") && parsed["layers"].is_object()) {
      for (auto it = parsed["layers"].begin(); it != parsed["layers"].end(); ++it)
        check_format(file, "layer '" + it.key() + "' in metadata '_quantization_metadata'", it.value());
    }
  }
  if (layout.scaled) {
    for (const std::string& name : names) {
      const SafetensorsEntry& e = file.entry(name);
      if (!fp8_format_of(e.dtype) || layout.auxiliary.count(name) || layout.scale_of.count(name)) continue;
      const std::string base = ends_with(name, ".weight") ? name.substr(0, name.size() - 7) : name;
      fail(file, "fp8 tensor '" + name + "' (" + e.dtype + ") has no scale '" + base + ".scale_weight' or '" + base +
                     ".weight_scale'; the file is truncated or inconsistent");
    }
  }
  return layout;
}

at::Tensor load_dequantized(const SafetensorsFile& file, const ScaledFp8Layout& layout, const std::string& name,
                            c10::Device device, std::optional<at::ScalarType> dtype) {
  const auto scale = layout.scale_of.find(name);
  if (scale == layout.scale_of.end()) return file.load(name, device, dtype);
  const at::Tensor weight = file.load(name, c10::Device(c10::kCPU), at::kFloat);  // exact fp8 values
  const at::Tensor s = file.load(scale->second, c10::Device(c10::kCPU), at::kFloat).reshape({});
  return at::mul(weight, s).to(device, dtype.value_or(at::kFloat));
}

NamedTensors load_safetensors_weights(const SafetensorsFile& file, c10::Device device,
                                      std::optional<at::ScalarType> dtype, const std::set<std::string>& skip) {
  const ScaledFp8Layout layout = scaled_fp8_layout(file);
  NamedTensors out;
  for (const std::string& name : file.names()) {
    if (layout.auxiliary.count(name) || skip.count(name)) continue;
    out.emplace_back(name, load_dequantized(file, layout, name, device, dtype));
  }
  return out;
}

void save_scaled_fp8_safetensors(const std::string& path, const NamedTensors& tensors,
                                 const std::set<std::string>& quantise, Fp8Format format, Fp8ScaleNaming naming,
                                 const std::map<std::string, std::string>& metadata) {
  const double fp8_max = format == Fp8Format::E4M3FN ? 448.0 : 57344.0;
  const std::string dtype = fp8_dtype_name(format);
  const std::string format_name = format == Fp8Format::E4M3FN ? "float8_e4m3fn" : "float8_e5m2";
  NamedTensors out;
  std::map<std::string, std::string> dtypes;
  size_t found = 0;
  for (const auto& [name, tensor] : tensors) {
    if (!quantise.count(name)) {
      out.emplace_back(name, tensor);
      continue;
    }
    ++found;
    if (!ends_with(name, ".weight") || !tensor.is_floating_point())
      throw SafetensorsError("cannot write '" + path + "': only float '<layer>.weight' tensors are quantised, not '" +
                             name + "'");
    const at::Tensor w = tensor.detach().to(c10::Device(c10::kCPU), at::kFloat);
    const double peak = w.abs().max().item<double>();
    const float scale = peak > 0 ? float(peak / fp8_max) : 1.0f;
    const std::string base = name.substr(0, name.size() - 7);
    out.emplace_back(name, fp8_encode(at::div(w, double(scale)), format));
    dtypes[name] = dtype;
    const at::Tensor s = at::full({}, scale, at::TensorOptions().dtype(at::kFloat));
    if (naming == Fp8ScaleNaming::ScaleWeight) {
      out.emplace_back(base + ".scale_weight", s);
    } else {
      out.emplace_back(base + ".weight_scale", s);
      const std::string json = "{\"format\": \"" + format_name + "\"}";
      at::Tensor bytes = at::empty({int64_t(json.size())}, at::TensorOptions().dtype(at::kByte));
      std::copy(json.begin(), json.end(), static_cast<char*>(bytes.data_ptr()));
      out.emplace_back(base + ".comfy_quant", bytes);
    }
  }
  if (found != quantise.size())
    throw SafetensorsError("cannot write '" + path + "': a tensor named to be quantised is not among the tensors");
  if (naming == Fp8ScaleNaming::ScaleWeight) {
    out.emplace_back("scaled_fp8", at::empty({0}, at::TensorOptions().dtype(at::kByte)));
    dtypes["scaled_fp8"] = dtype;
  }
  save_safetensors(path, out, metadata, dtypes);
}

}  // namespace vidgraph::model_io
