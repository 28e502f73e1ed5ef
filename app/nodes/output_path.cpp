// Implements output_path.h with std::filesystem and POSIX file calls.
#include "nodes/output_path.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nodes/input_file.h"
#include "nodes/nodes_log.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

namespace {

constexpr int kMaxIncrement = 99999;

fs::path parent_or_current(const fs::path& path) {
  const fs::path parent = path.parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

const char* kind_name(OutputKind kind) {
  switch (kind) {
    case OutputKind::Mp4: return "MP4";
    case OutputKind::WebM: return "WebM";
    case OutputKind::Png: return "PNG";
    case OutputKind::Safetensors: return "safetensors";
    case OutputKind::Json: return "JSON";
    case OutputKind::PngSequence: return "PNG-sequence";
  }
  return "output";
}

// What lstat found, in words, for messages about things a writer leaves alone.
std::string describe_entry(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "a symbolic link";
  return S_ISREG(st.st_mode) ? "a file" : file_kind_name(st.st_mode);
}

bool lstat_path(const std::string& path, struct stat* st) { return ::lstat(path.c_str(), st) == 0; }

// The first bytes of a regular file (never blocks: the caller checked it is regular).
std::string head_bytes(const std::string& path, std::size_t count) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out(count, '\0');
  const ssize_t n = ::read(fd, out.data(), count);
  ::close(fd);
  out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  return out;
}

bool is_sequence_entry(const std::string& name) {
  if (name == "metadata.json") return true;
  // frame_NNNNNN.png
  if (name.size() != 16 || name.compare(0, 6, "frame_") != 0 || name.compare(12, 4, ".png") != 0) {
    return false;
  }
  for (int i = 6; i < 12; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  return true;
}

bool is_png_sequence_folder(const std::string& path) {
  std::error_code ec;
  bool has_metadata = false;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    if (!is_sequence_entry(name) || !entry.is_regular_file(ec) || entry.is_symlink(ec)) return false;
    has_metadata = has_metadata || name == "metadata.json";
  }
  if (ec || !has_metadata) return false;
  const std::string meta = head_bytes((fs::path(path) / "metadata.json").string(), 4096);
  return meta.find("\"vidgraph-png-sequence\"") != std::string::npos;
}

bool has_file_signature(const std::string& path, OutputKind kind) {
  const std::string head = head_bytes(path, 16);
  auto starts = [&](const char* magic, std::size_t n, std::size_t at = 0) {
    return head.size() >= at + n && head.compare(at, n, magic, n) == 0;
  };
  switch (kind) {
    case OutputKind::Mp4: return starts("ftyp", 4, 4);
    case OutputKind::WebM: return starts("\x1a\x45\xdf\xa3", 4);
    case OutputKind::Png: return starts("\x89PNG\r\n\x1a\n", 8);
    case OutputKind::Safetensors: return head.size() >= 9 && head[8] == '{';
    case OutputKind::Json: {
      const auto first = head.find_first_not_of(" \t\r\n");
      return first != std::string::npos && (head[first] == '{' || head[first] == '[');
    }
    case OutputKind::PngSequence: return false;
  }
  return false;
}

// "demo.mp4" → "demo_00002.mp4" for n = 2.
std::string numbered_name(const std::string& path, int n) {
  const fs::path p(path);
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "_%05d", n);
  return (parent_or_current(p) / (p.stem().string() + suffix + p.extension().string())).string();
}

bool process_alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// The PID in ".NAME.tmp-PID-N", or -1 when `entry` is not a temporary of `name`.
long temporary_owner(const std::string& entry, const std::string& name) {
  const std::string prefix = "." + name + ".tmp-";
  if (entry.compare(0, prefix.size(), prefix) != 0) return -1;
  const std::string rest = entry.substr(prefix.size());
  const auto dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || dash + 1 == rest.size()) return -1;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (i != dash && (rest[i] < '0' || rest[i] > '9')) return -1;
  }
  return std::strtol(rest.c_str(), nullptr, 10);
}

std::string exists_message(const std::string& path) {
  return "Output '" + path + "' already exists and was left untouched; choose another name, set "
         "naming to 'increment' to write the next free name, or allow replacing it (naming "
         "'overwrite', or --overwrite).";
}

// Creates `path` exclusively and writes `bytes`, synced; 0 or the errno (the file is removed).
int write_new_file_errno(const std::string& path, const void* bytes, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
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
  if (failure != 0) ::unlink(path.c_str());
  return failure;
}

std::string move_failure(const std::string& to, int error) {
  if (error == ENOTSUP) {
    return "The file system of '" + to + "' can neither rename without replacing nor make hard "
           "links, so Vidgraph cannot publish an output there without risking another file; "
           "choose an output folder on another file system.";
  }
  return "Could not move the finished output to '" + to + "': " + describe_errno(error) + ".";
}

