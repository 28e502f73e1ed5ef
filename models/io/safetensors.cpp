// Safetensors reader (mmap, validated header) and atomic writer. See safetensors.h.
#include "models/io/safetensors.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <nlohmann/json.hpp>

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

constexpr uint64_t kMaxHeaderBytes = 100ull * 1024 * 1024;

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
  void parse_header(const char* text, size_t size);
  void parse_entry(const std::string& name, const nlohmann::json& value);
};

void SafetensorsFile::Impl::parse_entry(const std::string& name, const nlohmann::json& value) {
  const std::string where = "tensor '" + name + "': ";
  if (!value.is_object()) fail(path, where + "entry is not a JSON object");
  if (!value.contains("dtype") || !value["dtype"].is_string())
    fail(path, where + "missing string field 'dtype'");
  if (!value.contains("shape") || !value["shape"].is_array())
    fail(path, where + "missing array field 'shape'");
  if (!value.contains("data_offsets") || !value["data_offsets"].is_array() ||
      value["data_offsets"].size() != 2)
    fail(path, where + "missing 'data_offsets' [begin, end]");
  SafetensorsEntry e;
  e.name = name;
  e.dtype = value["dtype"].get<std::string>();
  const auto type = safetensors_dtype_to_scalar(e.dtype);
  if (!type)
    fail(path, where + "unsupported dtype '" + e.dtype +
                   "' (supported: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL)");
  e.scalar_type = *type;
  uint64_t numel = 1;
  for (const auto& d : value["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      fail(path, where + "shape entries must be non-negative integers");
    const auto n = static_cast<uint64_t>(d.get<int64_t>());
    if (n != 0 && numel > (uint64_t(1) << 62) / n) fail(path, where + "shape is too large");
    numel *= n;
    e.shape.push_back(static_cast<int64_t>(n));
  }
  for (const auto& o : value["data_offsets"]) {
    if (!o.is_number_unsigned() && !(o.is_number_integer() && o.get<int64_t>() >= 0))
      fail(path, where + "data_offsets must be non-negative integers");
  }
  e.begin = value["data_offsets"][0].get<uint64_t>();
  e.end = value["data_offsets"][1].get<uint64_t>();
  if (e.begin > e.end || e.end > data_size)
    fail(path, where + "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                   ") out of range of the data region (" + std::to_string(data_size) + " bytes)");
  const uint64_t want = numel * c10::elementSize(e.scalar_type);
  if (e.end - e.begin != want)
    fail(path, where + "data_offsets span " + std::to_string(e.end - e.begin) +
                   " bytes but dtype and shape need " + std::to_string(want));
  entries.push_back(std::move(e));
}

void SafetensorsFile::Impl::parse_header(const char* text, size_t size) {
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + size);
  } catch (const std::exception& ex) {
    fail(path, std::string("header is not valid JSON (") + ex.what() + ")");
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it.value().is_object()) fail(path, "__metadata__ is not a JSON object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string()) fail(path, "__metadata__ value '" + m.key() + "' is not a string");
        metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    parse_entry(it.key(), it.value());
  }
  std::sort(entries.begin(), entries.end(),
            [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0 && entries[i].begin < entries[i - 1].end && entries[i].begin != entries[i].end)
      fail(path, "tensors '" + entries[i - 1].name + "' and '" + entries[i].name + "' overlap");
    by_name[entries[i].name] = i;
  }
}

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
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[i];
  if (header_size > kMaxHeaderBytes)
    fail(path, "header size " + std::to_string(header_size) + " exceeds the 100 MiB limit");
  if (header_size > file_size - 8)
    fail(path, "header size " + std::to_string(header_size) + " runs past the end of the file (" +
                   std::to_string(file_size) + " bytes)");
  impl->data = bytes + 8 + header_size;
  impl->data_size = file_size - 8 - header_size;
  impl->parse_header(reinterpret_cast<const char*>(bytes + 8), header_size);
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
  try {
    const at::ScalarType target = dtype.value_or(e.scalar_type);
    const uint8_t* src = impl_->data + e.begin;
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

}  // namespace vidgraph::model_io
