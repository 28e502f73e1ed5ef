// Reads the variables of environment.h; the only getenv of them.
#include "environment.h"

#include <cstdlib>
#include <sstream>
#include <utility>

namespace vidgraph::engine {
namespace {

std::string variable(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

std::vector<std::string> split_path(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) out.push_back(item);
  return out;
}

}  // namespace

const std::vector<std::string>& torchrun_variables() {
  static const std::vector<std::string> names{"WORLD_SIZE",  "RANK",        "LOCAL_RANK",
                                              "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE",
                                              "GLOO_SOCKET_IFNAME"};
  return names;
}

Environment read_environment() {
  Environment env;
  env.plugin_path = split_path(variable("VIDGRAPH_PLUGIN_PATH"));
  env.model_paths_file = variable("VIDGRAPH_MODEL_PATHS");
  for (const std::string& name : torchrun_variables()) {
    std::string value = variable(name.c_str());
    if (!value.empty()) env.torchrun[name] = std::move(value);
  }
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) env.cuda_visible_devices = visible;
  return env;
}

}  // namespace vidgraph::engine
