// vidgraph-attention: runs the attention plugin's methods on tensors from safetensors files.
//   vidgraph-attention run --input in.safetensors --output out.safetensors --method vsa --grid 5,6,7
//   vidgraph-attention methods        (methods and params of the loaded plugin, JSON)
//   vidgraph-attention --version      (program and plugin versions)
// Exit status: 0 success, 1 bad input or failure, 2 usage error (missing, malformed or non-finite
// argument; the usage is printed) or no plugin.
#include "app/cli/attention_run.h"
#include "app/cli/attention_tool.h"
#include "app/cli/cli_checks.h"

#ifdef VIDGRAPH_HAVE_BENCH
#include "app/cli/attention_bench.h"
#endif  // VIDGRAPH_HAVE_BENCH

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace {

void add_run_command(CLI::App& app, vidgraph::cli::AttentionRunOptions& o, double& sparsity,
                     std::string& tile, std::string& feature_map) {
  CLI::App* run = app.add_subcommand("run", "run one method on q, k, v (and extras) from a safetensors file");
  run->add_option("-i,--input", o.input, "input safetensors file (q, k, v; optional gate, proj_l.weight, proj_l.bias, do)")->required();
  run->add_option("-o,--output", o.output, "output safetensors file (o; with --backward dq, dk, dv, ...)")->required();
  run->add_option("-m,--method", o.method, "full, vsa or sla_star")->capture_default_str();
  run->add_option("-g,--grid", o.grid, "token grid T,H,W (T*H*W = S)")->required();
  run->add_option("-s,--sparsity", sparsity, "fraction of KV tiles skipped per query tile (vsa, sla_star)")
      ->check(vidgraph::cli::finite_number());  // the range is the plugin's: [0, 1)
  run->add_option("--tile", tile, "tile shape T,H,W (vsa, sla_star)");
  run->add_option("--feature-map", feature_map, "sla_star linear-branch feature map: softmax, elu or relu");
  run->add_option("-p,--param", o.params, "any method parameter as name=value (repeatable)");
  run->add_option("-d,--device", o.device, "device of the computation: cpu, cuda, cuda:N, hip")->capture_default_str();
  run->add_option("--dtype", o.dtype, "compute dtype: keep, float32, float64, float16, bfloat16")->capture_default_str();
  run->add_flag("-b,--backward", o.backward, "also run the backward pass and write the gradients");
  run->add_flag("--overwrite", o.overwrite,
                "replace an existing output, if it is a safetensors file (never a folder or device)");
  run->add_option("--plugin", o.plugin_name, "name of the plugin to use (default: the first found)");
}

// Parses the command line; returns -1 to go on, else the exit status: 0 after --help, 2 after a
// usage error (missing or malformed argument), with the message and the usage on stderr.
int parse_or_usage(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);  // --help
    const auto parsed = app.get_subcommands();
    const CLI::App* where = parsed.empty() ? &app : parsed.back();
    std::fprintf(stderr, "vidgraph-attention: %s\n\n%s", e.what(), where->help().c_str());
    return 2;
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr: stdout carries the JSON results.
  spdlog::set_default_logger(spdlog::stderr_color_mt("vidgraph-attention"));
  CLI::App app{"vidgraph-attention: run the attention plugin's methods (full, vsa, sla_star) on safetensors files"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("-V,--version", version, "print the program and the loaded plugin versions");
  vidgraph::cli::AttentionRunOptions run_options;
  double sparsity = -1;
  std::string tile, feature_map;
  add_run_command(app, run_options, sparsity, tile, feature_map);
  std::string methods_plugin;
  CLI::App* methods = app.add_subcommand("methods", "list the loaded plugin's methods and parameters (JSON)");
  methods->add_option("--plugin", methods_plugin, "name of the plugin to use");
  int exit_code = 0;
#ifdef VIDGRAPH_HAVE_BENCH
  vidgraph::cli::add_attention_bench_command(app, &exit_code);
#endif  // VIDGRAPH_HAVE_BENCH
  if (const int code = parse_or_usage(app, argc, argv); code >= 0) return code;

  if (version) {
    std::printf("vidgraph-attention %s\n", VIDGRAPH_VERSION);
    auto loaded = vidgraph::cli::load_plugin_or_report({});
    if (!loaded) return 2;
    std::printf("%s\n", vidgraph::plugin::plugin_version_string(*loaded).c_str());
    return 0;
  }
  if (app.got_subcommand("run")) {
    if (app.get_subcommand("run")->count("--sparsity") > 0) run_options.params.push_back("sparsity=" + std::to_string(sparsity));
    if (!tile.empty()) run_options.params.push_back("tile=" + tile);
    if (!feature_map.empty()) run_options.params.push_back("feature_map=" + feature_map);
    return vidgraph::cli::run_attention(run_options);
  }
  if (app.got_subcommand("methods")) return vidgraph::cli::print_methods(methods_plugin);
  if (app.get_subcommands().empty()) {
    std::fprintf(stderr, "vidgraph-attention: choose a command\n%s", app.help().c_str());
    return 2;
  }
  return exit_code;
}
