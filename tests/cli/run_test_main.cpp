// vidgraph-run-test: the runner built from the product's run_* sources with the test-only node
// types instead of the built-in ones. Used by tst_cli; never installed.
#include <memory>

#include "engine/environment.h"
#include "engine_test_nodes.h"
#include "run_cli.h"
#include "run_driver.h"

int main(int argc, char** argv) {
  vidgraph::cli::RunnerConfig config;
  config.program = "vidgraph-run-test";
  config.environment = vidgraph::engine::read_environment();
  config.version = VIDGRAPH_VERSION;
  config.open_session = [](const vidgraph::cli::RunArgs& args) {
    auto registry = std::make_shared<vidgraph::engine::Registry>();
    vidgraph::test::register_engine_test_nodes(*registry);
    return vidgraph::cli::session_from_args(std::move(registry), args);
  };
  return vidgraph::cli::run_cli_main(argc, argv, config);
}
