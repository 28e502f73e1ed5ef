// What a node's compute function sees: its id, inputs, params, run options, and the channels back to
// the engine (progress, cancellation, log lines, previews).
//
// Contract:
//   - Inputs are keyed by input port name; an unconnected optional input is absent (input() returns
//     nullptr, has_input() false). Required inputs are always present when compute runs.
//   - Params have every declared param filled (defaults for missing ones). The typed getters throw
//     std::runtime_error naming the param when it is missing or of the wrong JSON type; thrown inside
//     compute, that becomes a node error.
//   - progress(), log(), emit_preview() post events on the engine's bus from the calling thread (the
//     worker); they are cheap but not free: report progress per step, not per pixel.
//   - cancelled() is cooperative: poll it in every loop that can take more than ~100 ms and return
//     promptly (any return value; the engine records the node as cancelled).
//   - A NodeContext can be built directly (with Hooks) to unit-test a compute function without an
//     engine.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_options.h"
#include "value.h"

namespace vidgraph::engine {

enum class LogLevel { Trace, Debug, Info, Warn, Error };

// Named numbers of one progress step, in the order the node gives them.
using ProgressMetrics = std::vector<std::pair<std::string, double>>;

class NodeContext {
 public:
  struct Hooks {
    std::function<void(std::int64_t value, std::int64_t max, const std::string& text, const ProgressMetrics& metrics)>
        progress;
    std::function<bool()> cancelled;
    std::function<void(LogLevel level, const std::string& line)> log;
    std::function<void(const Value& preview)> preview;
    // A preview of step `step` of `steps` (a sampler's current estimate); unset = `preview`.
    std::function<void(const Value& preview, std::int64_t step, std::int64_t steps)> step_preview;
    std::function<void(const std::string& path)> wrote;
  };

  NodeContext(std::string node_id, std::string node_type, ValueMap inputs, nlohmann::json params,
              RunOptions options, Hooks hooks = {});

  const std::string& node_id() const { return node_id_; }
  const std::string& node_type() const { return node_type_; }

  // Inputs.
  bool has_input(const std::string& port) const;
  const Value* input(const std::string& port) const;  // nullptr when absent
  const ValueMap& inputs() const { return inputs_; }
  // The input's object as T; throws std::runtime_error when absent or holding another C++ type.
  template <class T>
  const T& input_as(const std::string& port) const {
    const T* p = value_as<T>(require_input(port));
    if (!p) throw_wrong_input_type(port);
    return *p;
  }
  template <class T>
  std::shared_ptr<const T> input_shared(const std::string& port) const {
    auto p = value_shared<T>(require_input(port));
    if (!p) throw_wrong_input_type(port);
    return p;
  }

  // Params (typed getters throw std::runtime_error on a missing or wrongly typed param).
  const nlohmann::json& params() const { return params_; }
  std::int64_t param_int(const std::string& name) const;      // Int, Seed
  double param_float(const std::string& name) const;          // Float (an integer is accepted)
  bool param_bool(const std::string& name) const;
  std::string param_string(const std::string& name) const;    // String, Text, Enum, paths
  // A FilePath/FolderPath param resolved with the run's path rules.
  std::string param_path(const std::string& name) const;

  // Run options.
  const RunOptions& options() const { return options_; }
  std::string resolve_path(const std::string& path) const { return options_.resolve_path(path); }
  std::string output_dir() const { return options_.output_directory(); }
  bool overwrite() const { return options_.overwrite; }
  const std::string& workflow_json() const { return options_.workflow_json; }

  // Channels back to the engine.
  // `metrics`: the step's numbers by name (a training step's "loss" and "lr"), for consumers that
  // chart them; `text` says the same for people.
  void progress(std::int64_t value, std::int64_t max, const std::string& text = std::string(),
                const ProgressMetrics& metrics = {}) const;
  bool cancelled() const;
  void log(LogLevel level, const std::string& line) const;
  void log_info(const std::string& line) const { log(LogLevel::Info, line); }
  void log_warn(const std::string& line) const { log(LogLevel::Warn, line); }
  void emit_preview(const Value& preview) const;
  // One preview per step of a loop (step 1..steps); only the last step's is kept with the cached
  // result. Cheap to skip: has_preview_hook() is false when nobody listens.
  void emit_step_preview(const Value& preview, std::int64_t step, std::int64_t steps) const;
  bool has_preview_hook() const { return hooks_.preview || hooks_.step_preview; }
  // A file (or folder) the node wrote for the user: an export, a saved latent, a trained LoRA. The
  // run's result lists them (RunResult::files), and so does its history.
  void wrote(const std::string& path) const;

 private:
  const Value& require_input(const std::string& port) const;
  [[noreturn]] void throw_wrong_input_type(const std::string& port) const;
  const nlohmann::json& require_param(const std::string& name) const;

  std::string node_id_;
  std::string node_type_;
  ValueMap inputs_;
  nlohmann::json params_;
  RunOptions options_;
  Hooks hooks_;
};

}  // namespace vidgraph::engine
