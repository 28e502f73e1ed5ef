// Implements input_file.h with stat(2) and access(2).
#include "nodes/input_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace vidgraph::nodes {

bool is_valid_utf8(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned c = s[i];
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || i + len > n) return false;
    unsigned cp = len == 1 ? c : c & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    static const unsigned min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

std::string printable_text(const std::string& text) {
  if (is_valid_utf8(text)) return text;
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::size_t len = 1;
    while (len <= 4 && i + len <= text.size() && !is_valid_utf8(text.substr(i, len))) ++len;
    if (len <= 4 && i + len <= text.size()) {
      out += text.substr(i, len);
      i += len;
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", static_cast<unsigned char>(text[i]));
      out += hex;
      ++i;
    }
  }
  return out;
}

std::string check_utf8_param(const std::string& param, const std::string& value) {
  if (is_valid_utf8(value)) return {};
  return "The " + param + " param ('" + printable_text(value) + "') is not valid UTF-8; workflow "
         "params must be UTF-8, so rename the file or folder to a UTF-8 name and set " + param +
         " again.";
}

const char* file_kind_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string check_input_path(const std::string& param, const std::string& path, InputKind kind,
                                    const std::string& wanted) {
  if (path.empty()) return "The " + param + " param is empty; set it to " + wanted + ".";
  if (std::string bad = check_utf8_param(param, path); !bad.empty()) return bad;
  const std::string shown = "The " + param + " param names '" + path + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return shown + ", which does not exist; check the path or set " + param + " to " + wanted + ".";
    }
    return shown + ", which cannot be inspected (" + std::strerror(err) +
           "); check the permissions of its folders.";
  }
  const bool folder = S_ISDIR(st.st_mode);
  if (S_ISREG(st.st_mode) || (folder && kind != InputKind::File)) {
    if (kind == InputKind::Folder && !folder) {
      return shown + ", a file, not a folder; set " + param + " to " + wanted + ".";
    }
    if (::access(path.c_str(), folder ? (R_OK | X_OK) : R_OK) != 0) {
      return shown + ", which cannot be read (" + std::strerror(errno) + "); check its permissions.";
    }
    return {};
  }
  return shown + ", " + file_kind_name(st.st_mode) + ", not a regular file; only regular files are " +
         "read, so set " + param + " to " + wanted + ".";
}

}  // namespace vidgraph::nodes
