// How vidgraph-run shows a run: one renderer per output style, fed by the engine's event bus.
//
//   tty:   one live progress bar for the running node (value/max, rate, ETA, text), a line per
//          finished node, log lines above the bar, and a summary table (per-node time, cached or run).
//   plain: one line per event (progress throttled to ~10% steps), then the same summary; for logs
//          and pipes.
//   json:  one JSON object per event per line (engine::event_to_json), then a final
//          {"event": "summary", ...} line with status, exit code, errors, warnings and per-node times.
//          A sweep gives each run's renderer a `tag` ({"run_index": i}) whose fields every line carries.
// on_event runs on the engine's worker thread; on_interrupt and finish on the main thread.
#pragma once

#include <cstdio>
#include <memory>

#include "engine/engine.h"
#include "engine/events.h"

namespace vidgraph::cli {

class RunRenderer {
 public:
  virtual ~RunRenderer() = default;
  virtual void on_event(const engine::Event& event) = 0;
  virtual void on_interrupt() = 0;
  virtual void finish(const engine::RunResult& result, int exit_code) = 0;
};

std::unique_ptr<RunRenderer> make_tty_renderer(std::FILE* out, bool verbose);
std::unique_ptr<RunRenderer> make_plain_renderer(std::FILE* out, bool verbose);
std::unique_ptr<RunRenderer> make_json_renderer(std::FILE* out, bool verbose,
                                                const nlohmann::json& tag = nlohmann::json::object());

// "1.23 s", "2:05", "1:02:03".
std::string format_duration(double seconds);
// The per-node summary table (and errors) after a run, for the human renderers.
void print_run_summary(std::FILE* out, const engine::RunResult& result);
// The summary line of the json renderer.
nlohmann::json run_summary_json(const engine::RunResult& result, int exit_code);

}  // namespace vidgraph::cli
