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

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "plugins/api/plugin_loader.h"
#include "plugins/api/plugin_log.h"

namespace {

namespace plugin = vidgraph::plugin;

// A plugin param given as its own option (--sparsity, --tile, --feature-map, ...): its value and
// the option, to tell whether it was given.
struct ParamOption {
  std::string value;
  CLI::Option* option = nullptr;
};

// The methods of the plugin the tool would load, for its options; none when none loads (then only
// --param remains, and run reports why the plugin did not load).
std::vector<plugin::MethodInfo> plugin_methods() {
  // Quietly: the command that runs reports the plugin it uses (the same one: loaded once).
  const auto log = plugin::plugin_logger();
  const spdlog::level::level_enum level = log->level();
  log->set_level(spdlog::level::err);
  const plugin::PluginLoadReport report = plugin::load_attention_plugin(vidgraph::cli::tool_plugin_path());
  std::vector<plugin::MethodInfo> methods;
  if (report.plugin) methods = report.plugin->backend().methods();
  log->set_level(level);
  return methods;
}

// One option per plugin param, named and described by the plugin's own descriptors (underscores as
// dashes); each given one becomes a --param name=value, checked by the plugin as --param is.
std::map<std::string, ParamOption> add_param_options(CLI::App* run, const std::vector<plugin::MethodInfo>& methods) {
  std::map<std::string, std::string> users;
  std::map<std::string, const plugin::ParamDescriptor*> first;
  for (const auto& m : methods) {
    for (const auto& d : m.params) {
      users[d.name] += (users[d.name].empty() ? "" : ", ") + m.name;
      first.emplace(d.name, &d);
    }
  }
  std::map<std::string, ParamOption> options;
  for (const auto& [name, d] : first) {
    std::string flag = "--" + name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    ParamOption& p = options[name];
    p.option = run->add_option(flag, p.value, d->description + " (" + users[name] + ")");
    if (d->type == plugin::ParamType::Float) p.option->check(vidgraph::cli::finite_number());
  }
  return options;
}

void add_run_command(CLI::App& app, vidgraph::cli::AttentionRunOptions& o) {
  CLI::App* run = app.add_subcommand("run", "run one method on q, k, v (and extras) from a safetensors file");
  run->add_option("-i,--input", o.input, "input safetensors file (q, k, v; optional gate, proj_l.weight, proj_l.bias, do)")->required();
  run->add_option("-o,--output", o.output, "output safetensors file (o; with --backward dq, dk, dv, ...)")->required();
  run->add_option("-m,--method", o.method, "full, vsa or sla_star")->capture_default_str();
  run->add_option("-g,--grid", o.grid, "token grid T,H,W (T*H*W = S)")->required();
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
  add_run_command(app, run_options);
  const std::map<std::string, ParamOption> param_options =
      add_param_options(app.get_subcommand("run"), plugin_methods());
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
    for (const auto& [name, p] : param_options) {
      if (p.option->count() > 0) run_options.params.push_back(name + "=" + p.value);
    }
    return vidgraph::cli::run_attention(run_options);
  }
  if (app.got_subcommand("methods")) return vidgraph::cli::print_methods(methods_plugin);
  if (app.get_subcommands().empty()) {
    std::fprintf(stderr, "vidgraph-attention: choose a command\n%s", app.help().c_str());
    return 2;
  }
  return exit_code;
}
