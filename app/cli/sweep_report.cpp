// Sweep summary: table, JSON and sweep.json content (see sweep_report.h).
#include "sweep_report.h"

#include <algorithm>

#include "run_render.h"
#include "engine/listing.h"

namespace vidgraph::cli {

using nlohmann::json;

json sweep_report_json(const SweepReport& report) {
  json axes = json::array();
  for (const auto& axis : report.axes) axes.push_back({{"key", axis.key()}, {"values", axis.values}});
  json runs = json::array();
  for (const auto& r : report.runs) {
    json run{{"run", r.index},         {"folder", r.folder},       {"settings", r.settings},
             {"status", r.status},     {"exit_code", r.exit_code}, {"seconds", r.seconds},
             {"outputs", r.outputs}};
    if (!r.message.empty()) run["message"] = r.message;
    runs.push_back(std::move(run));
  }
  json j{{"format", "vidgraph-sweep"}, {"version", 1},          {"workflow", report.workflow},
         {"sets", report.sets},        {"sweep", axes},         {"status", report.status},
         {"exit_code", report.exit_code}, {"seconds", report.seconds}, {"runs", runs}};
  if (!report.stop_message.empty()) j["message"] = report.stop_message;
  return j;
}

void print_sweep_summary(std::FILE* out, const SweepReport& report) {
  const auto succeeded = std::count_if(report.runs.begin(), report.runs.end(),
                                       [](const SweepRunRecord& r) { return r.status == "succeeded"; });
  std::fprintf(out, "\nSweep: %ld of %zu run(s) succeeded in %s; outputs under %s\n", static_cast<long>(succeeded),
               report.runs.size(), format_duration(report.seconds).c_str(), report.output_dir.c_str());
  std::vector<std::string> outputs;
  std::size_t w_status = 6, w_outputs = 7;
  for (const auto& r : report.runs) {
    const std::string list = engine::comma_list(r.outputs);
    outputs.push_back(list.empty() ? "-" : list);
    w_status = std::max(w_status, r.status.size());
    w_outputs = std::max(w_outputs, outputs.back().size());
  }
  std::fprintf(out, "  %-4s  %-*s  %-9s  %-*s  %s\n", "run", int(w_status), "status", "time", int(w_outputs), "outputs",
               "settings");
  for (std::size_t i = 0; i < report.runs.size(); ++i) {
    const auto& r = report.runs[i];
    const std::string time = r.status == "not_run" ? "-" : format_duration(r.seconds);
    std::fprintf(out, "  %-4d  %-*s  %-9s  %-*s  %s\n", r.index, int(w_status), r.status.c_str(), time.c_str(),
                 int(w_outputs), outputs[i].c_str(), r.settings_text.c_str());
  }
  if (!report.stop_message.empty()) std::fprintf(out, "%s\n", report.stop_message.c_str());
  std::fflush(out);
}

void print_sweep_run_header(std::FILE* out, const SweepRunRecord& run, std::size_t count, const std::string& dir) {
  std::fprintf(out, "\n=== run %d/%zu: %s -> %s\n", run.index, count, run.settings_text.c_str(), dir.c_str());
  std::fflush(out);
}

}  // namespace vidgraph::cli
