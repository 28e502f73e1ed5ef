// TensorFile over the safetensors and GGUF readers. See tensor_file.h.
#include "models/io/tensor_file.h"

#include <atomic>

#include "models/io/file_kind.h"
#include "models/io/gguf.h"
#include "models/io/scaled_fp8.h"

namespace vidgraph::model_io {

namespace {

struct Contents {
  std::string path;
  std::optional<SafetensorsFile> st;
  ScaledFp8Layout fp8;
  std::optional<GgufFile> gguf;
  std::vector<TensorFileEntry> entries;
  std::map<std::string, std::string> metadata;
};

void list_safetensors(Contents& f) {
  f.fp8 = scaled_fp8_layout(*f.st);  // validates scales and markers
  for (const std::string& name : f.st->names()) {
    if (f.fp8.auxiliary.count(name)) continue;  // applied to their weights at load
    const SafetensorsEntry& e = f.st->entry(name);
    const bool is_float = e.dtype == "F32" || e.dtype == "F16" || e.dtype == "BF16" || e.dtype == "F64" ||
                          fp8_format_of(e.dtype).has_value();
    f.entries.push_back({name, e.shape, e.dtype, is_float, ""});
  }
  f.metadata = f.st->metadata();
}

void list_gguf(Contents& f) {
  for (const GgufTensorInfo& t : f.gguf->tensors()) {
    const GgmlTypeInfo& type = ggml_type_info(t.type);
    const std::string why = gguf_unreadable_reason(t, f.path);
    f.entries.push_back({t.name, t.shape, type.name, why.empty(), why});
  }
  for (const auto& [key, value] : f.gguf->header().metadata) {
    if (!value.is_array && value.is_string()) f.metadata[key] = std::string(value.string_at(0));
  }
}

}  // namespace

struct TensorFile::Impl : Contents {};

namespace {
std::atomic<int64_t> g_header_reads{0};
}  // namespace

int64_t TensorFile::header_reads() { return g_header_reads.load(); }

TensorFile TensorFile::open(const std::string& path) {
  ++g_header_reads;
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  if (sniff_file_kind(read_file_head(path)) == FileKind::Gguf) {
    impl->gguf.emplace(GgufFile::open(path));
    list_gguf(*impl);
  } else {
    impl->st.emplace(SafetensorsFile::open(path));  // names any other kind of file
    list_safetensors(*impl);
  }
  return TensorFile(std::move(impl));
}

TensorFile::TensorFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TensorFile::TensorFile(TensorFile&&) noexcept = default;
TensorFile& TensorFile::operator=(TensorFile&&) noexcept = default;
TensorFile::~TensorFile() = default;

const std::string& TensorFile::path() const { return impl_->path; }
bool TensorFile::is_gguf() const { return impl_->gguf.has_value(); }
const SafetensorsFile* TensorFile::safetensors() const { return impl_->st ? &*impl_->st : nullptr; }
const GgufFile* TensorFile::gguf() const { return impl_->gguf ? &*impl_->gguf : nullptr; }
const std::vector<TensorFileEntry>& TensorFile::entries() const { return impl_->entries; }
const std::map<std::string, std::string>& TensorFile::metadata() const { return impl_->metadata; }

at::Tensor TensorFile::load(const std::string& name, c10::Device device, std::optional<at::ScalarType> dtype) const {
  if (impl_->gguf) return impl_->gguf->load(name, device, dtype);
  return load_dequantized(*impl_->st, impl_->fp8, name, device, dtype);
}

NamedTensors TensorFile::load_all(c10::Device device, std::optional<at::ScalarType> dtype) const {
  if (impl_->gguf) return load_gguf_tensors(*impl_->gguf, device, dtype);
  return load_safetensors_weights(*impl_->st, device, dtype);
}

std::optional<Fp8Stored> TensorFile::load_fp8(const std::string& name, c10::Device device) const {
  if (impl_->gguf) return std::nullopt;
  const auto format = fp8_format_of(impl_->st->entry(name).dtype);
  if (!format) return std::nullopt;
  Fp8Stored out{impl_->st->load_fp8_codes(name, device), *format, 1.0f};
  if (const auto scale = impl_->fp8.scale_of.find(name); scale != impl_->fp8.scale_of.end()) {
    out.scale = impl_->st->load(scale->second, c10::Device(c10::kCPU), at::kFloat).reshape({}).item<float>();
  }
  return out;
}

}  // namespace vidgraph::model_io
