// `vidgraph-attention run` and `methods`. See attention_run.h.
#include "app/cli/attention_run.h"

#include "app/cli/attention_report.h"
#include "app/cli/attention_tool.h"
#include "models/io/safetensors.h"
#include "nodes/output_path.h"

#include <ATen/ops/ones_like.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/Device.h>
#include <torch/csrc/autograd/autograd.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace vidgraph::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for queued device work on t's device (timings of GPU calls); nothing on the CPU.
void device_sync(const at::Tensor& t) {
  if (t.defined() && t.numel() > 0 && !t.device().is_cpu()) (void)t.reshape({-1})[0].item<double>();
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

std::optional<at::ScalarType> parse_dtype(const std::string& text) {
  if (text == "keep") return std::nullopt;
  if (text == "float32") return at::kFloat;
  if (text == "float64") return at::kDouble;
  if (text == "float16") return at::kHalf;
  if (text == "bfloat16") return at::kBFloat16;
  throw std::invalid_argument("--dtype must be keep, float32, float64, float16 or bfloat16, got '" + text + "'");
}

plugin::ParamMap parse_params(const plugin::MethodInfo& method, const std::vector<std::string>& items) {
  plugin::ParamMap params;
  for (const auto& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--param must be name=value, got '" + item + "'");
    const std::string name = item.substr(0, eq);
    const plugin::ParamDescriptor* desc = nullptr;
    for (const auto& d : method.params)
      if (d.name == name) desc = &d;
    if (desc == nullptr)
      throw std::invalid_argument("method '" + method.name + "' has no parameter '" + name + "'");
    params[name] = plugin::param_value_from_string(*desc, item.substr(eq + 1));
  }
  return plugin::resolve_params(method, params);
}

struct Inputs {
  plugin::AttentionCall call;
  plugin::TokenGrid grid;
  plugin::ParamMap params;  // resolved
  at::Tensor dout;
};

Inputs read_inputs(const AttentionRunOptions& o, plugin::AttentionBackend& backend, const plugin::MethodInfo& method) {
  const auto file = model_io::SafetensorsFile::open(o.input);
  const c10::Device device(o.device);
  const auto dtype = parse_dtype(o.dtype);
  auto load = [&](const std::string& name, bool required) -> at::Tensor {
    if (!file.contains(name)) {
      if (required)
        throw std::invalid_argument("input file '" + o.input + "' has no tensor '" + name + "' (q, k and v are required)");
      return {};
    }
    at::Tensor t = file.load(name, device, dtype);
    return o.backward ? t.requires_grad_(true) : t;
  };
  Inputs in;
  in.grid = parse_grid(o.grid);
  in.params = parse_params(method, o.params);
  in.call.q = load("q", true);
  in.call.k = load("k", true);
  in.call.v = load("v", true);
  in.call.extras.gate = load("gate", false);
  in.call.extras.proj_l_weight = load("proj_l.weight", false);
  in.call.extras.proj_l_bias = load("proj_l.bias", false);
  if (file.contains("do")) in.dout = file.load("do", device, dtype);
  in.call.prepared = plugin::prepare_for(backend, o.method, in.params, in.call.q, in.grid);
  return in;
}

std::map<std::string, std::string> metadata_of(const AttentionRunOptions& o, const Inputs& in,
                                               const plugin::LoadedPlugin& plugin) {
  std::map<std::string, std::string> m{{"method", o.method},
                                       {"grid", o.grid},
                                       {"device", o.device},
                                       {"plugin", plugin.name() + " " + plugin.version()}};
  for (const auto& [name, value] : in.params) m["param." + name] = plugin::param_value_to_string(value);
  return m;
}

// Backward through the result: the gradients of every input that was given, named for the file.
model_io::NamedTensors backward_of(const at::Tensor& out, const Inputs& in, double* ms) {
  const std::vector<std::pair<std::string, at::Tensor>> wrt{
      {"dq", in.call.q}, {"dk", in.call.k}, {"dv", in.call.v}, {"dgate", in.call.extras.gate},
      {"dproj_l.weight", in.call.extras.proj_l_weight}, {"dproj_l.bias", in.call.extras.proj_l_bias}};
  std::vector<at::Tensor> inputs;
  for (const auto& [name, t] : wrt)
    if (t.defined()) inputs.push_back(t);
  const at::Tensor dout = in.dout.defined() ? in.dout : at::ones_like(out);
  TORCH_CHECK(dout.sizes() == out.sizes(), "tensor 'do' must have the shape of the output ", out.sizes(),
              ", got ", dout.sizes());
  const auto t0 = Clock::now();
  const auto grads = torch::autograd::grad({out}, inputs, {dout.to(out.scalar_type())}, c10::nullopt, false, true);
  device_sync(grads.front());
  *ms = ms_since(t0);
  model_io::NamedTensors named;
  size_t i = 0;
  for (const auto& [name, t] : wrt) {
    if (!t.defined()) continue;
    const at::Tensor& g = grads[i++];
    named.emplace_back(name, g.defined() ? g : at::zeros_like(t));
  }
  return named;
}

// Writes `outputs` through a temporary published without replacing anything the tool did not
// write; returns the path written.
std::string save_outputs(const nodes::OutputTarget& target, const model_io::NamedTensors& outputs,
                         const std::map<std::string, std::string>& metadata) {
  const std::string temp = nodes::temporary_sibling(target.path);
  try {
    model_io::save_safetensors(temp, outputs, metadata);
  } catch (...) {
    nodes::remove_temporary(temp);
    throw;
  }
  const nodes::Published published = nodes::publish_output(temp, target);
  if (!published.error.empty()) {
    nodes::remove_temporary(temp);
    throw std::runtime_error(published.error);
  }
  return published.path;
}

}  // namespace

