// Path rules of a run (see run_options.h).
#include "run_options.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace vidgraph::engine {
namespace fs = std::filesystem;

namespace {

fs::path base_or_cwd(const std::string& dir) {
  std::error_code ec;
  if (dir.empty()) return fs::current_path(ec);
  fs::path p(dir);
  if (p.is_absolute()) return p;
  return fs::current_path(ec) / p;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

std::string RunOptions::resolve_path(const std::string& path) const {
  if (path.empty()) return path;
  const std::string resources_tag = "{resources}";
  const std::string output_tag = "{output}";
  fs::path result;
  if (starts_with(path, resources_tag)) {
    const std::string rest = path.substr(resources_tag.size());
    const std::string dir = resources_dir.empty() ? default_resources_dir() : resources_dir;
    result = base_or_cwd(dir) / fs::path(rest).relative_path();
  } else if (starts_with(path, output_tag)) {
    result = base_or_cwd(output_dir) / fs::path(path.substr(output_tag.size())).relative_path();
  } else if (fs::path(path).is_absolute()) {
    result = fs::path(path);
  } else {
    result = base_or_cwd(workflow_dir) / fs::path(path);
  }
  return result.lexically_normal().string();
}

std::string RunOptions::output_directory() const { return base_or_cwd(output_dir).lexically_normal().string(); }

std::string default_resources_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return {};
  return (exe.parent_path() / ".." / "share" / "vidgraph").lexically_normal().string();
}

}  // namespace vidgraph::engine