Published replace_output(const std::string& temp, const OutputTarget& target);

// "dev", "proc" or "sys" when `path` (absolute, normal) lies in one of those system folders, else "".
std::string system_folder_of(const fs::path& path) {
  auto it = path.begin();
  if (it == path.end() || *it != "/" || ++it == path.end()) return {};
  const std::string top = it->string();
  return top == "dev" || top == "proc" || top == "sys" ? top : std::string();
}

// Writers write regular files in real folders: "" or why `path` is no such place. Refused: a path
// in /dev, /proc or /sys (as written, or where its symbolic links lead), a parent that exists but
// is not a folder, and a target that exists as a device, FIFO or socket (never a reason to pick
// the next free name: that is how /dev/full became /dev/full_00002).
std::string check_output_place(const std::string& path) {
  std::error_code ec;
  const fs::path written = fs::absolute(fs::path(path), ec).lexically_normal();
  const fs::path real = fs::weakly_canonical(written, ec);
  for (const fs::path& p : {written, ec ? written : real}) {
    if (const std::string top = system_folder_of(p); !top.empty()) {
      return "Output '" + path + "' is inside /" + top + ", which holds devices and system state, not "
             "files; writers write only regular files, so choose a file name in an output folder.";
    }
  }
  const fs::path folder = parent_or_current(fs::path(path));
  struct stat st {};
  if (::stat(folder.c_str(), &st) == 0 ? !S_ISDIR(st.st_mode) : errno == ENOTDIR) {
    return "Output '" + path + "' is inside '" + folder.string() + "', which is not a folder; choose a "
           "file name in a folder.";
  }
  if (lstat_path(path, &st) && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode)) {
    return "Output '" + path + "' is " + describe_entry(st) + ", not a file, and is left untouched; "
           "writers write only regular files, so choose a file name in an output folder.";
  }
  return {};
}

}  // namespace

std::optional<Naming> parse_naming(const std::string& name) {
  if (name == "increment") return Naming::Increment;
  if (name == "fail") return Naming::Fail;
  if (name == "overwrite") return Naming::Overwrite;
  return std::nullopt;
}

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

bool is_output_of_kind(const std::string& path, OutputKind kind) {
  struct stat st {};
  if (!lstat_path(path, &st)) return false;
  if (kind == OutputKind::PngSequence) return S_ISDIR(st.st_mode) && is_png_sequence_folder(path);
  return S_ISREG(st.st_mode) && has_file_signature(path, kind);
}

std::string check_output_target(const OutputTarget& target) {
  const std::string& path = target.path;
  if (path.empty()) return "No output path was given; set the output file name.";
  if (std::string problem = check_output_place(path); !problem.empty()) return problem;
  const fs::path folder = parent_or_current(fs::path(path));
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
  return check_output_conflict(target);
}

std::string check_output_conflict(const OutputTarget& target) {
  const std::string& path = target.path;
  if (std::string problem = check_output_place(path); !problem.empty()) return problem;
  struct stat st {};
  if (!lstat_path(path, &st)) return {};
  if (S_ISDIR(st.st_mode) && target.kind != OutputKind::PngSequence) {
    return "Output '" + path + "' is a folder, and this writer writes a " + kind_name(target.kind) +
           " file; give a file name (for example '" + (fs::path(path) / "out").string() + "').";
  }
  if (target.naming == Naming::Fail) return exists_message(path);
  if (target.naming == Naming::Overwrite && !is_output_of_kind(path, target.kind)) {
    return "Output '" + path + "' exists and is " + describe_entry(st) + " that this writer did "
           "not produce (it replaces only " + kind_name(target.kind) + " outputs), so it is left "
           "untouched; choose another name or set naming to 'increment'.";
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

void remove_stale_temporaries(const std::string& path) {
  const fs::path target(path);
  const std::string name = target.filename().string();
  const std::string folder = parent_or_current(target).string();
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) return;
  std::vector<std::string> stale;
  while (const dirent* entry = ::readdir(dir)) {
    const long pid = temporary_owner(entry->d_name, name);
    if (pid > 0 && pid != ::getpid() && !process_alive(pid)) {
      stale.push_back((fs::path(folder) / entry->d_name).string());
    }
  }
  ::closedir(dir);
  for (const auto& entry : stale) {
    if (remove_temporary(entry)) {
      nodes_logger()->info("Removed '{}', left by a writer that was stopped.", entry);
    }
  }
}

int move_no_replace(const std::string& from, const std::string& to, bool use_fallback) {
  if (!use_fallback) {
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      nodes_logger()->warn("The file system of '{}' cannot rename without replacing; outputs are "
                           "published with a hard link (files) or an exclusive folder instead.", to);
    }
  }
  struct stat st {};
  if (!lstat_path(from, &st)) return errno;
  if (S_ISDIR(st.st_mode)) {
    // Claim the name with an exclusive mkdir, then replace our own empty folder.
    if (::mkdir(to.c_str(), 0755) != 0) return errno;
    if (::rename(from.c_str(), to.c_str()) != 0) {
      const int error = errno;
      ::rmdir(to.c_str());
      return error;
    }
    return 0;
  }
  if (::link(from.c_str(), to.c_str()) != 0) {
    return errno == EPERM || errno == EOPNOTSUPP ? ENOTSUP : errno;  // no hard links here
  }
  ::unlink(from.c_str());
  return 0;
}

