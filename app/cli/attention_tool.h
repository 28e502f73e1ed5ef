// vidgraph-attention: shared pieces of the tool's subcommands (run, methods, and the kernels
// engineer's bench): the "cli" logger, plugin loading with a clear report, and argument parsing.
//
// Bench hook: when app/cli/attention_bench.cpp exists, the build defines VIDGRAPH_HAVE_BENCH and
// attention_main.cpp includes "app/cli/attention_bench.h", which must declare
//     CLI::App* vidgraph::cli::add_attention_bench_command(CLI::App& app, int* exit_code);
// It adds the `bench` subcommand to `app`; its callback runs the benchmark and stores the process
// exit status in *exit_code (0 = success).
#pragma once

#include "plugins/api/plugin_loader.h"
#include "plugins/api/prepare_for.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <vector>

namespace vidgraph::cli {

// The logger named "cli", cloned from the default logger on first use.
std::shared_ptr<spdlog::logger> attention_tool_logger();

// The tool's VIDGRAPH_PLUGIN_PATH (engine/environment.h), read once per process: the folders
// searched for the plugin before those next to the executable.
const std::vector<std::string>& tool_plugin_path();

// Loads the attention plugin (by name when `name` is not empty) over tool_plugin_path(). On failure
// logs the loader's report (places searched, each file and why) and returns nullptr.
plugin::LoadedPlugin* load_plugin_or_report(const std::string& name);

// "T,H,W" -> grid; throws std::invalid_argument with a sentence on bad text or a product T*H*W
// that does not fit in int64.
plugin::TokenGrid parse_grid(const std::string& text);

}  // namespace vidgraph::cli
