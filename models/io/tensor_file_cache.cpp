// TensorFile::open_shared: the opened files of this process, keyed by path and identified by what
// stat says of them (file_identity.h), so a file replaced or rewritten in place is read again.
#include <list>
#include <mutex>

#include "models/io/file_identity.h"
#include "models/io/tensor_file.h"

namespace vidgraph::model_io {
namespace {

// Enough for every file of a sharded 14B model pair, its VAE and text encoders.
constexpr size_t kKeptFiles = 64;

struct Entry {
  std::string path;
  FileIdentity identity;
  std::shared_ptr<const TensorFile> file;
};

std::mutex g_mutex;
std::list<Entry> g_entries;  // most recently used first

}  // namespace

std::shared_ptr<const TensorFile> TensorFile::open_shared(const std::string& path) {
  // Not a regular file: open() names what it is.
  const FileIdentity identity = file_identity(path);
  if (!identity.regular) return std::make_shared<const TensorFile>(open(path));
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
