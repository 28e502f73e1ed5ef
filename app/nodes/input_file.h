// Checks of the files and folders that node params name, made before anything opens them: a
// regular file (or, where the loader takes one, a folder), never a FIFO, a device or a socket
// (reading /dev/zero or a FIFO blocks forever or never ends), and names that are valid UTF-8
// (params travel as JSON strings, which must be UTF-8).
//
// Contract: each check returns "" when the path is fine, else one sentence that names the param,
// the path (bytes that are not UTF-8 written as \xNN) and what to do. stat() only: nothing is
// opened, so a FIFO never blocks here. Header-only, so that vidgraph_nodes_media (image files) and
// vidgraph_nodes (latents, model files) share it without a new library.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace vidgraph::nodes {

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
inline bool is_valid_utf8(const std::string& text) {
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

// `text` with every byte that is not part of valid UTF-8 written as \xNN: safe to put in a message
// that is sent as JSON (--json-events) or shown in the GUI.
inline std::string printable_text(const std::string& text) {
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

// "" when the string param `param` is valid UTF-8, else a sentence saying which param is not.
inline std::string check_utf8_param(const std::string& param, const std::string& value) {
  if (is_valid_utf8(value)) return {};
  return "The " + param + " param ('" + printable_text(value) + "') is not valid UTF-8; workflow "
         "params must be UTF-8, so rename the file or folder to a UTF-8 name and set " + param +
         " again.";
}

enum class InputKind { File, FileOrFolder, Folder };

// What a stat mode is, for messages: "a FIFO (named pipe)", "a character device", ...
inline const char* file_kind_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Checks that `path` (the value of param `param`) is what the node reads: a readable regular file,
// or a folder where `kind` allows one. `wanted` completes "set <param> to ...", e.g. "an image
// file (PNG, JPEG or WebP)". Symbolic links are followed (a link to /dev/zero is a device).
inline std::string check_input_path(const std::string& param, const std::string& path, InputKind kind,
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
