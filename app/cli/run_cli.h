// vidgraph-run's entry point, shared by the product executable and the test runner
// (tests/cli builds `vidgraph-run-test` from the same sources plus the test-only node types).
//
// Commands: run FLOW [--set NODE.PARAM=VALUE]... [--target NODE]... [--sweep NODE.PARAM=V1,V2,...]...
//           [--output-dir DIR] [--resources DIR] [--overwrite] [--json-events] (sweeps: sweep_command.h)
//           [--nproc N [--dist-backend auto|gloo|nccl] [--dist-timeout S]] (run_launch.h);
//           validate FLOW [--set ...] [--target NODE]... [--json];
//           nodes [--json];
//           compare A B [--json] [--side-by-side OUT] [--difference OUT] [--gain G] (compare_command.h);
//           --help; --version.
// Exit codes: 0 success, 2 invalid workflow or arguments, 3 a node failed, 130 cancelled.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/registry.h"
#include "engine/run_options.h"
#include "run_args.h"

namespace vidgraph::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalid = 2;
inline constexpr int kExitNodeFailed = 3;
inline constexpr int kExitCancelled = 130;

// What the commands run against, opened once per invocation (after the ranks joined).
struct RunSession {
  // This program's node types; the pointer keeps whatever owns them (the product: a nodes::Session
  // and its attention plugin) alive until the command ends.
  std::shared_ptr<const engine::Registry> registry;
  engine::EngineConfig engine;      // the session's engine settings (its cache budget)
  engine::RunOptions run_defaults;  // what every run starts from (its resources folder)
};

struct RunnerConfig {
  std::string program = "vidgraph-run";
  std::string version;  // "0.1.0"
  // Opens what the commands run against from args' session options (--resources, --cache-budget):
  // the product builds a nodes::Session from them; session_from_args (run_driver.h) is the plain one.
  std::function<RunSession(const RunArgs&)> open_session;
  // Extra lines for --version (e.g. the attention plugin loaded); may be empty.
  std::function<std::string()> version_details;
  // The compare command (it needs the media layer); unset = "not in this build".
  std::function<int(const RunArgs&)> compare;
  // `models [--json] [--model-paths FILE] [FOLDER]...` (run_models.h); unset: no such command.
  std::function<int(const std::vector<std::string>& folders, const std::string& model_paths, bool json)> list_models;
  // `run out.mp4`: the workflow an output (MP4/WebM, PNG-sequence folder) embeds, or nullopt when
  // the path is not such an output (it is then read as a workflow file). Unset: outputs are refused.
  std::function<std::optional<engine::Result<std::string>>(const std::string& path)> embedded_workflow;
  // In a rank (WORLD_SIZE set by --nproc or torchrun): joins the process group of the torchrun
  // environment with this backend and collective timeout, for the DiT to run sequence-parallel
  // over it; returns "" and sets *services (handed to every run) or returns the error. Unset: this
  // program cannot run as several processes.
  std::function<std::string(const std::string& backend, int timeout_s,
                            std::shared_ptr<const engine::RunServices>* services)>
      join_ranks;
  // The options of the process's environment: main fills it once with engine::read_environment();
  // the commands get it as RunArgs::environment.
  engine::Environment environment;
};

int run_cli_main(int argc, char** argv, const RunnerConfig& config);

}  // namespace vidgraph::cli
