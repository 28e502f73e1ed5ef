// TensorFile::open_shared: the opened files of this process, keyed by path and identified by what
// stat says of them, so a file replaced or rewritten in place is read again.
#include <sys/stat.h>

#include <list>
#include <mutex>
#include <tuple>

#include "models/io/tensor_file.h"

namespace vidgraph::model_io {
namespace {

// Enough for every file of a sharded 14B model pair, its VAE and text encoders.
constexpr size_t kKeptFiles = 64;

struct Identity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{}, ctime{};

  bool operator==(const Identity& o) const {
    return std::tie(dev, ino, size, mtime.tv_sec, mtime.tv_nsec, ctime.tv_sec, ctime.tv_nsec) ==
           std::tie(o.dev, o.ino, o.size, o.mtime.tv_sec, o.mtime.tv_nsec, o.ctime.tv_sec, o.ctime.tv_nsec);
  }
};

struct Entry {
  std::string path;
  Identity identity;
  std::shared_ptr<const TensorFile> file;
};

std::mutex g_mutex;
std::list<Entry> g_entries;  // most recently used first

// The identity of `path` when it is a regular file; otherwise open() names what it is.
bool identify(const std::string& path, Identity* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *out = Identity{st.st_dev, st.st_ino, st.st_size, st.st_mtim, st.st_ctim};
  return true;
}

}  // namespace

std::shared_ptr<const TensorFile> TensorFile::open_shared(const std::string& path) {
  Identity identity;
  if (!identify(path, &identity)) return std::make_shared<const TensorFile>(open(path));
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto it = g_entries.begin(); it != g_entries.end(); ++it) {
    if (it->path != path) continue;
    if (it->identity == identity) {
      g_entries.splice(g_entries.begin(), g_entries, it);
      return it->file;
    }
    g_entries.erase(it);
    break;
  }
  auto file = std::make_shared<const TensorFile>(open(path));
  g_entries.push_front({path, identity, file});
  if (g_entries.size() > kKeptFiles) g_entries.pop_back();
  return file;
}

}  // namespace vidgraph::model_io
