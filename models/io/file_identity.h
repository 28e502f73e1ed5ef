// What stat says of a file, enough to tell that it was replaced (device, inode) or rewritten in
// place (size, modification and change times: a copy that keeps the old mtime still changes the
// ctime). TensorFile::open_shared and the checkpoint manifest treat a file as unchanged exactly
// while its identity is equal, so a header kept in memory is never one of an older file.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <tuple>

namespace vidgraph::model_io {

struct FileIdentity {
  bool exists = false;   // stat succeeded
  bool regular = false;  // a regular file (readers open nothing else: a FIFO would block them)
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{}, ctime{};

  bool operator==(const FileIdentity& o) const {
    return std::tie(exists, regular, dev, ino, size, mtime.tv_sec, mtime.tv_nsec, ctime.tv_sec, ctime.tv_nsec) ==
           std::tie(o.exists, o.regular, o.dev, o.ino, o.size, o.mtime.tv_sec, o.mtime.tv_nsec, o.ctime.tv_sec,
                    o.ctime.tv_nsec);
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }

  // "size:mtime:ctime:inode" in nanoseconds since 1970, "" for a path that does not exist.
  std::string to_string() const {
    if (!exists) return {};
    auto ns = [](const timespec& t) { return std::to_string(int64_t(t.tv_sec) * 1000000000 + t.tv_nsec); };
    return std::to_string(int64_t(size)) + ":" + ns(mtime) + ":" + ns(ctime) + ":" + std::to_string(uint64_t(ino));
  }
};

// Follows symlinks, as the readers do.
inline FileIdentity file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return FileIdentity{true, S_ISREG(st.st_mode) != 0, st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
}

}  // namespace vidgraph::model_io
