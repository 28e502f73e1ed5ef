// `vidgraph-run history [FOLDER] [--json] [--workflow N] [--diff A B]`: the runs an output folder's
// history holds (engine/run_history.h), oldest first, numbered from 1: when each started, its status
// and time, and the files it wrote. --workflow N prints run N's workflow as it ran (a .vgflow
// document) on stdout: save it to re-open or re-run that run. --diff A B prints the params the two
// runs differ in. Exit codes: 0 listed, 2 no history there, an unreadable one, or no such run.
#pragma once

#include "run_args.h"

namespace vidgraph::cli {

int command_history(const RunArgs& args);

}  // namespace vidgraph::cli
