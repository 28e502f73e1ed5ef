// Test-only node types (see engine_test_nodes.h).
#include "engine_test_nodes.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "engine/node_context.h"

namespace vidgraph::test {

using engine::NodeContext;
using engine::NodeType;
using engine::ParamSpec;
using engine::PortSpec;
using engine::Result;
using engine::ValueMap;

namespace {

std::mutex g_mutex;
std::map<std::string, int> g_counts;
double g_last_sink = 0.0;

void count(const NodeContext& ctx) {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_counts[ctx.node_id()];
}

engine::Value number(double v) { return engine::make_value("NUMBER", v); }

double number_input(const NodeContext& ctx, const std::string& port, double fallback = 0.0) {
  return ctx.has_input(port) ? ctx.input_as<double>(port) : fallback;
}

NodeType base(const std::string& name, const std::string& description) {
  NodeType t;
  t.name = name;
  t.display_name = name;
  t.category = "test";
  t.description = description;
  return t;
}

PortSpec port(const std::string& name, const std::string& type, bool optional = false) {
  return PortSpec{name, type, optional, name + " port"};
}

NodeType number_type() {
  NodeType t = base("Number", "A constant number.");
  t.outputs = {port("value", "NUMBER")};
  t.params = {ParamSpec::real("value", 1.0, -1e9, 1e9, "the number")};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    return ValueMap{{"value", number(ctx.param_float("value"))}};
  };
  return t;
}

NodeType add_type() {
  NodeType t = base("Add", "a + b + offset.");
  t.inputs = {port("a", "NUMBER"), port("b", "NUMBER", true)};
  t.outputs = {port("sum", "NUMBER")};
  t.params = {ParamSpec::real("offset", 0.0, -1000.0, 1000.0)};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    const double sum = number_input(ctx, "a") + number_input(ctx, "b") + ctx.param_float("offset");
    return ValueMap{{"sum", number(sum)}};
  };
  return t;
}

NodeType scale_type() {
  NodeType t = base("Scale", "x * factor.");
  t.inputs = {port("x", "NUMBER")};
  t.outputs = {port("out", "NUMBER")};
  t.params = {ParamSpec::real("factor", 2.0, -100.0, 100.0)};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    return ValueMap{{"out", number(number_input(ctx, "x") * ctx.param_float("factor"))}};
  };
  return t;
}

NodeType slow_type() {
  NodeType t = base("Slow", "Counts steps slowly; cancellable.");
  t.inputs = {port("x", "NUMBER", true)};
  t.outputs = {port("out", "NUMBER")};
  t.params = {ParamSpec::integer("steps", 10, 1, 100000), ParamSpec::integer("step_ms", 1, 0, 1000)};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    const auto steps = ctx.param_int("steps");
    const auto step_ms = ctx.param_int("step_ms");
    for (std::int64_t i = 0; i < steps; ++i) {
      if (ctx.cancelled()) return engine::make_error("cancelled at step " + std::to_string(i));
      std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
      ctx.progress(i + 1, steps, "step");
    }
    return ValueMap{{"out", number(number_input(ctx, "x") + static_cast<double>(steps))}};
  };
  return t;
}

NodeType learn_type() {
  NodeType t = base("Learn", "Posts a falling loss per step, as a training node does.");
  t.outputs = {port("out", "NUMBER")};
  t.params = {ParamSpec::integer("steps", 5, 1, 1000)};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    const auto steps = ctx.param_int("steps");
    for (std::int64_t i = 1; i <= steps; ++i) ctx.progress(i, steps, "learning", {{"loss", 1.0 / i}, {"lr", 0.001}});
    return ValueMap{{"out", number(1.0 / steps)}};
  };
  return t;
}

NodeType fail_type() {
  NodeType t = base("Fail", "Throws an exception.");
  t.inputs = {port("x", "NUMBER", true)};
  t.outputs = {port("out", "NUMBER")};
  t.params = {ParamSpec::string("message", "boom")};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    throw std::runtime_error(ctx.param_string("message"));
  };
  return t;
}

NodeType refuse_type() {
  NodeType t = base("Refuse", "Returns an error value.");
  t.inputs = {port("x", "NUMBER", true)};
  t.outputs = {port("out", "NUMBER")};
  t.params = {ParamSpec::string("message", "refused")};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    return engine::Error{ctx.node_id(), ctx.param_string("message")};
  };
  return t;
}

