// Shared pieces of `vidgraph-run run` (see run_driver.h).
#include "run_driver.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "interop/comfy_import.h"
#include "engine/overrides.h"
#include "engine/run_history.h"
#include "engine/workflow_file.h"
#include "run_cli.h"
#include "run_signals.h"

namespace vidgraph::cli {

namespace fs = std::filesystem;
using nlohmann::json;

void print_error(const std::string& message) { std::fprintf(stderr, "error: %s\n", message.c_str()); }

void json_error_line(const std::string& message) {
  std::printf("%s\n",
              json{{"event", "error"}, {"message", message}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

void report_error(const RunArgs& args, const std::string& message) {
  print_error(message);
  if (args.json_events) json_error_line(message);
}

// args.flow read as a workflow file, or the workflow embedded in a Vidgraph output. `shared` is set
// when args.flow is such an output (a video, a PNG sequence), even when it turns out to be a
// workflow file under an odd name, and for a ComfyUI workflow (most are downloaded): none is a
// .vgflow the user made.
engine::Result<engine::LoadedWorkflow> load_workflow(const RunArgs& args, const engine::Registry& registry,
                                                     bool* shared) {
  const engine::LoadOptions options{&registry, nullptr};
  *shared = false;
  if (args.embedded_workflow) {
    if (auto embedded = args.embedded_workflow(args.flow)) {
      *shared = true;
      if (embedded->ok()) {
        return engine::load_workflow_string(embedded->value(), options, args.flow + " (its embedded workflow)");
      }
      auto as_file = engine::load_workflow_file(args.flow, options);  // a workflow under an odd name?
      if (as_file.ok()) return as_file;
      return engine::make_error(as_file.error().message + ". Nor does it hold a workflow to read back: " +
                                embedded->error().message);
    }
  }
  // Read once: a ComfyUI workflow (UI or API JSON, recognised by content) is imported, anything
  // else is read as a Vidgraph workflow. The file is only read.
  auto text = engine::read_workflow_file(args.flow);
  if (!text.ok()) return text.error();
  if (auto imported = comfy::import_if_comfy(*text, args.flow, &registry)) {
    if (!imported->ok()) return imported->error();
    *shared = true;
    comfy::log_import_report(imported->value().report, args.flow);
    engine::LoadedWorkflow loaded;
    loaded.document = std::move(imported->value().document);
    return loaded;
  }
  return engine::load_workflow_string(*text, options, args.flow);
}

engine::Result<engine::GraphDocument> load_flow(const RunArgs& args, const engine::Registry& registry,
                                                bool* shared, engine::GraphDocument* as_loaded) {
  bool from_output = false;
  auto loaded = load_workflow(args, registry, &from_output);
  if (shared) *shared = from_output;
  if (!loaded.ok()) return loaded.error();
  for (const auto& w : loaded->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  engine::GraphDocument doc = std::move(loaded->document);
  if (as_loaded) *as_loaded = doc;
  // The engine's order: upgrades, then --set (which names the params of the current type versions).
  if (auto s = engine::upgrade_and_apply_overrides(doc, registry, args.sets); !s) return s.error();
  return doc;
}

std::string absolute_dir_of(const std::string& file) {
  std::error_code ec;
  return fs::absolute(fs::path(file), ec).parent_path().lexically_normal().string();
}

engine::Result<std::string> prepare_output_dir(const RunArgs& args, std::string* created) {
  std::error_code ec;
  const fs::path out = (args.output_dir.empty() ? fs::current_path(ec) : fs::absolute(args.output_dir, ec)).lexically_normal();
  // The outermost folder that does not exist yet: what this invocation creates (and may remove).
  fs::path first_missing;
  for (fs::path p = out; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    first_missing = p;
    if (p == p.parent_path()) break;
  }
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    return engine::make_error("cannot use output folder '" + out.string() + "'" + (ec ? ": " + ec.message() : "") +
                              "; check --output-dir");
  }
  if (created) *created = first_missing.string();
  return out.string();
}

namespace {

// "a/b/" and "a/./b" name the folder "a/b".
fs::path folder_path(const std::string& text) {
  fs::path p = fs::path(text).lexically_normal();
  return p.filename().empty() && p.has_parent_path() ? p.parent_path() : p;
}

}  // namespace

void remove_created_output_dir(const std::string& output_dir, const std::string& created) {
  if (created.empty()) return;
  std::error_code ec;
  const fs::path top = folder_path(created);
  for (fs::path p = folder_path(output_dir); !p.empty(); p = p.parent_path()) {
    if (!fs::remove(p, ec) || ec) return;  // fs::remove deletes only an empty folder: nothing else is touched
    if (p == top || p == p.parent_path()) return;
  }
}

engine::RunRequest base_request(const RunArgs& args, const engine::RunOptions& defaults, bool shared) {
  engine::RunRequest request;
  request.targets = args.targets;
  request.keep_outputs = false;
  request.options = defaults;
  request.options.workflow_dir = absolute_dir_of(args.flow);
  request.options.overwrite = args.overwrite;
  request.options.confine_writes_to_output_dir = shared && !args.allow_outside_writes;
  return request;
}

engine::EngineConfig engine_config(const RunArgs& args) {
  engine::EngineConfig config;
  if (args.cache_budget_gib > 0) config.cache_budget_bytes = static_cast<std::size_t>(args.cache_budget_gib * double(1ull << 30));
  return config;
}

RunSession session_from_args(std::shared_ptr<const engine::Registry> registry, const RunArgs& args) {
  RunSession session;
  session.registry = std::move(registry);
  session.engine = engine_config(args);
  session.run_defaults.resources_dir = args.resources_dir;
  return session;
}

int exit_code_for(engine::RunStatus status) {
  switch (status) {
    case engine::RunStatus::Succeeded: return kExitOk;
    case engine::RunStatus::Invalid: return kExitInvalid;
    case engine::RunStatus::Failed: return kExitNodeFailed;
    case engine::RunStatus::Cancelled: return kExitCancelled;
  }
  return kExitNodeFailed;
}

std::unique_ptr<RunRenderer> pick_renderer(const RunArgs& args, const json& tag) {
  if (args.json_events) return make_json_renderer(stdout, args.verbose, tag);
  if (::isatty(STDOUT_FILENO)) return make_tty_renderer(stdout, args.verbose);
  return make_plain_renderer(stdout, args.verbose);
}

void record_run(const RunArgs& args, const std::string& folder, const std::string& workflow_json,
                const engine::RunResult& result, std::chrono::system_clock::time_point started) {
  if (args.no_history || result.status == engine::RunStatus::Invalid) return;
  std::error_code ec;
  const std::string source = fs::absolute(args.flow, ec).lexically_normal().string();
  const auto entry = engine::run_history_entry(result, workflow_json, source, started);
  if (auto written = engine::append_run_history(folder, entry); !written.ok()) {
    std::fprintf(stderr, "warning: %s\n", written.error().message.c_str());
  }
}

engine::RunResult drive_run(engine::Engine& engine, const engine::GraphDocument& doc, engine::RunRequest request,
                            RunRenderer& renderer) {
  auto started = engine.start(doc, std::move(request));
  if (!started.ok()) {
    engine::RunResult r;
    r.status = engine::RunStatus::Invalid;
    r.errors.push_back(started.error());
    return r;
  }
  bool cancel_sent = false;
  while (engine.running()) {
    if (!cancel_sent && interrupt_requested()) {
      cancel_sent = true;
      renderer.on_interrupt();
      engine.cancel();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return engine.wait();
}

}  // namespace vidgraph::cli
