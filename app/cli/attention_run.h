// `vidgraph-attention run`: one attention call on tensors from a safetensors file.
//
// Input file tensors: q, k, v [B, S, H, D]; optional gate, proj_l.weight, proj_l.bias, and do
// (the output gradient, used with --backward; ones when absent). Output file: o, and with --backward
// dq, dk, dv plus dgate, dproj_l.weight, dproj_l.bias for the extras given; metadata records the
// method, grid, params and plugin. The selection statistics and timings are printed as JSON.
// The output file is checked before any work and never replaces anything unless `overwrite`, and
// then only an earlier safetensors file (app/nodes/output_path.h).
#pragma once

#include "plugins/api/attention_params.h"

#include <string>
#include <vector>

namespace vidgraph::cli {

struct AttentionRunOptions {
  std::string input;
  std::string output;
  std::string method = "full";
  std::string grid;                // "T,H,W"
  std::string device = "cpu";      // c10::Device text: cpu, cuda, cuda:1, hip
  std::string dtype = "keep";      // keep | float32 | float64 | float16 | bfloat16
  std::vector<std::string> params; // "name=value", parsed by the method's descriptors
  bool backward = false;
  bool overwrite = false;          // replace an existing safetensors output
  std::string plugin_name;         // empty: the first plugin found
};

// Runs the call; returns the process exit status (0 success, 1 bad input or failure, 2 no plugin).
// Errors are logged on the "cli" logger as one sentence.
int run_attention(const AttentionRunOptions& options);

// `vidgraph-attention methods`: prints the loaded plugin's methods and params as JSON.
int print_methods(const std::string& plugin_name);

}  // namespace vidgraph::cli
