#include "file_kind.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <sys/stat.h>

namespace vidgraph::model_io {

namespace {

bool starts_with(const std::string& s, const char* prefix, size_t n) {
  return s.size() >= n && std::memcmp(s.data(), prefix, n) == 0;
}

std::string lower_trimmed(const std::string& head) {
  size_t i = 0;
  // Skip a UTF-8 byte-order mark and leading white space.
  if (starts_with(head, "\xEF\xBB\xBF", 3)) {
    i = 3;
  }
  while (i < head.size() && std::isspace(static_cast<unsigned char>(head[i]))) {
    ++i;
  }
  std::string out = head.substr(i);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

bool is_text(const std::string& head) {
  return std::all_of(head.begin(), head.end(), [](unsigned char c) {
    return c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

}  // namespace

FileKind sniff_file_kind(const std::string& head) {
  if (head.empty()) {
    return FileKind::Empty;
  }
  if (starts_with(head, "PK\x03\x04", 4) || starts_with(head, "PK\x05\x06", 4)) {
    return FileKind::Zip;
  }
  if (starts_with(head, "GGUF", 4)) {
    return FileKind::Gguf;
  }
  if (starts_with(head, "\x93NUMPY", 6)) {
    return FileKind::Numpy;
  }
  if (starts_with(head, "\x1f\x8b", 2)) {
    return FileKind::Gzip;
  }
  // Safetensors: a header size whose top bytes are zero (headers are far below 2^40) and then '{'.
  // Before the pickle test: a header of 640 bytes starts with 0x80 0x02, a pickle's PROTO 2.
  if (head.size() >= 9 && head[8] == '{' && head[5] == 0 && head[6] == 0 && head[7] == 0) {
    return FileKind::Safetensors;
  }
  if (head.size() >= 2 && static_cast<unsigned char>(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5) {
    return FileKind::LegacyPickle;
  }
  const std::string text = lower_trimmed(head);
  if (text.rfind("<!doctype html", 0) == 0 || text.rfind("<html", 0) == 0 || text.rfind("<head", 0) == 0) {
    return FileKind::Html;
  }
  if (!text.empty() && (text[0] == '{' || text[0] == '[') && is_text(head)) {
    return FileKind::Json;
  }
  if (is_text(head)) {
    return FileKind::Text;
  }
  return FileKind::Unknown;
}

std::string read_file_head(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw std::runtime_error("cannot open the weight file '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw std::runtime_error("'" + path + "' is not a regular file; expected a weight file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error("cannot open the weight file '" + path + "'");
  }
  std::string head(kSniffBytes, '\0');
  in.read(head.data(), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  return head;
}

std::string file_kind_sentence(FileKind kind) {
  switch (kind) {
    case FileKind::Empty:
      return "an empty file (an interrupted download or copy?)";
    case FileKind::Safetensors:
      return "a safetensors file";
    case FileKind::Zip:
      return "a zip archive";
    case FileKind::Gguf:
      return "a GGUF file (llama.cpp / ggml weights)";
    case FileKind::LegacyPickle:
      return "a legacy (non-zip) PyTorch pickle, which is not supported: it may run code when opened; "
             "re-save it with a current torch.save or as .safetensors";
    case FileKind::Numpy:
      return "a NumPy .npy array, not a weight file";
    case FileKind::Html:
      return "an HTML page, not weights (the download saved an error or login page?)";
    case FileKind::Json:
      return "a JSON text file (a config or index file?), not weights";
    case FileKind::Text:
      return "a text file (a Git LFS pointer or a failed download?), not weights";
    case FileKind::Gzip:
      return "a gzip-compressed file; decompress it first";
    case FileKind::Unknown:
      break;
  }
  return "a file of an unknown format";
}

}  // namespace vidgraph::model_io
