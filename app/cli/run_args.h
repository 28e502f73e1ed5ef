// Parsed command line of vidgraph-run: plain data filled by run_cli.cpp, read by the commands.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/environment.h"
#include "engine/result.h"

namespace vidgraph::cli {

enum class RunCommand { None, Run, Validate, Nodes, Compare, History };

struct RunArgs {
  RunCommand command = RunCommand::None;
  std::string flow;                  // run, validate
  std::vector<std::string> sets;     // --set NODE.PARAM=VALUE
  std::vector<std::string> targets;  // --target NODE (run up to these nodes)
  std::vector<std::string> sweeps;   // run --sweep NODE.PARAM=V1,V2,... (one run per combination)
  double cache_budget_gib = 0.0;     // run --cache-budget GIB; 0 = the engine's default (8 GiB)
  std::string output_dir;            // --output-dir (default: current directory)
  std::string resources_dir;         // --resources (default: <exe>/../share/vidgraph)
  bool overwrite = false;            // --overwrite
  bool allow_outside_writes = false; // run --allow-outside-writes: a shared file's workflow may write anywhere
  bool no_history = false;           // run --no-history: leave the output folder's run history alone
  bool json_events = false;          // run --json-events
  std::string previews_dir;          // run --previews DIR: save step previews as PNGs
  bool json = false;                 // validate/nodes --json
  bool verbose = false;              // --verbose: debug log lines
  std::string compare_a, compare_b;  // compare A B
  std::string side_by_side;          // compare --side-by-side OUT
  std::string difference;            // compare --difference OUT
  double gain = 4.0;                 // compare --gain: difference video amplification
  std::string history_dir;           // history [FOLDER] (default: current folder)
  int history_workflow = 0;          // history --workflow N: print run N's workflow; 0 = list
  std::vector<int> history_diff;     // history --diff A B: the params runs A and B differ in
  std::vector<std::string> model_folders;  // models FOLDER...
  std::string model_paths;                 // models --model-paths FILE
  // From RunnerConfig: the workflow a Vidgraph output embeds; nullopt when the file is no output.
  std::function<std::optional<engine::Result<std::string>>(const std::string& path)> embedded_workflow;
  int nproc = 1;                     // run --nproc N: N ranks on this machine, the DiT sequence-parallel
  std::string dist_backend = "auto"; // run --dist-backend auto|gloo|nccl
  int dist_timeout_s = 60;           // run --dist-timeout S: how long a collective waits for the others
  // Not from the command line: RunnerConfig::environment, the options main read from the process's
  // environment (the torchrun variables of a rank, engine/environment.h).
  engine::Environment environment;
};

}  // namespace vidgraph::cli
