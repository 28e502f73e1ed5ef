// Implements output_path.h with std::filesystem and POSIX file calls.
#include "nodes/output_path.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace vidgraph::nodes {
namespace fs = std::filesystem;

namespace {

fs::path parent_or_current(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

}  // namespace

std::string describe_errno(int error_number) {
  if (error_number == ENOSPC || error_number == EDQUOT) {
    return "the disk is full (no space left on the device); free some space or choose another "
           "output folder";
  }
  if (error_number == EACCES || error_number == EPERM || error_number == EROFS) {
    return std::string(std::strerror(error_number)) +
           "; choose an output folder you can write to";
  }
  return std::strerror(error_number);
}

std::string check_output_path(const std::string& path, bool overwrite) {
  if (path.empty()) return "No output path was given; set the output file name.";
  const fs::path target(path);
  const fs::path folder = parent_or_current(target);
  std::error_code ec;
  if (!fs::exists(folder, ec)) {
    return "Output folder '" + folder.string() + "' does not exist; create it or choose another.";
  }
  if (!fs::is_directory(folder, ec)) {
    return "Output folder '" + folder.string() + "' is not a folder; choose another.";
  }
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return "Cannot write to output folder '" + folder.string() + "': " + describe_errno(errno) + ".";
  }
  if (fs::exists(fs::symlink_status(target, ec)) && !overwrite) {
    return "Output '" + path +
           "' already exists; choose another name or allow overwriting (overwrite = true).";
  }
  return {};
}

std::string temporary_sibling(const std::string& path) {
  static std::atomic<unsigned> counter{0};
  const fs::path target(path);
  const std::string name = "." + target.filename().string() + ".tmp-" +
                           std::to_string(::getpid()) + "-" + std::to_string(counter++);
  return (parent_or_current(target) / name).string();
}

std::string commit_output(const std::string& from, const std::string& to, bool overwrite) {
  std::error_code ec;
  if (fs::exists(fs::symlink_status(to, ec))) {
    if (!overwrite) {
      return "Output '" + to + "' appeared while writing; it was left untouched. Choose another "
             "name or allow overwriting.";
    }
    if (fs::is_directory(to, ec)) fs::remove_all(to, ec);
  }
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    return "Could not move the finished output to '" + to + "': " + describe_errno(errno) + ".";
  }
  return {};
}

void remove_quietly(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::string write_file_atomically(const std::string& path, const void* bytes, std::size_t size,
                                  bool overwrite) {
  if (std::string error = check_output_path(path, overwrite); !error.empty()) return error;
  const std::string temp = temporary_sibling(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return "Could not create '" + temp + "': " + describe_errno(errno) + ".";
  const auto* data = static_cast<const char*>(bytes);
  std::size_t written = 0;
  int failure = 0;
  while (written < size) {
    const ssize_t n = ::write(fd, data + written, size - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      failure = errno;
      break;
    }
    written += static_cast<std::size_t>(n);
  }
  if (failure == 0 && ::fsync(fd) != 0) failure = errno;
  if (::close(fd) != 0 && failure == 0) failure = errno;
  if (failure != 0) {
    remove_quietly(temp);
    return "Could not write '" + path + "': " + describe_errno(failure) + ".";
  }
  if (std::string error = commit_output(temp, path, overwrite); !error.empty()) {
    remove_quietly(temp);
    return error;
  }
  return {};
}

}  // namespace vidgraph::nodes
