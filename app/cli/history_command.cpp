// Implements history_command.h.
#include "history_command.h"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/run_history.h"
#include "run_cli.h"

namespace vidgraph::cli {

namespace {

using nlohmann::json;

std::string text_of(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double number_of(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_number() ? it->get<double>() : 0.0;
}

// "out/a.mp4, out/b.png (+3 more)": what a run wrote, in a line.
std::string files_text(const json& entry) {
  const auto files = entry.find("files");
  if (files == entry.end() || !files->is_array() || files->empty()) return "-";
  std::string text;
  std::size_t shown = 0;
  for (const json& f : *files) {
    if (shown == 2) break;
    text += (shown++ ? ", " : "") + text_of(f, "path");
  }
  if (files->size() > shown) text += " (+" + std::to_string(files->size() - shown) + " more)";
  return text;
}

void print_list(const engine::RunHistory& history) {
  std::printf("%4s  %-20s  %-9s  %9s  %s\n", "run", "started (UTC)", "status", "seconds", "files");
  for (std::size_t i = 0; i < history.runs.size(); ++i) {
    const json& r = history.runs[i];
    std::printf("%4zu  %-20s  %-9s  %9.1f  %s\n", i + 1, text_of(r, "started").c_str(), text_of(r, "status").c_str(),
                number_of(r, "seconds"), files_text(r).c_str());
    if (const std::string error = text_of(r, "error"); !error.empty()) std::printf("      %s\n", error.c_str());
  }
}

// Run n's entry (1-based), or nullptr after saying what runs there are.
const json* run_of(const engine::RunHistory& history, int n, const std::string& folder) {
  if (n >= 1 && n <= int(history.runs.size())) return &history.runs[n - 1];
  std::fprintf(stderr, "error: the history in '%s' has runs 1 to %zu; there is no run %d.\n", folder.c_str(),
               history.runs.size(), n);
  return nullptr;
}

int print_differences(const engine::RunHistory& history, int a, int b, const std::string& folder) {
  const json* first = run_of(history, a, folder);
  const json* second = first ? run_of(history, b, folder) : nullptr;
  if (second == nullptr) return kExitInvalid;
  const std::vector<std::string> lines = engine::param_differences((*first)["workflow"], (*second)["workflow"]);
  if (lines.empty()) std::printf("Runs %d and %d ran with the same settings.\n", a, b);
  for (const std::string& line : lines) std::printf("%s\n", line.c_str());
  return kExitOk;
}

}  // namespace

int command_history(const RunArgs& args) {
  const std::string folder = args.history_dir.empty() ? std::string(".") : args.history_dir;
  auto history = engine::read_run_history(folder);
  if (!history.ok()) {
    std::fprintf(stderr, "error: %s\n", history.error().message.c_str());
    return kExitInvalid;
  }
  if (history->skipped > 0) {
    std::fprintf(stderr, "warning: %d line(s) of the history in '%s' are not runs and were skipped.\n",
                 history->skipped, folder.c_str());
  }
  if (history->runs.empty()) {
    std::fprintf(stderr, "error: no run history in '%s' (runs write %s into their --output-dir).\n", folder.c_str(),
                 engine::kRunHistoryFile);
    return kExitInvalid;
  }
  if (args.history_diff.size() == 2) {
    return print_differences(*history, args.history_diff[0], args.history_diff[1], folder);
  }
  if (args.history_workflow != 0) {
    const int n = args.history_workflow;
    const json* run = run_of(*history, n, folder);
    if (run == nullptr) return kExitInvalid;
    const json& workflow = (*run)["workflow"];
    if (!workflow.is_object()) {
      std::fprintf(stderr, "error: run %d of the history in '%s' kept no workflow.\n", n, folder.c_str());
      return kExitInvalid;
    }
    std::printf("%s\n", workflow.dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  if (args.json) {
    std::printf("%s\n", json(history->runs).dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    print_list(*history);
  }
  return kExitOk;
}

}  // namespace vidgraph::cli