NodeType blob_type() {
  NodeType t = base("Blob", "A value that claims `bytes` of memory.");
  t.outputs = {port("out", "BLOB")};
  t.params = {ParamSpec::integer("bytes", 100, 0, 1e12), ParamSpec::string("tag", "")};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    const auto bytes = static_cast<std::size_t>(ctx.param_int("bytes"));
    return ValueMap{{"out", engine::make_value("BLOB", ctx.param_string("tag"), bytes)}};
  };
  return t;
}

NodeType sink_type() {
  NodeType t = base("Sink", "Records the last number it receives.");
  t.inputs = {port("value", "*")};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    if (const double* v = engine::value_as<double>(*ctx.input("value"))) {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_last_sink = *v;
    }
    ctx.log_info("sink got a " + ctx.input("value")->type);
    return ValueMap{};
  };
  return t;
}

NodeType kinds_type() {
  NodeType t = base("Kinds", "One param of every kind.");
  t.outputs = {port("out", "NUMBER")};
  t.params = {ParamSpec::integer("count", 3, 1, 10),
              ParamSpec::real("ratio", 0.5, 0.0, 1.0),
              ParamSpec::boolean("flag", false),
              ParamSpec::string("name", "x"),
              ParamSpec::text("prompt", "a cat"),
              ParamSpec::enumeration("mode", {"fast", "slow"}, "fast"),
              ParamSpec::file_path("file", "in.png", "Images (*.png)"),
              ParamSpec::folder_path("folder", "out"),
              ParamSpec::seed("seed", 42)};
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    return ValueMap{{"out", number(static_cast<double>(ctx.param_int("count")) * ctx.param_float("ratio"))}};
  };
  return t;
}

NodeType write_text_type() {
  NodeType t = base("WriteText", "Writes text to a file.");
  t.inputs = {port("x", "NUMBER", true)};
  t.outputs = {port("path", "STRING")};
  t.params = {ParamSpec::file_path("file", "{output}/out.txt").written(), ParamSpec::text("text", "hello")};
  t.always_run = true;
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    const std::string path = ctx.param_path("file");
    if (std::filesystem::exists(path) && !ctx.overwrite()) {
      return engine::Error{ctx.node_id(), "'" + path + "' exists; pass --overwrite to replace it"};
    }
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << ctx.param_string("text");
    ctx.wrote(path);
    return ValueMap{{"path", engine::make_value("STRING", path)}};
  };
  return t;
}

NodeType versioned_type() {
  NodeType t = base("Versioned", "Version 2 renamed param 'amount' to 'value'.");
  t.version = 2;
  t.outputs = {port("out", "NUMBER")};
  t.params = {ParamSpec::real("value", 0.0)};
  t.upgrade = [](int from, const nlohmann::json& params) -> Result<nlohmann::json> {
    if (from != 1) return engine::make_error("unknown old version " + std::to_string(from));
    nlohmann::json p = params;
    if (p.contains("amount")) {
      p["value"] = p["amount"];
      p.erase("amount");
    }
    return p;
  };
  t.compute = [](NodeContext& ctx) -> Result<ValueMap> {
    count(ctx);
    ctx.log_info("value " + std::to_string(ctx.param_float("value")));
    return ValueMap{{"out", number(ctx.param_float("value"))}};
  };
  return t;
}

}  // namespace

void register_engine_test_nodes(engine::Registry& registry) {
  for (NodeType t : {number_type(), add_type(), scale_type(), slow_type(), learn_type(), fail_type(), refuse_type(), blob_type(),
                     sink_type(), kinds_type(), write_text_type(), versioned_type()}) {
    auto s = registry.add(std::move(t));
    if (!s) throw std::logic_error("test node registration failed: " + s.error().message);
  }
}

int compute_count(const std::string& node_id) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_counts.find(node_id);
  return it == g_counts.end() ? 0 : it->second;
}

int total_compute_count() {
  std::lock_guard<std::mutex> lock(g_mutex);
  int total = 0;
  for (const auto& [id, n] : g_counts) total += n;
  return total;
}

void reset_compute_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_counts.clear();
  g_last_sink = 0.0;
}

double last_sink_value() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_last_sink;
}

}  // namespace vidgraph::test
