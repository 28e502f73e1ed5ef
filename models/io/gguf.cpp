// GGUF file mapping and tensor decoding. See gguf.h.
#include "models/io/gguf.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "models/io/mapped_pages.h"

namespace vidgraph::model_io {
namespace {

std::optional<at::ScalarType> plain_scalar_type(GgmlType t) {
  switch (t) {
    case GgmlType::F32: return at::kFloat;
    case GgmlType::F16: return at::kHalf;
    case GgmlType::BF16: return at::kBFloat16;
    default: return std::nullopt;
  }
}

// Quantised blocks decoded in parallel (a 5B Q8_0 DiT is 5e9 elements) into one fp32 tensor.
at::Tensor decode_blocks(const GgufTensorInfo& t, const uint8_t* src) {
  const GgmlTypeInfo& type = ggml_type_info(t.type);
  at::Tensor out = at::empty({t.numel()}, at::TensorOptions().dtype(at::kFloat));
  float* dst = out.data_ptr<float>();
  const int64_t blocks = t.numel() / type.block;
  at::parallel_for(0, blocks, 4096, [&](int64_t begin, int64_t end) {
    ggml_dequantize(t.type, src + begin * type.bytes, dst + begin * type.block, (end - begin) * type.block);
  });
  return out.view(t.shape);
}

}  // namespace

struct GgufFile::Impl {
  std::string path;
  void* map = nullptr;
  size_t map_size = 0;
  GgufHeader header;
  std::map<std::string, size_t> by_name;

  ~Impl() {
    if (map != nullptr) munmap(map, map_size);
  }
  const uint8_t* data() const { return static_cast<const uint8_t*>(map) + header.data_offset; }
};

GgufFile GgufFile::open(const std::string& path, GgufRead read) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw GgufError("cannot open GGUF file '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw GgufError("cannot open GGUF file '" + path + "': not a regular file");
  }
  const auto size = uint64_t(st.st_size);
  if (size < 24) {
    ::close(fd);
    throw GgufError("invalid GGUF file '" + path + "': it is " + std::to_string(size) +
                    " bytes, shorter than the 24-byte GGUF header (truncated?)");
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw GgufError("cannot map GGUF file '" + path + "': " + std::strerror(errno));
  impl->map = map;
  impl->map_size = size;
  impl->header = parse_gguf_header(static_cast<const uint8_t*>(map), size, path, read);
  for (size_t i = 0; i < impl->header.tensors.size(); ++i) impl->by_name[impl->header.tensors[i].name] = i;
  return GgufFile(std::move(impl));
}

GgufFile::GgufFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GgufFile::GgufFile(GgufFile&&) noexcept = default;
GgufFile& GgufFile::operator=(GgufFile&&) noexcept = default;
GgufFile::~GgufFile() = default;

const std::string& GgufFile::path() const { return impl_->path; }
const GgufHeader& GgufFile::header() const { return impl_->header; }
const std::vector<GgufTensorInfo>& GgufFile::tensors() const { return impl_->header.tensors; }

const GgufTensorInfo* GgufFile::find(const std::string& name) const {
  const auto it = impl_->by_name.find(name);
  return it == impl_->by_name.end() ? nullptr : &impl_->header.tensors[it->second];
}

const GgufValue* GgufFile::metadata(const std::string& key) const {
  const auto it = impl_->header.metadata.find(key);
  return it == impl_->header.metadata.end() ? nullptr : &it->second;
}

std::string GgufFile::architecture() const {
  const GgufValue* v = metadata("general.architecture");
  return v != nullptr && !v->is_array && v->is_string() ? std::string(v->string_at(0)) : std::string();
}

at::Tensor GgufFile::load(const std::string& name, c10::Device device, std::optional<at::ScalarType> dtype) const {
  const GgufTensorInfo* t = find(name);
  if (t == nullptr) throw GgufError("GGUF file '" + impl_->path + "' has no tensor '" + name + "'");
  const std::string unreadable = gguf_unreadable_reason(*t, impl_->path);
  if (!unreadable.empty()) throw GgufError(unreadable);
  const uint8_t* src = impl_->data() + t->offset;
  const ReleasePagesAfterCopy release(src, t->bytes);
  const auto plain = plain_scalar_type(t->type);
  const at::ScalarType target = dtype.value_or(plain.value_or(at::kFloat));
  try {
    // NaN or infinite weights (a damaged file, NaN block scales) are named here, where they enter,
    // not steps later by whatever first computes with them: one pass per tensor.
    auto finite = [&](at::Tensor x) {
      if (x.is_floating_point() && !x.isfinite().all().item<bool>()) {
        throw GgufError("GGUF file '" + impl_->path + "': tensor '" + name +
                        "' holds NaN or infinite values (damaged weights or block scales); the file cannot be used.");
      }
      return x;
    };
    if (plain && reinterpret_cast<uintptr_t>(src) % c10::elementSize(*plain) == 0) {
      // A view of the mapping, copied once to the target device and dtype.
      at::Tensor view = at::from_blob(const_cast<uint8_t*>(src), t->shape, at::TensorOptions().dtype(*plain));
      return finite(view.to(device, target, /*non_blocking=*/false, /*copy=*/true));
    }
    at::Tensor decoded = finite(decode_blocks(*t, src));
    if (device.is_cpu() && target == at::kFloat) return decoded;
    return decoded.to(device, target);
  } catch (const c10::Error& e) {
    throw GgufError("cannot load tensor '" + name + "' from GGUF file '" + impl_->path +
                    "': " + e.what_without_backtrace());
  }
}

NamedTensors load_gguf_tensors(const GgufFile& file, c10::Device device, std::optional<at::ScalarType> dtype) {
  NamedTensors out;
  for (const auto& t : file.tensors()) out.emplace_back(t.name, file.load(t.name, device, dtype));
  return out;
}

}  // namespace vidgraph::model_io
