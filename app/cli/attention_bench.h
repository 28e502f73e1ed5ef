// `vidgraph-attention bench`: times full, vsa and sla_star (forward, backward, forward+backward)
// beside LibTorch's dense scaled_dot_product_attention in the same run, and prints JSON.
//
// Protocol: inputs [B, S, H, D] random (never zeros), warm-up runs, then >= `repeats` timed runs;
// each phase is bracketed by device events on the current stream (host clock on the CPU) and the
// median is reported, with effective (dense-equivalent) TFLOP/s: fwd 4·B·H·S²·D, bwd 2.5×, fwd+bwd
// 3.5× (FlashAttention's convention), the ratios to SDPA, the peak device memory of each method
// above its inputs, and the speed targets evaluated on the first grid.
#pragma once

#include <CLI/CLI.hpp>

namespace vidgraph::cli {

// Adds the `bench` subcommand to `app`; its callback runs the benchmark and stores the process exit
// status in *exit_code (0 = success).
CLI::App* add_attention_bench_command(CLI::App& app, int* exit_code);

}  // namespace vidgraph::cli
