// vidgraph-run-test: the runner built from the product's run_* sources with the test-only node
// types instead of the built-in ones. Used by tst_cli; never installed.
//
// Outputs with an embedded workflow: a PNG-sequence folder (or its metadata.json) holding
// {"workflow": "<workflow text>"}, the format Export Video writes (nodes/media/embedded_workflow.h),
// read here without the media library so that the shared-file rules can be tested without FFmpeg.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/environment.h"
#include "engine_test_nodes.h"
#include "run_cli.h"
#include "run_driver.h"

namespace {

std::optional<vidgraph::engine::Result<std::string>> sequence_workflow(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path file = fs::is_directory(path, ec) ? fs::path(path) / "metadata.json" : fs::path(path);
  if (file.filename() != "metadata.json" || !fs::is_regular_file(file, ec)) return std::nullopt;
  std::ifstream in(file);
  const auto meta = nlohmann::json::parse(std::istreambuf_iterator<char>(in), {}, nullptr, false);
  if (!meta.is_object() || !meta.contains("workflow") || !meta["workflow"].is_string()) {
    return vidgraph::engine::Result<std::string>(
        vidgraph::engine::make_error("'" + file.string() + "' holds no workflow."));
  }
  return vidgraph::engine::Result<std::string>(meta["workflow"].get<std::string>());
}

}  // namespace

int main(int argc, char** argv) {
  vidgraph::cli::RunnerConfig config;
  config.program = "vidgraph-run-test";
  config.environment = vidgraph::engine::read_environment();
  config.version = VIDGRAPH_VERSION;
  config.embedded_workflow = sequence_workflow;
  config.open_session = [](const vidgraph::cli::RunArgs& args) {
    auto registry = std::make_shared<vidgraph::engine::Registry>();
    vidgraph::test::register_engine_test_nodes(*registry);
    return vidgraph::cli::session_from_args(std::move(registry), args);
  };
  return vidgraph::cli::run_cli_main(argc, argv, config);
}
