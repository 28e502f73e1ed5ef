// vidgraph-run: the product executable. Its commands run against a nodes::Session (when the nodes
// layer is part of the build: the attention plugin and the built-in node types registered against
// it, as the editor builds it), then hands over to run_cli_main. Test-only node types never appear
// here (see tests/cli for vidgraph-run-test).
#include <chrono>
#include <csignal>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/environment.h"
#include "run_cli.h"
#include "run_driver.h"
#include "user_file.h"
#ifdef VIDGRAPH_HAVE_MODEL_IO
#include "run_models.h"
#endif

#ifdef VIDGRAPH_HAVE_NODES
#include <ATen/Context.h>

#include "nodes/common/rank_broadcast.h"
#include "nodes/build_info.h"
#include "nodes/session.h"
#endif  // VIDGRAPH_HAVE_NODES
#ifdef VIDGRAPH_HAVE_COMPARE
#include "compare_command.h"
#include "nodes/media/embedded_workflow.h"
#endif  // VIDGRAPH_HAVE_COMPARE

#ifdef VIDGRAPH_HAVE_NODES
namespace {

// The session of one invocation, from the options that are session settings and the environment's.
std::shared_ptr<vidgraph::nodes::Session> open_session(const vidgraph::cli::RunArgs& args,
                                                       const vidgraph::engine::Environment& environment) {
  vidgraph::nodes::SessionSettings settings;
  settings.resources_dir = args.resources_dir;
  settings.cache_budget_bytes = vidgraph::cli::engine_config(args).cache_budget_bytes;
  settings.plugin_path = environment.plugin_path;
  settings.model_paths_file = environment.model_paths_file;
  return std::make_shared<vidgraph::nodes::Session>(std::move(settings));
}

}  // namespace
#endif  // VIDGRAPH_HAVE_NODES

int main(int argc, char** argv) {
  // Read once; every command below gets its values as parameters (engine/environment.h).
  const vidgraph::engine::Environment environment = vidgraph::engine::read_environment();
  vidgraph::cli::RunnerConfig config;
  config.environment = environment;
  config.version = VIDGRAPH_VERSION;
#ifdef VIDGRAPH_HAVE_COMPARE
  config.compare = vidgraph::cli::command_compare;
  config.embedded_workflow = [](const std::string& path) -> std::optional<vidgraph::engine::Result<std::string>> {
    namespace media = vidgraph::nodes::media;
    if (!media::may_embed_workflow(path)) return std::nullopt;
    std::string json, error;
    using Text = vidgraph::engine::Result<std::string>;
    namespace cli = vidgraph::cli;
    std::error_code ec;  // a PNG-sequence folder's workflow is in its metadata.json: check both
    const std::string metadata = std::filesystem::is_directory(path, ec) ? path + "/metadata.json" : path;
    for (const std::string& file : {path, metadata}) {
      error = cli::check_user_file(file == path ? "The workflow" : "The PNG sequence's metadata file", file,
                                   file == path ? cli::UserFileKind::FileOrFolder : cli::UserFileKind::File);
      if (!error.empty()) return Text(vidgraph::engine::make_error(error));
    }
    if (!media::read_embedded_workflow(path, &json, &error)) return Text(vidgraph::engine::make_error(error));
    return Text(std::move(json));
  };
#endif  // VIDGRAPH_HAVE_COMPARE
#ifdef VIDGRAPH_HAVE_NODES
  config.open_session = [&environment](const vidgraph::cli::RunArgs& args) {
    auto session = open_session(args, environment);
    vidgraph::cli::RunSession run;
    // Shares the session's ownership: the registry keeps its node types' plugin loaded.
    run.registry = std::shared_ptr<const vidgraph::engine::Registry>(session, &session->registry());
    run.engine = session->engine_config();
    run.run_defaults = session->run_options();
    return run;
  };
#endif  // VIDGRAPH_HAVE_NODES
  config.version_details = [&]() -> std::string {
    std::string lines;
#ifdef VIDGRAPH_HAVE_NODES
    for (const auto& [component, version] : vidgraph::nodes::build_versions())
      if (component != "Vidgraph") lines += component + ": " + version + "\n";
#endif  // VIDGRAPH_HAVE_NODES
    lines += "Qt: not used (the headless runner needs no Qt)\n";
#ifdef VIDGRAPH_HAVE_NODES
    lines += "attention plugin: " + open_session({}, environment)->attention_plugin_description();
#endif  // VIDGRAPH_HAVE_NODES
    return lines;
  };
#ifdef VIDGRAPH_HAVE_MODEL_IO
  config.list_models = [&environment](const std::vector<std::string>& folders, const std::string& model_paths,
                                      bool json) {
    return vidgraph::cli::command_models(folders, model_paths, environment.model_paths_file, json);
  };
#endif
#ifdef VIDGRAPH_HAVE_NODES
  config.join_ranks = [&environment](const std::string& backend, int timeout_s,
                         std::shared_ptr<const vidgraph::engine::RunServices>* services) -> std::string {
    namespace parallel = vidgraph::parallel;
    try {
      parallel::ProcessGroupOptions base;
      base.backend = backend;
      base.timeout = std::chrono::seconds(timeout_s);
      auto options = parallel::process_group_options_from_torchrun(environment.torchrun, base);
      if (!options) return "WORLD_SIZE is not set";
      // Each rank sees its own GPU as device 0 (the launcher sets CUDA_VISIBLE_DEVICES per rank).
      if (at::hasCUDA()) options->device = c10::Device(c10::kCUDA, 0);
      // A peer that dies closes its sockets; writing to them must fail the collective, not kill us.
      std::signal(SIGPIPE, SIG_IGN);
      auto group = parallel::ProcessGroupHandle::create(*options);
      // Rank 0 speaks for the job; the others only when asked (-v).
      spdlog::log(group->rank() == 0 ? spdlog::level::info : spdlog::level::debug, "rank {} of {} joined the {} process group",
                  group->rank(), group->world_size(), group->backend());
      *services = vidgraph::nodes::rank_group(std::make_shared<parallel::SequenceParallel>(group));
      return "";
    } catch (const std::exception& e) {
      return e.what();
    }
  };
#endif  // VIDGRAPH_HAVE_NODES
  return vidgraph::cli::run_cli_main(argc, argv, config);
}
