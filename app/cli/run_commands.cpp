// vidgraph-run commands: run, validate, nodes (see run_commands.h).
#include "run_commands.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "engine/engine.h"
#include "engine/overrides.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "run_cli.h"
#include "run_logging.h"
#include "run_render.h"
#include "run_signals.h"

namespace vidgraph::cli {

namespace fs = std::filesystem;
using engine::GraphDocument;
using nlohmann::json;

namespace {

void print_error(const std::string& message) { std::fprintf(stderr, "error: %s\n", message.c_str()); }

void json_error_line(const std::string& message) {
  std::printf("%s\n", json{{"event", "error"}, {"message", message}}.dump(-1, ' ', false, json::error_handler_t::replace).c_str());
  std::fflush(stdout);
}

// Loads the flow (warnings to stderr) and applies --set.
engine::Result<GraphDocument> load_flow(const RunArgs& args, const engine::Registry& registry) {
  auto loaded = engine::load_workflow_file(args.flow, {&registry, nullptr});
  if (!loaded.ok()) return loaded.error();
  for (const auto& w : loaded->warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  GraphDocument doc = std::move(loaded->document);
  if (auto s = engine::apply_overrides(doc, registry, args.sets); !s) return s.error();
  return doc;
}

json error_list(const std::vector<engine::Error>& errors) {
  json arr = json::array();
  for (const auto& e : errors) arr.push_back({{"node", e.node_id}, {"message", e.message}});
  return arr;
}

std::string absolute_dir_of(const std::string& file) {
  std::error_code ec;
  return fs::absolute(fs::path(file), ec).parent_path().lexically_normal().string();
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

std::unique_ptr<RunRenderer> pick_renderer(const RunArgs& args) {
  if (args.json_events) return make_json_renderer(stdout, args.verbose);
  if (::isatty(STDOUT_FILENO)) return make_tty_renderer(stdout, args.verbose);
  return make_plain_renderer(stdout, args.verbose);
}

// Runs the engine until the run ends, turning the first Ctrl-C into a cancel.
engine::RunResult drive(engine::Engine& engine, const GraphDocument& doc, engine::RunRequest request,
                        RunRenderer& renderer) {
  install_interrupt_handler();
  auto started = engine.start(doc, std::move(request));
  if (!started.ok()) {
    remove_interrupt_handler();
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
  engine::RunResult result = engine.wait();
  remove_interrupt_handler();
  return result;
}

}  // namespace

int command_run(const RunArgs& args, const engine::Registry& registry) {
  auto doc = load_flow(args, registry);
  if (!doc.ok()) {
    print_error(doc.error().to_string());
    if (args.json_events) json_error_line(doc.error().to_string());
    return kExitInvalid;
  }
  engine::RunRequest request;
  request.targets = args.targets;
  request.keep_outputs = false;
  request.options.workflow_dir = absolute_dir_of(args.flow);
  request.options.resources_dir = args.resources_dir;
  request.options.overwrite = args.overwrite;
  request.options.workflow_json = engine::save_workflow_string(*doc);
  std::error_code ec;
  const fs::path out = args.output_dir.empty() ? fs::current_path(ec) : fs::absolute(args.output_dir, ec);
  fs::create_directories(out, ec);
  if (ec || !fs::is_directory(out)) {
    const std::string msg = "cannot use output folder '" + out.string() + "'" + (ec ? ": " + ec.message() : "");
    print_error(msg);
    if (args.json_events) json_error_line(msg);
    return kExitInvalid;
  }
  request.options.output_dir = out.string();

  engine::Engine engine(registry);
  auto renderer = pick_renderer(args);
  const auto subscription = engine.events().subscribe([&](const engine::Event& e) { renderer->on_event(e); });
  route_logs_to_bus(engine.events());
  engine::RunResult result = drive(engine, *doc, std::move(request), *renderer);
  route_logs_to_stderr();
  engine.events().unsubscribe(subscription);
  const int code = exit_code_for(result.status);
  renderer->finish(result, code);
  return code;
}

int command_validate(const RunArgs& args, const engine::Registry& registry) {
  auto doc = load_flow(args, registry);
  engine::ValidationReport report;
  if (!doc.ok()) {
    report.errors.push_back(doc.error());
  } else {
    report = engine::validate_document(*doc, registry, args.targets);
  }
  if (args.json) {
    json out{{"valid", report.ok()}, {"nodes", doc.ok() ? doc->nodes().size() : 0},
             {"errors", error_list(report.errors)}, {"warnings", error_list(report.warnings)}};
    std::printf("%s\n", out.dump(2, ' ', false, json::error_handler_t::replace).c_str());
  } else {
    for (const auto& w : report.warnings) std::fprintf(stderr, "warning: %s\n", w.to_string().c_str());
    for (const auto& e : report.errors) print_error(e.to_string());
    if (report.ok()) {
      std::printf("%s: valid (%zu nodes)\n", args.flow.c_str(), doc->nodes().size());
    } else {
      std::printf("%s: %zu error(s)\n", args.flow.c_str(), report.errors.size());
    }
  }
  return report.ok() ? kExitOk : kExitInvalid;
}

int command_nodes(const RunArgs& args, const engine::Registry& registry) {
  if (args.json) {
    std::printf("%s\n", registry.describe().dump(2, ' ', false, json::error_handler_t::replace).c_str());
    return kExitOk;
  }
  std::string category = "\x01";
  for (const engine::NodeType* t : registry.list()) {
    if (t->category != category) {
      category = t->category;
      std::printf("%s\n", category.empty() ? "(no category)" : category.c_str());
    }
    std::printf("  %s (v%d) - %s\n", t->name.c_str(), t->version, t->description.c_str());
    for (const auto& p : t->inputs) {
      std::printf("      in   %-12s %s%s\n", p.name.c_str(), p.type.c_str(), p.optional ? " (optional)" : "");
    }
    for (const auto& p : t->outputs) std::printf("      out  %-12s %s\n", p.name.c_str(), p.type.c_str());
    for (const auto& p : t->params) {
      std::string extra = " = " + p.default_value.dump();
      if (p.min || p.max) {
        extra += "  [" + (p.min ? json(*p.min).dump() : std::string("")) + ", " + (p.max ? json(*p.max).dump() : "") + "]";
      }
      if (!p.choices.empty()) {
        std::string list;
        for (const auto& c : p.choices) list += (list.empty() ? "" : "|") + c;
        extra += "  {" + list + "}";
      }
      std::printf("      param %-11s %s%s\n", p.name.c_str(), engine::to_string(p.kind), extra.c_str());
    }
  }
  if (registry.size() == 0) std::printf("no node types are registered\n");
  return kExitOk;
}

}  // namespace vidgraph::cli
