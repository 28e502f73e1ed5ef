// vidgraph-run command line: CLI11 parsing into RunArgs, exit codes, dispatch (see run_cli.h).
#include "run_cli.h"

#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli_checks.h"
#include "history_command.h"
#include "run_args.h"
#include "run_commands.h"
#include "run_driver.h"
#include "run_launch.h"
#include "run_logging.h"
#include "user_file.h"

namespace vidgraph::cli {
namespace {

// 1 PiB: far above any machine, small enough that GiB * 2^30 stays an exact size_t.
constexpr double kMaxCacheBudgetGib = 1024.0 * 1024.0;

const char* kFooter =
    "\nExit codes:\n"
    "  0    success\n"
    "  2    invalid workflow or arguments (nothing ran)\n"
    "  3    a node failed (its id and message are printed)\n"
    "  130  cancelled (Ctrl-C cancels the run cleanly; a second Ctrl-C exits at once)\n"
    "\nSweeps: each --sweep NODE.PARAM=V1,V2,... lists values (\\, for a comma inside one); the runs are\n"
    "every combination, first option slowest. They share one process and its cache, so a run re-executes\n"
    "only what its new values change. Run i writes into OUTPUT/run-i/ and OUTPUT/sweep.json maps runs to\n"
    "settings, status, time and outputs. The sweep stops at the first run that fails (its exit code).\n"
    "\nPaths inside a workflow: absolute paths stay; relative paths resolve against the workflow file's\n"
    "folder; {resources}/... against the resources folder; {output}/... against the output folder.\n"
    "A workflow run from a video or PNG sequence (one someone may have shared) writes only inside the\n"
    "output folder: a place outside it (absolute, '..', or through a link) stops the run before any node\n"
    "starts, unless you pass --allow-outside-writes. A .vgflow file you name writes where it says.\n"
    "\nExamples:\n"
    "  vidgraph-run run flow.vgflow --set sampler.steps=4 --output-dir out/\n"
    "  vidgraph-run run flow.vgflow --json-events > events.jsonl\n"
    "  vidgraph-run run flow.vgflow --nproc 4    # 4 GPUs, the DiT sequence-parallel (README: Several GPUs)\n"
    "  vidgraph-run run flow.vgflow --sweep sampler.seed=1,2,3 --sweep sampler.attention=full,vsa --output-dir out/\n"
    "  vidgraph-run validate flow.vgflow\n"
    "  vidgraph-run nodes --json\n"
    "  vidgraph-run compare full.mp4 light.mp4 --side-by-side both.mp4 --difference diff.mp4\n"
    "  vidgraph-run models ~/ComfyUI/models --json\n"
    "  vidgraph-run history out/ && vidgraph-run history out/ --workflow 3 > again.vgflow\n";

void add_flow_options(CLI::App* cmd, RunArgs& args) {
  cmd->add_option("flow", args.flow, "Workflow file (.vgflow)")->required();
  cmd->add_option("--set", args.sets, "Override a param for this run: NODE.PARAM=VALUE (repeatable)")
      ->type_name("NODE.PARAM=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--target", args.targets, "Run only this node and what it needs (repeatable)")
      ->type_name("NODE")
      ->allow_extra_args(false);
}

// The files the command line names, checked before anything opens them (user_file.h): "" or why not.
std::string check_command_files(const RunArgs& args) {
  std::string bad;
  switch (args.command) {
    case RunCommand::Run:
    case RunCommand::Validate:  // a .vgflow, a video, or a PNG-sequence folder with a workflow
      return check_user_file("The workflow", args.flow, UserFileKind::FileOrFolder);
    case RunCommand::Compare:
      bad = check_user_file("compare's first input", args.compare_a, UserFileKind::FileOrFolder);
      return bad.empty() ? check_user_file("compare's second input", args.compare_b, UserFileKind::FileOrFolder) : bad;
    case RunCommand::Nodes:
    case RunCommand::History:
    case RunCommand::None: break;
  }
  return bad;
}

}  // namespace

int run_cli_main(int argc, char** argv, const RunnerConfig& config) {
  RunArgs args;
  args.environment = config.environment;
  CLI::App app{"Runs Vidgraph workflow files headless: the same files the editor saves.", config.program};
  app.footer(kFooter);
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("--version", show_version, "Print the version and exit");
  app.add_flag("-v,--verbose", args.verbose, "Show debug log lines");

  CLI::App* run = app.add_subcommand("run", "Run a workflow");
  add_flow_options(run, args);
  run->add_option("--output-dir", args.output_dir, "Folder for output files (default: current folder)")->type_name("DIR");
  run->add_option("--resources", args.resources_dir, "Resources folder for {resources}/ paths")->type_name("DIR");
  run->add_flag("--overwrite", args.overwrite, "Let nodes replace existing output files");
  run->add_flag("--allow-outside-writes", args.allow_outside_writes,
                "Let a workflow read from a video or PNG sequence write outside --output-dir (only for a file "
                "you trust)");
  run->add_flag("--no-history", args.no_history,
                "Do not add this run to the output folder's history (vidgraph-history.jsonl)");
  run->add_flag("--json-events", args.json_events, "Print one JSON object per event per line on stdout");
  run->add_option("--previews", args.previews_dir,
                  "Save each sampler step's preview as a PNG in this folder (--json-events gives its path)")
      ->type_name("DIR");
  run->add_option("--sweep", args.sweeps,
                  "Run once per value, in one process with a shared cache: NODE.PARAM=V1,V2,... "
                  "(repeatable: every combination)")
      ->type_name("NODE.PARAM=V1,V2,...")
      ->allow_extra_args(false);
  run->add_option("--cache-budget", args.cache_budget_gib,
                  "Memory for results kept between the runs of a sweep, in GiB (default 8); give more than "
                  "the model's size so that it is loaded once")
      ->type_name("GIB")
      ->check(finite_number(0.0, kMaxCacheBudgetGib, true));
  run->add_option("--nproc", args.nproc,
                  "Run as N processes on this machine, one GPU each, the DiT sequence-parallel over them; "
                  "rank 0 prints and writes the outputs")
      ->type_name("N")
      ->check(CLI::Range(1, 256));
  run->add_option("--dist-backend", args.dist_backend, "Process-group backend: auto (nccl on GPUs, gloo on CPU), gloo or nccl")
      ->type_name("NAME")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  run->add_option("--dist-timeout", args.dist_timeout_s,
                  "Seconds a rank waits for the others in a collective before it stops (default 60)")
      ->type_name("S")
      ->check(CLI::Range(1, 86400));

  CLI::App* validate = app.add_subcommand("validate", "Check a workflow without running it");
  add_flow_options(validate, args);
  validate->add_flag("--json", args.json, "Print the result as JSON");
  validate->add_option("--output-dir", args.output_dir,
                       "The run's output folder: a shared workflow's writes are checked against it (default: "
                       "current folder)")
      ->type_name("DIR");
  validate->add_flag("--allow-outside-writes", args.allow_outside_writes,
                     "As for run: do not report a shared workflow's writes outside --output-dir");

  CLI::App* nodes = app.add_subcommand("nodes", "List every node type with its ports and params");
  nodes->add_flag("--json", args.json, "Print the list as JSON");

  CLI::App* compare = app.add_subcommand("compare", "PSNR and SSIM between two videos, per frame and overall");
  compare->add_option("a", args.compare_a, "First video (MP4, WebM or PNG-sequence folder)")->required();
  compare->add_option("b", args.compare_b, "Second video, the same size")->required();
  compare->add_flag("--json", args.json, "Print the result as JSON");
  compare->add_option("--side-by-side", args.side_by_side, "Write A | B side by side to this new .mp4/.webm")
      ->type_name("OUT");
  compare->add_option("--difference", args.difference, "Write |A - B| x gain to this new .mp4/.webm")
      ->type_name("OUT");
  compare->add_option("--gain", args.gain, "Amplification of the difference video (default 4)")
      ->type_name("G")
      ->check(finite_number(0.0, 1000.0, true));

  CLI::App* history = app.add_subcommand("history", "List the runs of an output folder, or print one's workflow");
  history->add_option("folder", args.history_dir, "The runs' --output-dir (default: current folder)")
      ->type_name("FOLDER");
  history->add_flag("--json", args.json, "Print the runs as JSON, workflows included");
  history->add_option("--workflow", args.history_workflow,
                      "Print run N's workflow as it ran (save it as a .vgflow to re-open or re-run it)")
      ->type_name("N")
      ->check(CLI::Range(1, 1 << 30));
  history->add_option("--diff", args.history_diff, "Print the params runs A and B differ in")
      ->type_name("A B")
      ->expected(2)
      ->check(CLI::Range(1, 1 << 30));

  CLI::App* models = nullptr;
  if (config.list_models) {
    models = app.add_subcommand("models", "List the model files of ComfyUI-style folders, by kind");
    models->add_option("folders", args.model_folders, "ComfyUI models folders (ComfyUI/models)")
        ->type_name("FOLDER");
    models->add_option("--model-paths", args.model_paths,
                       "ComfyUI's extra_model_paths.yaml (default: $VIDGRAPH_MODEL_PATHS)")
        ->type_name("FILE");
    models->add_flag("--json", args.json, "Print the list as JSON");
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\nRun '%s --help' for usage.\n", config.program.c_str(), e.what(),
                 config.program.c_str());
    return kExitInvalid;
  }
  if (show_version) {
    std::printf("%s %s\n", config.program.c_str(), config.version.c_str());
    if (config.version_details) {
      const std::string details = config.version_details();
      if (!details.empty()) std::printf("%s\n", details.c_str());
    }
    return kExitOk;
  }
  if (run->parsed()) args.command = RunCommand::Run;
  if (validate->parsed()) args.command = RunCommand::Validate;
  if (nodes->parsed()) args.command = RunCommand::Nodes;
  if (compare->parsed()) args.command = RunCommand::Compare;
  if (history->parsed()) {  // reads one file: no node registry needed
    const std::string bad = args.history_dir.empty()
                                ? std::string()
                                : check_user_file("The history folder", args.history_dir, UserFileKind::FileOrFolder);
    if (!bad.empty()) {
      std::fprintf(stderr, "error: %s\n", bad.c_str());
      return kExitInvalid;
    }
    return command_history(args);
  }
  if (models != nullptr && models->parsed()) {  // reads files only: no node registry needed
    std::string bad = args.model_paths.empty()
                          ? std::string()
                          : check_user_file("The --model-paths file", args.model_paths, UserFileKind::File);
    for (const std::string& folder : args.model_folders) {
      if (bad.empty()) bad = check_user_file("The models folder", folder, UserFileKind::FileOrFolder);
    }
    if (!bad.empty()) {
      std::fprintf(stderr, "error: %s\n", bad.c_str());
      return kExitInvalid;
    }
    return config.list_models(args.model_folders, args.model_paths, args.json);
  }
  if (args.command == RunCommand::None) {
    std::fprintf(stderr,
                 "%s: choose a command: run, validate, nodes, compare, history or models\nRun '%s --help' for usage.\n",
                 config.program.c_str(), config.program.c_str());
    return kExitInvalid;
  }
  if (std::string bad = check_command_files(args); !bad.empty()) {
    report_error(args, bad);
    return kExitInvalid;
  }

