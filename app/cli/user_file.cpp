// Implements user_file.h with stat(2) and the node inputs' kind names (nodes/input_file.h).
#include "user_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "nodes/input_file.h"

namespace vidgraph::cli {

std::string check_user_file(const std::string& role, const std::string& path, UserFileKind kind) {
  const std::string shown = role + " '" + nodes::printable_text(path) + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return {};  // the reader names a missing file
    return shown + " cannot be inspected (" + std::strerror(err) + "); check the permissions of its folders.";
  }
  if (S_ISREG(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) {
    if (kind == UserFileKind::FileOrFolder) return {};
    return shown + " is a folder, not a file; name the file itself.";
  }
  return shown + " is " + nodes::file_kind_name(st.st_mode) + ", not a regular file; vidgraph-run reads only " +
         "regular files" + (kind == UserFileKind::FileOrFolder ? " and folders" : "") +
         " (a FIFO or a device would block or never end), so copy the data to a file and name that file.";
}

}  // namespace vidgraph::cli
