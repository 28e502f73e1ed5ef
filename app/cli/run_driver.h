// What every `vidgraph-run run` needs, whether it runs the workflow once or sweeps it: loading the
// flow with --set applied, the output folder, the renderer for the output style, and driving one
// engine run to its end with Ctrl-C turned into a cancel.
//
// Interrupts: the caller installs the handler (run_signals.h) around all its runs, so a Ctrl-C
// between two runs of a sweep is seen too; drive_run only polls it.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/registry.h"
#include "run_args.h"
#include "run_cli.h"
#include "run_render.h"

namespace vidgraph::cli {

// "error: <message>" on stderr.
void print_error(const std::string& message);
// {"event": "error", "message": ...} on stdout (the --json-events form of an error before any run).
void json_error_line(const std::string& message);
// Both of the above, the JSON line only with --json-events.
void report_error(const RunArgs& args, const std::string& message);

// Loads args.flow (warnings to stderr), upgrades its node types and applies args.sets, in the
// engine's order (engine::upgrade_and_apply_overrides). An output Vidgraph wrote (MP4/WebM,
// PNG-sequence folder) gives the workflow embedded in it, when args.embedded_workflow is set;
// `shared` (optional) then receives true: the workflow came inside a file, untrusted (base_request).
// `as_loaded` (optional) receives the document before upgrades, --set and subgraph expansion.
engine::Result<engine::GraphDocument> load_flow(const RunArgs& args, const engine::Registry& registry,
                                                bool* shared = nullptr, engine::GraphDocument* as_loaded = nullptr);
// The absolute, normalised folder of a file.
std::string absolute_dir_of(const std::string& file);
// args.output_dir (or the current folder) made absolute and created; an error names the folder.
// `created` (optional) receives the outermost folder this call created, "" when it existed.
engine::Result<std::string> prepare_output_dir(const RunArgs& args, std::string* created = nullptr);
// Undoes prepare_output_dir when nothing ran (exit 2 leaves no new folder behind): removes
// output_dir and its parents up to `created`, each only while it is empty.
void remove_created_output_dir(const std::string& output_dir, const std::string& created);
// The request every run of args starts from: the session's run defaults, args' targets, workflow
// folder and overwrite; output_dir and workflow_json are the caller's. A `shared` workflow (load_flow)
// writes only inside the output folder unless args.allow_outside_writes.
engine::RunRequest base_request(const RunArgs& args, const engine::RunOptions& defaults, bool shared);

// The engine settings of args (--cache-budget).
engine::EngineConfig engine_config(const RunArgs& args);
// A session of `registry` with args' settings (--cache-budget, --resources), for runners whose node
// types need no nodes::Session.
RunSession session_from_args(std::shared_ptr<const engine::Registry> registry, const RunArgs& args);
int exit_code_for(engine::RunStatus status);
// json when args.json_events (each line gets `tag`'s fields), else tty on a terminal, else plain.
std::unique_ptr<RunRenderer> pick_renderer(const RunArgs& args, const nlohmann::json& tag = nlohmann::json::object());

// Appends a run that ran (not an invalid one) to `folder`'s history (engine/run_history.h), unless
// --no-history; a history that cannot be written is a warning on stderr: the run's outputs stand.
void record_run(const RunArgs& args, const std::string& folder, const std::string& workflow_json,
                const engine::RunResult& result, std::chrono::system_clock::time_point started);

// Runs `doc` on `engine` until the run ends; the first interrupt cancels it (renderer.on_interrupt).
engine::RunResult drive_run(engine::Engine& engine, const engine::GraphDocument& doc, engine::RunRequest request,
                            RunRenderer& renderer);

}  // namespace vidgraph::cli
