// What a sweep reports when it ends: one record per planned run, shown as a table (human renderers),
// as the {"event": "sweep_summary"} line (--json-events), and written to <output-dir>/sweep.json.
//
// sweep.json / sweep_summary (version 1):
//   {"format": "vidgraph-sweep", "version": 1, "workflow": "/abs/flow.vgflow", "sets": ["n.p=v", ...],
//    "sweep": [{"key": "sampler.seed", "values": [1, 2]}], "status": "succeeded|failed|cancelled",
//    "exit_code": 0, "seconds": 4.2, "message": "why the sweep stopped early (absent when it did not)",
//    "runs": [{"run": 1, "folder": "run-1", "settings": {"sampler.seed": 1},
//              "status": "succeeded|failed|cancelled|invalid|not_run", "exit_code": 0, "seconds": 2.1,
//              "outputs": ["run-1/demo.mp4"], "message": "first error (failed runs only)"}, ...]}
// Output paths are relative to the output folder; the summary line also has "event" and "output_dir".
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep_plan.h"

namespace vidgraph::cli {

struct SweepRunRecord {
  int index = 0;
  std::string folder;
  std::string settings_text;
  nlohmann::json settings = nlohmann::json::object();
  std::string status = "not_run";
  int exit_code = 0;
  double seconds = 0.0;
  std::vector<std::string> outputs;  // relative to the sweep's output folder, sorted
  std::string message;               // first error of a failed or invalid run
};

struct SweepReport {
  std::string workflow;    // absolute path of the flow
  std::string output_dir;  // absolute
  std::vector<std::string> sets;
  std::vector<SweepAxis> axes;
  std::vector<SweepRunRecord> runs;  // every planned run, in order
  std::string status = "succeeded";  // of the sweep: succeeded, failed, cancelled
  int exit_code = 0;
  double seconds = 0.0;
  std::string stop_message;          // why runs were left out; empty when all ran
};

// The sweep.json object (see above).
nlohmann::json sweep_report_json(const SweepReport& report);
// The per-run table and the stop message, for the tty and plain renderers.
void print_sweep_summary(std::FILE* out, const SweepReport& report);
// "=== run 2/4: sampler.seed=2 -> /out/run-2" before each run, for the human renderers.
void print_sweep_run_header(std::FILE* out, const SweepRunRecord& run, std::size_t count, const std::string& dir);

}  // namespace vidgraph::cli