int run_attention(const AttentionRunOptions& o) {
  auto log = attention_tool_logger();
  const nodes::OutputTarget target{o.output, o.overwrite ? nodes::Naming::Overwrite : nodes::Naming::Fail,
                                   nodes::OutputKind::Safetensors};
  if (std::string problem = nodes::check_output_target(target); !problem.empty()) {
    log->error("{}", problem);
    return 1;
  }
  nodes::remove_stale_temporaries(o.output);
  auto loaded = load_plugin_or_report(o.plugin_name);
  if (!loaded) return 2;
  try {
    const auto methods = loaded->backend().methods();
    const plugin::MethodInfo* method = plugin::find_method(methods, o.method);
    if (method == nullptr) throw std::invalid_argument("unknown method '" + o.method + "'; see `vidgraph-attention methods`");
    Inputs in = read_inputs(o, loaded->backend(), *method);
    auto t0 = Clock::now();
    plugin::AttentionResult result = loaded->backend().forward_with_stats(in.call);
    device_sync(result.out);
    const double forward_ms = ms_since(t0);
    model_io::NamedTensors outputs{{"o", result.out.detach()}};
    double backward_ms = 0;
    if (o.backward) {
      for (auto& named : backward_of(result.out, in, &backward_ms)) outputs.push_back(std::move(named));
    }
    const std::string written = save_outputs(target, outputs, metadata_of(o, in, *loaded));
    nlohmann::json report{{"method", o.method},
                          {"grid", {in.grid.t, in.grid.h, in.grid.w}},
                          {"shape", in.call.q.sizes().vec()},
                          {"device", o.device},
                          {"plugin", loaded->name() + " " + loaded->version()},
                          {"forward_ms", forward_ms},
                          {"output", written},
                          {"selection", selection_stats_json(result.stats)}};
    if (o.backward) report["backward_ms"] = backward_ms;
    std::printf("%s\n", report.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  } catch (const c10::Error& e) {
    log->error("{}", e.what_without_backtrace());
  } catch (const std::exception& e) {
    log->error("{}", e.what());
  }
  return 1;
}

int print_methods(const std::string& plugin_name) {
  auto loaded = load_plugin_or_report(plugin_name);
  if (!loaded) return 2;
  nlohmann::json j{{"plugin", plugin::plugin_version_string(*loaded)},
                   {"methods", methods_json(loaded->backend().methods())}};
  std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace vidgraph::cli
