// For fuzz targets whose reader takes a path: each input is written to one file, named `name`, in a
// private temporary folder made once per process.
#pragma once

#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

namespace fuzz {

inline const std::string& input_path(const char* name) {
  static const std::string path = [name] {
    char dir[] = "/tmp/vidgraph-fuzz-XXXXXX";
    if (mkdtemp(dir) == nullptr) std::abort();
    return std::string(dir) + "/" + name;
  }();
  return path;
}

// Writes the input to input_path(name) and returns that path.
inline const std::string& write_input(const char* name, const std::uint8_t* data, std::size_t size) {
  const std::string& path = input_path(name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) std::abort();
  return path;
}

}  // namespace fuzz
