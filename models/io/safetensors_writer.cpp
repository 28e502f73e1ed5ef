// Atomic safetensors writer (temp file + fsync + rename + folder fsync). See safetensors.h.
#include "models/io/safetensors.h"

#include "models/io/fp8.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <unistd.h>

namespace vidgraph::model_io {
namespace {

[[noreturn]] void write_fail(const std::string& path, const std::string& what) {
  throw SafetensorsError("cannot write safetensors file '" + path + "': " + what);
}

void write_all(int fd, const void* data, size_t size, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      write_fail(path, std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
}

std::string parent_dir(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Header JSON (padded with spaces to 8 bytes) and the contiguous CPU tensors it describes.
std::string build_header(const std::string& path, const NamedTensors& tensors,
                         const std::map<std::string, std::string>& metadata,
                         const std::map<std::string, std::string>& dtypes, std::vector<at::Tensor>& host) {
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    if (name.empty() || name == "__metadata__") write_fail(path, "invalid tensor name '" + name + "'");
    if (!seen.insert(name).second) write_fail(path, "tensor name '" + name + "' appears twice");
    if (!tensor.defined()) write_fail(path, "tensor '" + name + "' is undefined");
    std::string dtype;
    try {
      dtype = safetensors_dtype_name(tensor.scalar_type());
    } catch (const SafetensorsError& ex) {
      write_fail(path, "tensor '" + name + "': " + ex.what());
    }
    if (const auto it = dtypes.find(name); it != dtypes.end()) {
      if (!fp8_format_of(it->second) || tensor.scalar_type() != at::kByte)
        write_fail(path, "tensor '" + name + "': only U8 tensors of fp8 codes can be stored as another dtype (F8_E4M3, "
                         "F8_E5M2), not " + dtype + " as '" + it->second + "'");
      dtype = it->second;
    }
    at::Tensor cpu = tensor.detach().to(c10::Device(c10::kCPU)).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(cpu.numel()) * cpu.element_size();
    header[name] = {{"dtype", dtype},
                    {"shape", cpu.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    host.push_back(std::move(cpu));
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata,
                      const std::map<std::string, std::string>& dtypes) {
  for (const auto& [name, dtype] : dtypes) {
    bool found = false;
    for (const auto& item : tensors) found = found || item.first == name;
    if (!found) write_fail(path, "a dtype is given for tensor '" + name + "', which is not written");
  }
  std::vector<at::Tensor> host;
  const std::string header = build_header(path, tensors, metadata, dtypes, host);

  static std::atomic<int> counter{0};
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) write_fail(path, "cannot create '" + tmp + "': " + std::strerror(errno));
  try {
    uint8_t size_le[8];
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i, n >>= 8) size_le[i] = static_cast<uint8_t>(n & 0xff);
    write_all(fd, size_le, 8, path);
    write_all(fd, header.data(), header.size(), path);
    for (const auto& t : host) {
      if (t.numel() > 0) write_all(fd, t.data_ptr(), t.numel() * t.element_size(), path);
    }
    if (::fsync(fd) != 0) write_fail(path, std::string("fsync failed: ") + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    write_fail(path, std::string("close failed: ") + std::strerror(errno));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    write_fail(path, "rename from '" + tmp + "' failed: " + why);
  }
  const int dir = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace vidgraph::model_io
