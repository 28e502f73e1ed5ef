// Implements run_history.h over POSIX files (O_APPEND, flock).
#include "run_history.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace vidgraph::engine {

namespace {

using nlohmann::json;

std::string history_path(const std::string& folder) {
  return (std::filesystem::path(folder) / kRunHistoryFile).string();
}

std::string utc_text(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// Closes the descriptor (which drops its flock) on every path out.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

Error write_error(const std::string& path, int error_number) {
  return make_error("Could not add the run to the history '" + path + "': " + std::strerror(error_number) + ".");
}

// The workflow's nodes by id, in file order.
std::vector<std::pair<std::string, const json*>> nodes_of(const json& workflow) {
  std::vector<std::pair<std::string, const json*>> nodes;
  const auto list = workflow.find("nodes");
  if (!workflow.is_object() || list == workflow.end() || !list->is_array()) return nodes;
  for (const json& n : *list) {
    if (n.is_object() && n.contains("id") && n["id"].is_string()) nodes.emplace_back(n["id"].get<std::string>(), &n);
  }
  return nodes;
}

const json* find_node(const std::vector<std::pair<std::string, const json*>>& nodes, const std::string& id) {
  for (const auto& [node_id, node] : nodes) {
    if (node_id == id) return node;
  }
  return nullptr;
}

std::string value_text(const json& params, const std::string& name) {
  const auto it = params.is_object() ? params.find(name) : params.end();
  return it == params.end() ? "(unset)" : it->dump(-1, ' ', false, json::error_handler_t::replace);
}

// "sampler.steps: 4 -> 8" for each param of the two nodes that differs, first's names then second's.
void param_lines(const std::string& id, const json& a, const json& b, std::vector<std::string>& lines) {
  const json none = json::object();
  const json& pa = a.contains("params") ? a["params"] : none;
  const json& pb = b.contains("params") ? b["params"] : none;
  std::vector<std::string> names;
  for (const json* params : {&pa, &pb}) {
    if (!params->is_object()) continue;
    for (const auto& item : params->items()) {
      if (std::find(names.begin(), names.end(), item.key()) == names.end()) names.push_back(item.key());
    }
  }
  for (const std::string& name : names) {
    const std::string before = value_text(pa, name);
    const std::string after = value_text(pb, name);
    if (before != after) lines.push_back(id + "." + name + ": " + before + " -> " + after);
  }
}

std::string type_of(const json& node) {
  return node.contains("type") && node["type"].is_string() ? node["type"].get<std::string>() : std::string("?");
}

}  // namespace

std::vector<std::string> param_differences(const json& first, const json& second) {
  const auto a = nodes_of(first);
  const auto b = nodes_of(second);
  std::vector<std::string> lines;
  for (const auto& [id, node] : a) {
    if (const json* other = find_node(b, id)) {
      param_lines(id, *node, *other, lines);
    } else {
      lines.push_back("node '" + id + "' (" + type_of(*node) + ") only in the first run");
    }
  }
  for (const auto& [id, node] : b) {
    if (find_node(a, id) != nullptr) continue;
    lines.push_back("node '" + id + "' (" + type_of(*node) + ") only in the second run");
  }
  return lines;
}

json run_history_entry(const RunResult& result, const std::string& workflow_json, const std::string& source,
                       std::chrono::system_clock::time_point started) {
  json nodes = json::array();
  for (const NodeRunStat& n : result.nodes) {
    nodes.push_back(
        {{"id", n.node_id}, {"type", n.node_type}, {"outcome", to_string(n.outcome)}, {"seconds", n.seconds}});
  }
  json files = json::array();
  for (const WrittenFile& f : result.files) files.push_back({{"node", f.node_id}, {"path", f.path}});
  json workflow = json::parse(workflow_json, nullptr, false);
  if (workflow.is_discarded()) workflow = nullptr;
  return {{"format", "vidgraph-run"},
          {"version", 1},
          {"started", utc_text(started)},
          {"seconds", result.seconds},
          {"status", to_string(result.status)},
          {"source", source},
          {"error", result.errors.empty() ? std::string() : result.errors.front().to_string()},
          {"nodes", std::move(nodes)},
          {"files", std::move(files)},
          {"workflow", std::move(workflow)}};
}

Status append_run_history(const std::string& folder, const json& entry) {
  const std::string path = history_path(folder);
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);  // the editor's output folder may not exist yet
  Descriptor file;
  file.fd = ::open(path.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (file.fd < 0) return write_error(path, errno);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error("The run history '" + path + "' is not a regular file; remove or rename it.");
  }
  if (::flock(file.fd, LOCK_EX) != 0) return write_error(path, errno);
  // A line torn by a run killed mid-write ends without a newline: this entry starts on its own line.
  char last = '\n';
  if (::fstat(file.fd, &st) == 0 && st.st_size > 0 && ::pread(file.fd, &last, 1, st.st_size - 1) != 1) last = '\n';
  const std::string text = entry.dump(-1, ' ', false, json::error_handler_t::replace);
  const std::string line = (last == '\n' ? "" : "\n") + text + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(file.fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return write_error(path, n < 0 ? errno : EIO);
    done += static_cast<std::size_t>(n);
  }
  return {};
}

Result<RunHistory> read_run_history(const std::string& folder) {
  const std::string path = history_path(folder);
  RunHistory history;
  std::error_code ec;
  const auto status = std::filesystem::symlink_status(path, ec);
  if (ec || status.type() == std::filesystem::file_type::not_found) return history;
  if (status.type() != std::filesystem::file_type::regular) {
    return make_error("The run history '" + path + "' is not a regular file.");
  }
  if (static_cast<std::int64_t>(std::filesystem::file_size(path, ec)) > kMaxRunHistoryBytes) {
    return make_error("The run history '" + path + "' is larger than 256 MiB; move it aside to start a new one.");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error("Could not read the run history '" + path + "'.");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    json entry = json::parse(line, nullptr, false);
    if (entry.is_object() && entry.contains("format") && entry["format"] == "vidgraph-run") {
      history.runs.push_back(std::move(entry));
    } else {
      history.skipped += 1;
    }
  }
  return history;
}

}  // namespace vidgraph::engine
