// `vidgraph-run run FLOW --sweep NODE.PARAM=V1,V2,... [--sweep ...]`: every combination of the swept
// values (sweep_plan.h) run one after another in this process on one Engine, so its cache is shared
// and each run after the first re-executes only the nodes downstream of what changed.
//
// Outputs: run i writes into <output-dir>/run-<i> ({output}/... paths resolve there; zero-padded to
// the run count's width) and <output-dir>/sweep.json maps runs to settings, status, time and outputs
// (sweep_report.h). Nothing runs when sweep.json already exists (unless --overwrite), and a run's
// folder left empty (failed, cancelled) is removed; sweep.json is written once any run succeeded.
// Events: each run's --json-events lines carry "run_index": i, after a
// {"event": "sweep_run_started", "run_index", "runs", "settings", "output_dir"} line; the last line is
// {"event": "sweep_summary", ...}. Human renderers print a header per run and a final table.
// Cache: results stay while they fit in --cache-budget (engine_config); a result larger than the
// budget (a big model) is not kept, and every run recomputes it.
// Exit code: 0 when every run succeeds; otherwise the first failing run's code, and the sweep stops
// there (later runs are reported as not run). Ctrl-C cancels the current run and stops: 130.
// Argument and validation errors of any run: 2, before the first run starts.
#pragma once

#include "engine/registry.h"
#include "run_args.h"
#include "run_cli.h"

namespace vidgraph::cli {

int command_sweep(const RunArgs& args, const RunSession& session);

}  // namespace vidgraph::cli
