// Runs a sweep: plan, per-run folders, one shared Engine, summary (see sweep_command.h).
#include "sweep_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "engine/engine.h"
#include "engine/workflow_file.h"
#include "run_cli.h"
#include "run_driver.h"
#include "run_logging.h"
#include "run_signals.h"
#include "sweep_plan.h"
#include "sweep_report.h"

namespace vidgraph::cli {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kSweepFile = "sweep.json";

// Everything the sweep needs before its first run, or the exit code when it must not start.
struct Prepared {
  SweepPlan plan;
  std::string output_dir;
  bool shared = false;  // the workflow came inside a video or PNG sequence (load_flow): untrusted
  int refusal = kExitOk;
};

// True (after reporting why) when the output folder cannot take this sweep.
bool check_output_dir(const RunArgs& args, const Prepared& p) {
  const fs::path summary = fs::path(p.output_dir) / kSweepFile;
  if (fs::exists(summary) && !args.overwrite) {
    report_error(args, "'" + summary.string() + "' exists (an earlier sweep wrote there); choose another " +
                           "--output-dir or pass --overwrite");
    return true;
  }
  for (const auto& run : p.plan.runs) {
    const fs::path folder = fs::path(p.output_dir) / run.folder;
    if (fs::exists(folder) && !fs::is_directory(folder)) {
      report_error(args, "'" + folder.string() + "' is a file, but run " + std::to_string(run.index) +
                             " needs it as its folder; move it away or choose another --output-dir");
      return true;
    }
  }
  return false;
}

Prepared prepare(const RunArgs& args, const engine::Registry& registry) {
  Prepared p;
  p.refusal = kExitInvalid;
  engine::GraphDocument as_loaded;
  auto doc = load_flow(args, registry, &p.shared, &as_loaded);
  if (!doc.ok()) {
    report_error(args, doc.error().to_string());
    return p;
  }
  auto sweeps = sweeps_on_inner_params(as_loaded, args.sweeps);
  if (!sweeps.ok()) {
    report_error(args, sweeps.error().to_string());
    return p;
  }
  p.plan = plan_sweep(*doc, registry, *sweeps, args.sets, args.targets);
  for (const auto& w : p.plan.warnings) std::fprintf(stderr, "warning: %s\n", w.to_string().c_str());
  if (!p.plan.ok()) {
    for (const auto& e : p.plan.errors) report_error(args, e.to_string());
    std::fprintf(stderr, "nothing ran: fix the --sweep options or the workflow\n");
    return p;
  }
  std::string created;
  auto out = prepare_output_dir(args, &created);
  if (!out.ok()) {
    report_error(args, out.error().message);
    return p;
  }
  p.output_dir = *out;
  if (check_output_dir(args, p)) {
    remove_created_output_dir(p.output_dir, created);  // exit 2 leaves no new folder behind
    return p;
  }
  p.refusal = kExitOk;
  return p;
}

// Regular files under `folder`, relative to `root`, sorted.
std::vector<std::string> files_under(const fs::path& folder, const fs::path& root) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), root, ec).generic_string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

json run_started_json(const SweepRunRecord& record, std::size_t count, const std::string& dir) {
  return {{"event", "sweep_run_started"}, {"run_index", record.index}, {"runs", count},
          {"settings", record.settings}, {"output_dir", dir}};
}

