// The run history of an output folder: one JSON object per line in <folder>/vidgraph-history.jsonl,
// appended when a run ends (vidgraph-run; the editor), read back to list the runs, re-open a run's
// workflow with the values it ran with, and re-run or compare it.
//
// An entry: {"format": "vidgraph-run", "version": 1, "started": "2026-12-06T23:01:02Z",
// "seconds", "status" ("succeeded", "failed", "cancelled"), "source" (the workflow file, or ""),
// "error" (the first error, or ""), "nodes": [{"id", "type", "outcome", "seconds"}], "files":
// [{"node", "path"}] (what the nodes wrote, NodeContext::wrote), "workflow": the workflow as run
// (overrides applied; the object a .vgflow file holds)}.
//
// Contract:
//   - append_run_history (creating the folder when needed) adds one line with a single write() to
//     the file opened O_APPEND under an exclusive flock: runs ending together in one folder never
//     interleave, and earlier lines are never rewritten. A history name that is a link or not a
//     regular file is refused.
//   - read_run_history returns the entries oldest first. A line that is not an entry (a line torn by a
//     crash, an edit) is skipped and counted; a missing file is an empty history; a file above
//     kMaxRunHistoryBytes is refused (it is read whole).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine.h"
#include "result.h"

namespace vidgraph::engine {

inline constexpr char kRunHistoryFile[] = "vidgraph-history.jsonl";
inline constexpr std::int64_t kMaxRunHistoryBytes = std::int64_t(256) << 20;

// The entry of a finished run. `workflow_json`: the run's workflow (RunOptions::workflow_json);
// `source`: the file it came from.
nlohmann::json run_history_entry(const RunResult& result, const std::string& workflow_json, const std::string& source,
                                 std::chrono::system_clock::time_point started);

Status append_run_history(const std::string& folder, const nlohmann::json& entry);

struct RunHistory {
  std::vector<nlohmann::json> runs;  // oldest first
  int skipped = 0;                   // lines that were not entries
};
Result<RunHistory> read_run_history(const std::string& folder);

// How two runs' workflows differ, a line each, for comparing their settings: "sampler.steps: 4 -> 8"
// for a param whose value differs (or that one side lacks: "(unset)"), "node 'x' (Type) only in
// the first/second run" for a node on one side. Nodes by id, params by name, in the first run's
// order then the second's. Empty when the settings are the same.
std::vector<std::string> param_differences(const nlohmann::json& first, const nlohmann::json& second);

}  // namespace vidgraph::engine
