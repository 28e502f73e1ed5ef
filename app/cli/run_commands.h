// The three commands of vidgraph-run. Each returns the process exit code (see run_cli.h) and
// prints its own errors (stderr) and results (stdout).
#pragma once

#include "engine/registry.h"
#include "run_args.h"
#include "run_cli.h"

namespace vidgraph::cli {

int command_run(const RunArgs& args, const RunSession& session);
int command_validate(const RunArgs& args, const engine::Registry& registry);
int command_nodes(const RunArgs& args, const engine::Registry& registry);

}  // namespace vidgraph::cli