bool remove_temporary(const std::string& path) {
  struct stat st {};
  if (!lstat_path(path, &st)) return false;
  if (!S_ISDIR(st.st_mode)) return ::unlink(path.c_str()) == 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.is_regular_file(ec) && !entry.is_symlink(ec) &&
        is_sequence_entry(entry.path().filename().string())) {
      ::unlink(entry.path().c_str());
    }
  }
  return ::rmdir(path.c_str()) == 0;  // fails, and keeps it, if anything else is inside
}

Published publish_output(const std::string& temp, const OutputTarget& target) {
  const std::string& path = target.path;
  if (target.naming == Naming::Overwrite) return replace_output(temp, target);
  const int tries = target.naming == Naming::Increment ? kMaxIncrement : 1;
  for (int n = 1; n <= tries; ++n) {
    const std::string candidate = n == 1 ? path : numbered_name(path, n);
    struct stat st {};
    if (n > 1 && lstat_path(candidate, &st)) continue;
    const int error = move_no_replace(temp, candidate);
    if (error == 0) return {candidate, {}};
    if (error != EEXIST && error != ENOTEMPTY) return {{}, move_failure(candidate, error)};
    // Only an earlier output (a file or folder) is a reason to take the next name; a device or FIFO
    // that appeared at the target is an error.
    if (n == 1) {
      if (std::string problem = check_output_place(path); !problem.empty()) return {{}, problem};
    }
  }
  if (target.naming == Naming::Fail) return {{}, exists_message(path)};
  return {{}, "Every name from '" + path + "' to '" + numbered_name(path, kMaxIncrement) +
                  "' is taken; choose another name or folder."};
}

namespace {

Published replace_output(const std::string& temp, const OutputTarget& target) {
  const std::string& path = target.path;
  const int first = move_no_replace(temp, path);
  if (first == 0) return {path, {}};
  if (first != EEXIST && first != ENOTEMPTY) return {{}, move_failure(path, first)};
  if (std::string problem = check_output_conflict(target); !problem.empty()) return {{}, problem};
  if (target.kind != OutputKind::PngSequence) {
    // rename(2) replaces a file atomically and refuses (EISDIR) if a folder took its place.
    if (std::rename(temp.c_str(), path.c_str()) != 0) {
      return {{}, "Could not replace '" + path + "': " + describe_errno(errno) + "."};
    }
    return {path, {}};
  }
  // A PNG-sequence folder of ours: set it aside, move the new one in, then delete the old frames.
  const std::string old = temporary_sibling(path);
  if (::rename(path.c_str(), old.c_str()) != 0) {
    return {{}, "Could not replace '" + path + "': " + describe_errno(errno) + "."};
  }
  if (const int error = move_no_replace(temp, path); error != 0) {
    ::rename(old.c_str(), path.c_str());
    return {{}, "Could not replace '" + path + "': " + describe_errno(error) + "."};
  }
  remove_temporary(old);
  return {path, {}};
}

}  // namespace

std::string write_new_file(const std::string& path, const void* bytes, std::size_t size) {
  const int error = write_new_file_errno(path, bytes, size);
  return error == 0 ? std::string() : "Could not write '" + path + "': " + describe_errno(error) + ".";
}

Published write_file_atomically(const OutputTarget& target, const void* bytes, std::size_t size) {
  if (std::string error = check_output_target(target); !error.empty()) return {{}, error};
  remove_stale_temporaries(target.path);
  const std::string temp = temporary_sibling(target.path);
  if (const int error = write_new_file_errno(temp, bytes, size); error != 0) {
    return {{}, "Could not write '" + target.path + "': " + describe_errno(error) + "."};
  }
  Published published = publish_output(temp, target);
  if (!published.error.empty()) remove_temporary(temp);
  return published;
}

}  // namespace vidgraph::nodes