void print_json_line(const json& j) {
  std::printf("%s\n", j.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

// One run of the sweep on the shared engine; fills `record` (status, code, time, outputs).
void run_one(const RunArgs& args, const engine::RunOptions& defaults, engine::Engine& engine, const SweepRun& run,
             const Prepared& p, std::size_t count, SweepRunRecord& record) {
  const std::string& output_dir = p.output_dir;
  const fs::path folder = fs::path(output_dir) / run.folder;
  if (args.json_events) {
    print_json_line(run_started_json(record, count, folder.string()));
  } else {
    print_sweep_run_header(stdout, record, count, folder.string());
  }
  std::error_code ec;
  fs::create_directories(folder, ec);
  engine::RunRequest request = base_request(args, defaults, p.shared);
  request.options.output_dir = folder.string();
  request.options.workflow_json = engine::save_workflow_string(run.document);
  auto renderer = pick_renderer(args, json{{"run_index", run.index}});
  const auto subscription = engine.events().subscribe([&](const engine::Event& e) { renderer->on_event(e); });
  route_logs_to_bus(engine.events());
  const std::string workflow_json = request.options.workflow_json;
  const auto started = std::chrono::system_clock::now();
  engine::RunResult result = ec ? engine::RunResult{} : drive_run(engine, run.document, std::move(request), *renderer);
  if (ec) {
    result.status = engine::RunStatus::Failed;
    result.errors.push_back(engine::make_error("cannot make the run's folder '" + folder.string() + "': " + ec.message()));
  }
  route_logs_to_stderr();
  engine.events().unsubscribe(subscription);
  record_run(args, output_dir, workflow_json, result, started);  // the sweep's folder: one history of its runs
  record.exit_code = exit_code_for(result.status);
  renderer->finish(result, record.exit_code);
  record.status = engine::to_string(result.status);
  record.seconds = result.seconds;
  if (!result.errors.empty()) record.message = result.errors.front().to_string();
  record.outputs = files_under(folder, output_dir);
  if (fs::is_empty(folder, ec)) fs::remove(folder, ec);  // only an empty folder: nothing else is touched
}

std::string not_run_text(std::size_t first, std::size_t count) {
  if (first > count) return "";
  if (first == count) return "; run " + std::to_string(count) + " was not run";
  return "; runs " + std::to_string(first) + "-" + std::to_string(count) + " were not run";
}

// Writes sweep.json (once any run succeeded), prints the summary; returns the sweep's exit code.
int finish_sweep(const RunArgs& args, SweepReport& report) {
  const bool any_output = std::any_of(report.runs.begin(), report.runs.end(),
                                      [](const SweepRunRecord& r) { return r.status == "succeeded"; });
  if (any_output) {
    const fs::path file = fs::path(report.output_dir) / kSweepFile;
    const std::string text = sweep_report_json(report).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    if (auto s = engine::write_file_atomic(file.string(), text); !s.ok()) {
      report_error(args, "cannot write the sweep summary '" + file.string() + "': " + s.error().message);
      if (report.exit_code == kExitOk) {
        report.exit_code = kExitNodeFailed;
        report.status = "failed";
      }
    }
  }
  if (args.json_events) {
    json line = sweep_report_json(report);
    line["event"] = "sweep_summary";
    line["output_dir"] = report.output_dir;
    print_json_line(line);
  } else {
    print_sweep_summary(stdout, report);
  }
  if (args.json_events && !report.stop_message.empty()) std::fprintf(stderr, "%s\n", report.stop_message.c_str());
  return report.exit_code;
}

}  // namespace

int command_sweep(const RunArgs& args, const RunSession& session) {
  const engine::Registry& registry = *session.registry;
  Prepared p = prepare(args, registry);
  if (p.refusal != kExitOk) return p.refusal;
  SweepReport report;
  report.workflow = fs::absolute(args.flow).lexically_normal().string();
  report.output_dir = p.output_dir;
  report.sets = args.sets;
  report.axes = p.plan.axes;
  for (const auto& run : p.plan.runs) {
    SweepRunRecord record;
    record.index = run.index;
    record.folder = run.folder;
    record.settings = run.settings_json();
    record.settings_text = run.settings_text;
    report.runs.push_back(std::move(record));
  }
  const auto t0 = Clock::now();
  const std::size_t count = p.plan.runs.size();
  engine::Engine engine(registry, session.engine);
  install_interrupt_handler();
  for (std::size_t i = 0; i < count; ++i) {
    SweepRunRecord& record = report.runs[i];
    if (interrupt_requested()) {
      report.exit_code = kExitCancelled;
      report.stop_message = "cancelled before run " + std::to_string(i + 1) + not_run_text(i + 1, count);
      break;
    }
    run_one(args, session.run_defaults, engine, p.plan.runs[i], p, count, record);
    if (record.exit_code != kExitOk) {
      report.exit_code = record.exit_code;
      report.stop_message = (record.exit_code == kExitCancelled ? "cancelled during run " : "stopped: run ") +
                            std::to_string(i + 1) + (record.exit_code == kExitCancelled ? "" : " " + record.status) +
                            not_run_text(i + 2, count);
      break;
    }
  }
  remove_interrupt_handler();
  report.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  report.status = report.exit_code == kExitOk ? "succeeded"
                  : report.exit_code == kExitCancelled ? "cancelled"
                                                      : "failed";
  return finish_sweep(args, report);
}

}  // namespace vidgraph::cli
