// Tells what a file is from its first bytes (magic numbers), so that a loader given the wrong file
// says what the file is instead of failing on a field it misread (a GGUF file read as safetensors
// has a "header size" of 14 GB). Pure functions over bytes: usable on files and from memory.
#pragma once

#include <cstddef>
#include <string>

namespace vidgraph::model_io {

enum class FileKind {
  Empty,
  Safetensors,   // 8-byte little-endian header size, then '{'
  Zip,           // "PK\3\4" (a PyTorch .pth is a zip holding <archive>/data.pkl)
  Gguf,          // "GGUF" (llama.cpp / stable-diffusion.cpp quantised weights)
  LegacyPickle,  // 0x80 0x02..0x05: a pre-1.6 torch.save file or a bare pickle
  Numpy,         // "\x93NUMPY"
  Html,          // "<!doctype html", "<html" (a download that saved an error or login page)
  Json,          // '{' or '[' at byte 0 (a config.json or index file)
  Text,          // printable ASCII / UTF-8 text of another kind (e.g. a Git LFS pointer)
  Gzip,          // 0x1f 0x8b
  Unknown,
};

// How many leading bytes `sniff_file_kind` looks at.
constexpr size_t kSniffBytes = 64;

// The kind of a file whose first bytes are `head` (fewer than kSniffBytes for a short file).
FileKind sniff_file_kind(const std::string& head);
// The first `kSniffBytes` bytes of `path` (fewer for a short file); throws std::runtime_error naming
// the file when it cannot be opened or is not a regular file.
std::string read_file_head(const std::string& path);
// "a GGUF file (llama.cpp / ggml weights)": what the kind is, as the
// second half of "'x' is <sentence>".
std::string file_kind_sentence(FileKind kind);

}  // namespace vidgraph::model_io
