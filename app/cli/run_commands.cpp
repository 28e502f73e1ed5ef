// vidgraph-run commands: run, validate, nodes (see run_commands.h).
#include "run_commands.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "engine/plan.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "engine/write_places.h"
#include "run_cli.h"
#include "run_driver.h"
#include "run_launch.h"
#include "run_logging.h"
#ifdef VIDGRAPH_HAVE_PREVIEW_FILES
#include "run_previews.h"
#endif
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

// A run of several ranks: every rank runs the run's nodes of every_rank types and what they need;
// the rest (exports, previews, ...) is rank 0's alone, so rank 0 alone writes outputs. Rank 0 sends
// the others what it computes alone (the nodes' rank_broadcast). Returns false when the run has no
// such node: ranks above 0 have nothing to do.
bool share_run_with_ranks(const engine::GraphDocument& doc, const engine::Registry& registry, int rank,
                          engine::RunRequest& request) {
  const auto run = engine::plan_execution(doc, request.targets);
  if (!run.ok()) return true;  // every rank's validation fails alike (rank 0 reports it)
  std::vector<std::string> targets;
  for (const std::string& id : *run) {
    const engine::NodeType* type = registry.find(doc.find_node(id)->type);
    if (type != nullptr && type->every_rank) targets.push_back(id);
  }
  if (targets.empty()) return false;
  request.options.every_rank_nodes = engine::plan_execution(doc, targets).value();
  if (rank > 0) request.targets = targets;
  return true;
}

// A fresh folder in TMPDIR (or /tmp), or "" when none can be made.
std::string make_scratch_dir() {
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  std::string pattern = ((ec ? std::filesystem::path("/tmp") : tmp) / "vidgraph-rank-XXXXXX").string();
  return ::mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
}

}  // namespace

namespace {

// The event consumer of one run: the renderer, with step previews saved first when --previews asks.
class RunEvents {
 public:
  static engine::Result<RunEvents> make(const RunArgs& args, RunRenderer& renderer) {
    RunEvents events;
    if (args.previews_dir.empty()) return events;
#ifdef VIDGRAPH_HAVE_PREVIEW_FILES
    auto files = PreviewFiles::open(args.previews_dir, [&renderer](const engine::Event& e) { renderer.on_event(e); });
    if (!files.ok()) return files.error();
    events.files_ = std::shared_ptr<PreviewFiles>(std::move(*files));
    return events;
#else
    return engine::make_error("--previews needs the image writer, which this build of vidgraph-run lacks "
                              "(built without VIDGRAPH_MEDIA)");
#endif
  }
  void deliver(RunRenderer& renderer, const engine::Event& e) const {
#ifdef VIDGRAPH_HAVE_PREVIEW_FILES
    if (files_ && PreviewFiles::saves(e)) return files_->save(e);
#endif
    renderer.on_event(e);
  }
  // After the run: every preview saved (and delivered); the first that could not be, as a warning.
  void finish() const {
#ifdef VIDGRAPH_HAVE_PREVIEW_FILES
    if (files_) files_->flush();
    if (files_ && !files_->first_error().empty()) std::fprintf(stderr, "warning: %s\n", files_->first_error().c_str());
#endif
  }

 private:
#ifdef VIDGRAPH_HAVE_PREVIEW_FILES
  std::shared_ptr<PreviewFiles> files_;
#endif
};

}  // namespace

int command_run(const RunArgs& args, const RunSession& session) {
  const engine::Registry& registry = *session.registry;
  if (!args.sweeps.empty() && !args.previews_dir.empty()) {
    report_error(args, "--previews saves the previews of one run; leave it out with --sweep");
    return kExitInvalid;
  }
  if (!args.sweeps.empty()) return command_sweep(args, session);
  bool shared = false;
  auto doc = load_flow(args, registry, &shared);
  if (!doc.ok()) {
    report_error(args, doc.error().to_string());
    return kExitInvalid;
  }
  engine::RunRequest request = base_request(args, session.run_defaults, shared);
  request.options.workflow_json = engine::save_workflow_string(*doc);
  std::string created;  // removed again when the run turns out invalid: exit 2 leaves nothing behind
  std::string scratch;  // where a rank above 0 writes: never the output folder
  const int rank = own_rank(args.environment);
  const bool with_ranks = running_as_rank(args.environment) && share_run_with_ranks(*doc, registry, rank, request);
  if (rank > 0) {
    if (!with_ranks) return kExitOk;
    // Its {output}/ is a scratch folder and it writes nothing the user keeps; rank 0 checks the
    // shared workflow's places against the real output folder, and its refusal stops every rank.
    request.options.confine_writes_to_output_dir = false;
    scratch = make_scratch_dir();
    if (scratch.empty()) {
      report_error(args, "rank " + std::to_string(rank) +
                             " could not create a scratch folder; set TMPDIR to a writable folder.");
      return kExitInvalid;
    }
    request.options.output_dir = scratch;
  } else {
    auto out = prepare_output_dir(args, &created);
    if (!out.ok()) {
      report_error(args, out.error().message);
      return kExitInvalid;
    }
    request.options.output_dir = *out;
  }
  const std::string output_dir = request.options.output_dir;

  engine::Engine engine(registry, session.engine);
  // A rank above 0 prints on a discarded stdout; its errors must reach stderr even with --json-events.
  // Rank 0 alone saves previews.
  RunArgs render_args = args;
  if (rank > 0) {
    render_args.json_events = false;
    render_args.previews_dir.clear();
  }
  auto renderer = pick_renderer(render_args);
  auto events = RunEvents::make(render_args, *renderer);
  if (!events.ok()) {
    if (scratch.empty()) remove_created_output_dir(output_dir, created);
    report_error(args, events.error().message);
    return kExitInvalid;
  }
  const auto subscription =
      engine.events().subscribe([&](const engine::Event& e) { events->deliver(*renderer, e); });
  route_logs_to_bus(engine.events());
  install_interrupt_handler();
  const std::string workflow_json = request.options.workflow_json;
  const auto started = std::chrono::system_clock::now();
  engine::RunResult result = drive_run(engine, *doc, std::move(request), *renderer);
  if (scratch.empty()) record_run(args, output_dir, workflow_json, result, started);
  remove_interrupt_handler();
  route_logs_to_stderr();
  engine.events().unsubscribe(subscription);
  events->finish();
  if (result.status == engine::RunStatus::Invalid && scratch.empty()) remove_created_output_dir(output_dir, created);
  if (!scratch.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(scratch, ec);
  }
  const int code = exit_code_for(result.status);
  // An invalid workflow is invalid on every rank alike: rank 0 alone reports it.
  if (rank == 0 || result.status != engine::RunStatus::Invalid) renderer->finish(result, code);
  return code;
}

int command_validate(const RunArgs& args, const engine::Registry& registry) {
  bool shared = false;
  auto doc = load_flow(args, registry, &shared);
  engine::ValidationReport report;
  if (!doc.ok()) {
    report.errors.push_back(doc.error());
  } else {
    report = engine::validate_document(*doc, registry, args.targets);
    // What run refuses before any node starts: a shared workflow's writes outside the output folder.
    engine::RunOptions options = base_request(args, {}, shared).options;
    options.output_dir = args.output_dir;
    for (std::string& p : engine::check_confined_writes(*doc, registry, options)) {
      report.errors.emplace_back("", std::move(p));
    }
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
        extra += "  [" + bound(p.min) + ", " + bound(p.max) + (p.max && p.max_exclusive ? ")" : "]");
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