  const bool several_ranks = args.nproc > 1 || running_as_rank(args.environment);
  if (args.command == RunCommand::Run && several_ranks && !args.sweeps.empty()) {
    std::fprintf(stderr, "error: --sweep cannot run as several processes (--nproc, torchrun); run the sweep's "
                         "runs one by one.\n");
    return kExitInvalid;
  }
  if (args.command == RunCommand::Run && args.nproc > 1 && !running_as_rank(args.environment)) {
    return launch_ranks(argv, args);
  }
  setup_logging(args.verbose);
  args.embedded_workflow = config.embedded_workflow;
  if (args.command == RunCommand::Compare) {  // needs no node types
    if (config.compare) return config.compare(args);
    std::fprintf(stderr, "error: this build of %s has no media support, so it cannot compare videos.\n",
                 config.program.c_str());
    return kExitInvalid;
  }
  std::shared_ptr<const engine::RunServices> services;
  if (args.command == RunCommand::Run && running_as_rank(args.environment)) {
    std::string error = rank_gpu_visibility(args.environment);  // before anything initialises CUDA
    if (error.empty()) {
      error = config.join_ranks ? config.join_ranks(args.dist_backend, args.dist_timeout_s, &services)
                                : "this program was built without the model layer, so it cannot run as several "
                                  "processes";
    }
    if (!error.empty()) {
      report_error(args, "rank " + std::to_string(own_rank(args.environment)) + ": " + error);
      return kExitInvalid;
    }
  }
  RunSession session;
  try {
    session = config.open_session ? config.open_session(args)
                                  : session_from_args(std::make_shared<const engine::Registry>(), args);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: registering node types failed: %s\n", e.what());
    return kExitInvalid;
  }
  session.run_defaults.services = services;
  switch (args.command) {
    case RunCommand::Run: return command_run(args, session);
    case RunCommand::Validate: return command_validate(args, *session.registry);
    case RunCommand::Nodes: return command_nodes(args, *session.registry);
    case RunCommand::Compare:
    case RunCommand::History:
    case RunCommand::None: break;
  }
  return kExitInvalid;
}

}  // namespace vidgraph::cli
