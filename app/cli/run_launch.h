// `vidgraph-run run FLOW --nproc N`: starts N copies of this program on this machine with the
// torchrun environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR=127.0.0.1, a free MASTER_PORT),
// rank 0 on this terminal's stdout and the others' stdout discarded (their stderr stays: errors and
// warnings), TMPDIR a fresh folder removed when they have all ended, and waits for them all. Each
// rank picks its GPU itself (rank_gpu_visibility).
//
// Faults: when a rank fails, the others get `grace_s` seconds to stop on their own (their next
// collective fails at once when the peer's sockets close, or within the collective timeout), then
// SIGTERM, then SIGKILL (grace: --dist-timeout + 10 s). Ctrl-C (SIGINT or SIGTERM to the launcher)
// is passed on to every rank, which cancel their runs. The exit code is the first failing rank's (a
// rank killed by a signal counts as a failed node, 3), or 130 after an interrupt; the failing rank
// and how it ended are printed (with --json-events also as an {"event": "error"} line).
#pragma once

#include <string>

#include "engine/environment.h"
#include "run_args.h"

namespace vidgraph::cli {

// The torchrun values come from `env` (engine/environment.h: run_cli_main's RunArgs::environment).
// True when this process is one rank of a group (WORLD_SIZE is set, by torchrun or the launcher).
bool running_as_rank(const engine::Environment& env);
// RANK, 0 when unset.
int own_rank(const engine::Environment& env);

// Before anything initialises CUDA: narrows CUDA_VISIBLE_DEVICES (env's, written back to this
// process's environment for the GPU runtime) to this rank's GPU, the LOCAL_RANK-th entry of the list
// (or GPU LOCAL_RANK when unset); a one-entry list stays as it is (a wrapper already gave the rank its
// GPU). Returns "" or why the rank has no GPU to take.
std::string rank_gpu_visibility(const engine::Environment& env);

// Runs args.nproc ranks of `argv`.
int launch_ranks(char** argv, const RunArgs& args);

}  // namespace vidgraph::cli
