// Workflow file I/O: reading with a size limit, byte-level checks (UTF-8, nesting depth) and the
// atomic write (temp file in the same folder, fsync, rename).
#include "workflow_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace vidgraph::engine {
namespace fs = std::filesystem;

namespace {

std::string errno_text() { return std::strerror(errno); }

Status write_all(int fd, std::string_view data, const std::string& path) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error("cannot write '" + path + "': " + errno_text());
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

void fsync_directory(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

Status check_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    }
    bool ok = len != 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid too.
    if (ok) {
      ok = !((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
             (cp >= 0xD800 && cp <= 0xDFFF));
    }
    if (!ok) {
      return make_error("the text is not valid UTF-8 (bad byte at offset " + std::to_string(i) +
                        "); save the file as UTF-8");
    }
    i += len;
  }
  return {};
}

std::string describe_non_workflow(std::string_view b) {
  auto starts = [&](std::size_t at, std::string_view magic) { return b.size() >= at + magic.size() && b.substr(at, magic.size()) == magic; };
  if (starts(4, "ftyp")) {
    const std::string_view brand = b.size() >= 12 ? b.substr(8, 4) : std::string_view();
    if (brand == "qt  ") return "a QuickTime (MOV) video";
    if (brand.substr(0, 3) == "hei" || brand.substr(0, 3) == "mif" || brand == "avif") return "a HEIF/AVIF image";
    return "an MP4 video";
  }
  if (starts(0, "\x89PNG\r\n\x1a\n")) return "a PNG image";
  if (starts(0, "\xFF\xD8\xFF")) return "a JPEG image";
  if (starts(0, "GIF87a") || starts(0, "GIF89a")) return "a GIF image";
  if (starts(0, "\x1A\x45\xDF\xA3")) return "a WebM/Matroska video";
  if (starts(0, "RIFF") && starts(8, "WEBP")) return "a WebP image";
  if (starts(0, "RIFF") && starts(8, "AVI ")) return "an AVI video";
  if (starts(0, "RIFF") && starts(8, "WAVE")) return "a WAV audio file";
  if (starts(0, "PK\x03\x04")) return "a ZIP archive (or a PyTorch checkpoint)";
  if (starts(0, "GGUF")) return "a GGUF model file";
  if (starts(0, "%PDF")) return "a PDF document";
  if (starts(0, "\x7F" "ELF")) return "a program (ELF binary)";
  if (starts(0, "\x1F\x8B")) return "a gzip-compressed file";
  // safetensors: an 8-byte little-endian header length, then a JSON header.
  if (b.size() > 9 && b[8] == '{' && static_cast<unsigned char>(b[7]) == 0 && static_cast<unsigned char>(b[6]) == 0) {
    return "a safetensors model file";
  }
  // Any other binary data: a NUL or other control byte near the start of something not JSON.
  std::size_t first = 0;
  while (first < b.size() && (b[first] == ' ' || b[first] == '\t' || b[first] == '\r' || b[first] == '\n')) ++first;
  if (first < b.size() && b[first] != '{' && b[first] != '[') {
    const std::size_t n = std::min<std::size_t>(b.size(), 4096);
    for (std::size_t i = 0; i < n; ++i) {
      const auto c = static_cast<unsigned char>(b[i]);
      if (c == 0 || (c < 0x20 && c != '\t' && c != '\r' && c != '\n' && c != '\f')) return "a binary file";
    }
  }
  return {};
}

Status check_json_depth(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return make_error("JSON nests deeper than " + std::to_string(max_depth) + " levels (at byte " +
                          std::to_string(i) + "); a workflow never needs that");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return {};
}

Result<LoadedWorkflow> load_workflow_file(const std::string& path, const LoadOptions& options) {
  auto text = read_workflow_file(path);
  if (!text.ok()) return text.error();
  return load_workflow_string(*text, options, path);
}

Result<std::string> read_workflow_file(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return make_error("'" + path + "' does not exist; check the path");
  if (fs::is_directory(path, ec)) return make_error("'" + path + "' is a folder, not a workflow file");
  if (!fs::is_regular_file(path, ec)) {
    return make_error("'" + path + "' is not a regular file (a pipe, a device or a socket); save the workflow to a file");
  }
  const auto size = fs::file_size(path, ec);
  if (ec) return make_error("cannot read '" + path + "': " + ec.message());
  if (size > kMaxWorkflowBytes) {
    return make_error(path + ": " + std::to_string(size / (1024 * 1024)) + " MB is larger than the " +
                      std::to_string(kMaxWorkflowBytes / (1024 * 1024)) +
                      " MB a workflow may have; is this really a workflow file?");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("cannot open '" + path + "': " + errno_text());
  std::string text(static_cast<std::size_t>(size), '\0');
  in.read(text.data(), static_cast<std::streamsize>(size));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return text;
}

namespace {

// The file a chain of symlinks ends at (the path itself when it is no link): saving writes through
// a link, so the link and the folder it lives in stay as the user made them.
fs::path follow_symlinks(fs::path path) {
  std::error_code ec;
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(path, ec)); ++hops) {
    const fs::path next = fs::read_symlink(path, ec);
    if (ec) break;
    path = next.is_absolute() ? next : path.parent_path() / next;
  }
  return path;
}

}  // namespace

Status write_file_atomic(const std::string& path, std::string_view contents) {
  const fs::path target = follow_symlinks(path);
  const fs::path dir = target.parent_path();
  std::string tmpl = (dir / ("." + target.filename().string() + ".tmp-XXXXXX")).string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return make_error("cannot create a temporary file next to '" + path + "': " + errno_text());
  auto fail = [&](Status s) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    return s;
  };
  if (auto s = write_all(fd, contents, path); !s) return fail(s);
  if (::fsync(fd) != 0) return fail(make_error("cannot flush '" + path + "' to disk: " + errno_text()));
  // mkstemp creates 0600; give the file the usual permissions (or the old file's).
  struct stat st {};
  const mode_t mode = ::stat(target.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  (void)::fchmod(fd, mode);
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return make_error("cannot close '" + path + "': " + errno_text());
  }
  if (::rename(tmpl.c_str(), target.c_str()) != 0) {
    const std::string why = errno_text();
    ::unlink(tmpl.c_str());
    return make_error("cannot replace '" + path + "': " + why);
  }
  fsync_directory(dir);
  return {};
}

}  // namespace vidgraph::engine
