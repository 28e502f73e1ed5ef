// vidgraph-run commands: run, validate, nodes (see run_commands.h).
#include "run_commands.h"

#include <cstdio>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "run_cli.h"
#include "run_driver.h"
#include "run_logging.h"
#include "run_render.h"
#include "run_signals.h"
#include "sweep_command.h"

namespace vidgraph::cli {

using nlohmann::json;

namespace {

json error_list(const std::vector<engine::Error>& errors) {
  json arr = json::array();
  for (const auto& e : errors) arr.push_back({{"node", e.node_id}, {"message", e.message}});
  return arr;
}

}  // namespace

int command_run(const RunArgs& args, const engine::Registry& registry) {
  if (!args.sweeps.empty()) return command_sweep(args, registry);
  auto doc = load_flow(args, registry);
  if (!doc.ok()) {
    report_error(args, doc.error().to_string());
    return kExitInvalid;
  }
  std::string created;  // removed again when the run turns out invalid: exit 2 leaves nothing behind
  auto out = prepare_output_dir(args, &created);
  if (!out.ok()) {
    report_error(args, out.error().message);
    return kExitInvalid;
  }
  engine::RunRequest request = base_request(args);
  request.options.output_dir = *out;
  request.options.workflow_json = engine::save_workflow_string(*doc);

  engine::Engine engine(registry, engine_config(args));
  auto renderer = pick_renderer(args);
  const auto subscription = engine.events().subscribe([&](const engine::Event& e) { renderer->on_event(e); });
  route_logs_to_bus(engine.events());
  install_interrupt_handler();
  engine::RunResult result = drive_run(engine, *doc, std::move(request), *renderer);
  remove_interrupt_handler();
  route_logs_to_stderr();
  engine.events().unsubscribe(subscription);
  if (result.status == engine::RunStatus::Invalid) remove_created_output_dir(*out, created);
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
        // Integer params have integer bounds: "[1, 100]", not "[1.0, 100.0]".
        const bool integral = p.kind == engine::ParamKind::Int || p.kind == engine::ParamKind::Seed;
        auto bound = [integral](const std::optional<double>& v) {
          if (!v) return std::string();
          return integral ? std::to_string(static_cast<long long>(*v)) : json(*v).dump();
        };
        extra += "  [" + bound(p.min) + ", " + bound(p.max) + "]";
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
