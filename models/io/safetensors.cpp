// Safetensors reader (mmap, validated header) and atomic writer. See safetensors.h.
#include "models/io/safetensors.h"

#include "models/io/fp8.h"
#include "models/io/mapped_pages.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace vidgraph::model_io {
namespace {

struct DtypeRow {
  const char* name;
  at::ScalarType type;
};
constexpr DtypeRow kDtypes[] = {
    {"F64", at::kDouble}, {"F32", at::kFloat}, {"F16", at::kHalf},  {"BF16", at::kBFloat16},
    {"I64", at::kLong},   {"I32", at::kInt},   {"I16", at::kShort}, {"I8", at::kChar},
    {"U8", at::kByte},    {"BOOL", at::kBool},
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw SafetensorsError("invalid safetensors file '" + path + "': " + what);
}

std::string sys_error() { return std::strerror(errno); }

}  // namespace

std::optional<at::ScalarType> safetensors_dtype_to_scalar(const std::string& dtype) {
  for (const auto& row : kDtypes) {
    if (dtype == row.name) return row.type;
  }
  return std::nullopt;
}

std::string safetensors_dtype_name(at::ScalarType type) {
  for (const auto& row : kDtypes) {
    if (type == row.type) return row.name;
  }
  throw SafetensorsError(std::string("safetensors cannot store dtype ") + c10::toString(type));
}

struct SafetensorsFile::Impl {
  std::string path;
  void* map = nullptr;
  size_t map_size = 0;
  const uint8_t* data = nullptr;  // start of the data region
  uint64_t data_size = 0;
  std::vector<SafetensorsEntry> entries;  // sorted by begin
  std::map<std::string, size_t> by_name;
  std::map<std::string, std::string> metadata;

  ~Impl() {
    if (map != nullptr) munmap(map, map_size);
  }
};

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SafetensorsError("cannot open safetensors file '" + path + "': " + sys_error());
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw SafetensorsError("cannot open safetensors file '" + path + "': not a regular file");
  }
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    fail(path, "file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header size");
  }
  void* map = mmap(nullptr, file_size, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw SafetensorsError("cannot map safetensors file '" + path + "': " + sys_error());
  impl->map = map;
  impl->map_size = file_size;
  const auto* bytes = static_cast<const uint8_t*>(map);
  const uint64_t header_size = safetensors_header_size(bytes, file_size, path);
  impl->data = bytes + 8 + header_size;
  impl->data_size = file_size - 8 - header_size;
  SafetensorsHeader header =
      parse_safetensors_header(reinterpret_cast<const char*>(bytes + 8), size_t(header_size), impl->data_size, path);
  impl->entries = std::move(header.entries);
  impl->metadata = std::move(header.metadata);
  for (size_t i = 0; i < impl->entries.size(); ++i) impl->by_name[impl->entries[i].name] = i;
  return SafetensorsFile(std::move(impl));
}

SafetensorsFile::SafetensorsFile(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

const std::string& SafetensorsFile::path() const { return impl_->path; }

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(impl_->entries.size());
  for (const auto& e : impl_->entries) out.push_back(e.name);
  return out;
}

bool SafetensorsFile::contains(const std::string& name) const { return impl_->by_name.count(name) > 0; }

const SafetensorsEntry& SafetensorsFile::entry(const std::string& name) const {
  const auto it = impl_->by_name.find(name);
  if (it == impl_->by_name.end())
    throw SafetensorsError("safetensors file '" + impl_->path + "' has no tensor '" + name + "'");
  return impl_->entries[it->second];
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return impl_->metadata; }

at::Tensor SafetensorsFile::load(const std::string& name, c10::Device device,
                                 std::optional<at::ScalarType> dtype) const {
  const SafetensorsEntry& e = entry(name);
  const uint8_t* src = impl_->data + e.begin;
  const ReleasePagesAfterCopy release(src, e.end - e.begin);
  try {
    if (const auto fp8 = fp8_format_of(e.dtype)) {
      // Decoded on the CPU to fp32 (exact for both formats), then one conversion to the target.
      at::Tensor decoded = fp8_decode(src, e.shape, *fp8);
      const at::ScalarType target = dtype.value_or(at::kFloat);
      if (device.is_cpu() && target == at::kFloat) return decoded;
      return decoded.to(device, target);
    }
    const at::ScalarType target = dtype.value_or(e.scalar_type);
    const size_t align = c10::elementSize(e.scalar_type);
    if (e.end > e.begin && reinterpret_cast<uintptr_t>(src) % align == 0) {
      // A view of the mapping, copied once to the target device and dtype.
      at::Tensor view = at::from_blob(const_cast<uint8_t*>(src), e.shape,
                                      at::TensorOptions().dtype(e.scalar_type));
      return view.to(device, target, /*non_blocking=*/false, /*copy=*/true);
    }
    // Unaligned data (or empty tensor): one tensor-sized copy through a host buffer.
    at::Tensor host = at::empty(e.shape, at::TensorOptions().dtype(e.scalar_type));
    if (e.end > e.begin) std::memcpy(host.data_ptr(), src, e.end - e.begin);
    if (device.is_cpu() && target == e.scalar_type) return host;
    return host.to(device, target);
  } catch (const c10::Error& ex) {
    throw SafetensorsError("cannot load tensor '" + name + "' from safetensors file '" + impl_->path +
                           "': " + ex.what_without_backtrace());
  }
}

at::Tensor SafetensorsFile::load_fp8_codes(const std::string& name, c10::Device device) const {
  const SafetensorsEntry& e = entry(name);
  if (!fp8_format_of(e.dtype)) {
    throw SafetensorsError("tensor '" + name + "' in safetensors file '" + impl_->path + "' is " + e.dtype +
                           ", not an fp8 type (F8_E4M3, F8_E5M2)");
  }
  const ReleasePagesAfterCopy release(impl_->data + e.begin, e.end - e.begin);
  const at::Tensor view = at::from_blob(const_cast<uint8_t*>(impl_->data + e.begin), e.shape,
                                        at::TensorOptions().dtype(at::kByte));
  return view.to(device, at::kByte, /*non_blocking=*/false, /*copy=*/true);
}

}  // namespace vidgraph::model_io
