// The attention-param schema (app/nodes/attention_params_bridge.h) through the real Wan Sampler and
// the real attention plugin: every plugin param is a workflow param with the plugin's exact rules and
// reaches the plugin; a value the plugin refuses is a validation error naming the param, from the
// engine and from vidgraph-run (validate and run, exit 2, nothing loaded); a workflow written against
// a plugin with one param more or one less keeps its values and reports the param; a setting the
// plugin cannot prepare (a tile out of range past validation, a head dim the CPU path refuses) is a
// node error before the first sampling step.
#include <ATen/core/Tensor.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/randn.h>

#include <string>
#include <vector>

#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include "engine/registry.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "models/wan/wan_tiny.h"
#include "nodes/common/node_types.h"
#include "nodes/model/model_handles.h"
#include "nodes/register_nodes.h"
#include "nodes/sampling/conditioning.h"
#include "nodes/sampling/latent.h"
#include "nodes/value_types.h"
#include "nodes_test_fixture.h"
#include "plugins/api/plugin_loader.h"
#include "process_run.h"

using namespace vidgraph;
using namespace vidgraph::nodes;
using nlohmann::json;
using nodes_test::make_context;
using nodes_test::Recorder;

namespace {

const char* const kSamplerFlow = VIDGRAPH_SOURCE_DIR "/tests/bench/graph/sampler-t2v.vgflow";
const char* const kDemoFlow = VIDGRAPH_SOURCE_DIR "/resources/workflows/demo.vgflow";
const char* const kFinetuneFlow = VIDGRAPH_SOURCE_DIR "/resources/workflows/finetune-demo.vgflow";
const char* const kDistillFlow = VIDGRAPH_SOURCE_DIR "/resources/workflows/distill-demo.vgflow";

// A tiny DiT (with the gate and proj_l extras) and matching embeddings.
engine::ValueMap tiny_model_inputs() {
  wan::WanConfig config = wan::wan_tiny_config();
  config.with_gate_compress = true;
  config.with_proj_l = true;
  DitHandle dit;
  dit.model = wan::wan_make_model(config, 7).ptr();
  Conditioning cond;
  cond.context = at::randn({1, 5, dit.model->config().text_dim});
  cond.context_null = at::randn({1, 3, dit.model->config().text_dim});
  return {{"model", engine::make_value(kModelType, dit)},
          {"conditioning", engine::make_value(kConditioningType, cond)}};
}

// 256x256, 5 frames: a token grid of 2 x 8 x 8 (latent 2 x 16 x 16, patches 1 x 2 x 2), so four
// 4x4x4 tiles and a sparsity that matters.
json tiny_params(const std::string& method) {
  return {{"width", 256}, {"height", 256}, {"frames", 5}, {"steps", 1}, {"attention", method}, {"seed", 3}};
}

// A value of `d` other than its default that the plugin accepts.
json other_value(const plugin::ParamDescriptor& d) {
  switch (d.type) {
    case plugin::ParamType::Bool: return !std::get<bool>(d.default_value);
    case plugin::ParamType::Int: return static_cast<int64_t>(d.min);
    case plugin::ParamType::Float: return d.min;
    case plugin::ParamType::String: return d.choices.empty() ? json("x") : json(d.choices.back());
    case plugin::ParamType::IntList: {
      std::string s;
      for (int64_t i = 0; i < d.list_size; ++i) s += (i ? "," : "") + std::to_string(static_cast<int64_t>(d.min) + 1);
      return s;
    }
  }
  return nullptr;
}

// The sampler workflow with the sampler's params replaced by `params` (merged).
std::string sampler_flow_with(const json& params) {
  QFile f(QString::fromUtf8(kSamplerFlow));
  if (!f.open(QIODevice::ReadOnly)) qFatal("cannot read %s", kSamplerFlow);
  json doc = json::parse(f.readAll().toStdString());
  for (json& n : doc["nodes"])
    if (n["id"] == "sampler") n["params"].update(params);
  return doc.dump();
}

test_common::ProcessOutcome run_vidgraph(const QStringList& args) {
  return test_common::run_process(QStringLiteral(VIDGRAPH_RUN), args, 120000);
}

bool any_contains(const std::vector<engine::Error>& errors, const std::string& a, const std::string& b) {
  for (const auto& e : errors)
    if (e.message.find(a) != std::string::npos && e.message.find(b) != std::string::npos) return true;
  return false;
}

}  // namespace

class tst_nodes_schema : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase();
  void everyPluginParamIsAWorkflowParam();
  void everyPluginParamReachesThePlugin();
  void trainWanTakesThePluginParams();
  void refusedValuesFailValidation_data();
  void refusedValuesFailValidation();
  void runnerRefusesBeforeLoading_data();
  void runnerRefusesBeforeLoading();
  void editsKeepARefusedValueForValidation();
  void workflowOfAPluginWithAParamMore();
  void workflowOfAPluginWithAParamLess();
  void conflictingParamsGetTheMethodPrefix();
  void preparationRefusesBeforeSampling_data();
  void preparationRefusesBeforeSampling();

 private:
  const engine::NodeType& sampler() const { return nodes_test::find_type(registry_, "WanSampler"); }
  plugin::LoadedPlugin* plugin_ = nullptr;
  std::vector<plugin::MethodInfo> methods_;
  engine::Registry registry_;
};

void tst_nodes_schema::initTestCase() {
  auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
  QVERIFY2(report.plugin, report.message().c_str());
  plugin_ = report.plugin;
  methods_ = plugin_->backend().methods();
  BuiltinNodeOptions options;
  options.attention_backend = &plugin_->backend();
  register_builtin_nodes(registry_, options);
}

// Flat names; each spec carries the descriptor's default and exact range (open bound included).
void tst_nodes_schema::everyPluginParamIsAWorkflowParam() {
  const engine::ParamSpec* method = sampler().find_param("attention");
  QVERIFY(method);
  QCOMPARE(method->choices.size(), methods_.size());
  int params = 0;
  for (const auto& m : methods_) {
    QVERIFY(std::find(method->choices.begin(), method->choices.end(), m.name) != method->choices.end());
    for (const auto& d : m.params) {
      ++params;
      const engine::ParamSpec* spec = sampler().find_param(d.name);
      QVERIFY2(spec, d.name.c_str());
      QVERIFY2(spec->description.find(m.name) != std::string::npos, spec->description.c_str());
      QVERIFY2(spec->check(spec->default_value).ok(), d.name.c_str());
      QVERIFY2(spec->check(other_value(d)).ok(), d.name.c_str());
      if (d.type == plugin::ParamType::Float || d.type == plugin::ParamType::Int) {
        QCOMPARE(spec->min.value_or(-1), d.min);
        QCOMPARE(spec->max.value_or(-1), d.max);
        QCOMPARE(spec->max_exclusive, d.max_exclusive);
      }
      if (!d.choices.empty()) QCOMPARE(spec->choices, d.choices);
    }
  }
  QVERIFY(params >= 5);  // vsa: sparsity, tile; sla_star: sparsity, tile, feature_map
  const engine::ParamSpec* sparsity = sampler().find_param("sparsity");
  QVERIFY(sparsity && sparsity->max_exclusive);
  QVERIFY(!sparsity->check(1.0).ok());
  QVERIFY(sparsity->check(0.999).ok());
}

// Each param set to a non-default value through the node changes the sampled latent: it reached the
// plugin.
void tst_nodes_schema::everyPluginParamReachesThePlugin() {
  const engine::ValueMap inputs = tiny_model_inputs();
  auto sample = [&](const json& params) {
    Recorder rec;
    auto ctx = make_context(sampler(), params, inputs, {}, &rec);
    auto out = sampler().compute(ctx);
    if (!out.ok()) qFatal("sampler failed: %s", out.error().message.c_str());
    return engine::value_as<Latent>(out->at("latent"))->samples;
  };
  for (const auto& m : methods_) {
    const at::Tensor base = sample(tiny_params(m.name));
    for (const auto& d : m.params) {
      json p = tiny_params(m.name);
      p[d.name] = other_value(d);
      const at::Tensor changed = sample(p);
      QVERIFY2(!at::equal(base, changed), (m.name + "." + d.name + " did not change the result").c_str());
    }
  }
}

// Train Wan reads the same schema: every plugin param but sparsity (its schedule sets that), and the
// schedule's start and target keep the plugin's sparsity rules.
void tst_nodes_schema::trainWanTakesThePluginParams() {
  const engine::NodeType& train = nodes_test::find_type(registry_, "TrainWan");
  QVERIFY(train.find_param("sparsity") == nullptr);
  int params = 0;
  for (const auto& m : methods_) {
    for (const auto& d : m.params) {
      if (d.name == "sparsity") continue;
      ++params;
      const engine::ParamSpec* spec = train.find_param(d.name);
      QVERIFY2(spec, d.name.c_str());
      QVERIFY2(spec->check(other_value(d)).ok(), d.name.c_str());
      if (!d.choices.empty()) QCOMPARE(spec->choices, d.choices);
    }
  }
  QVERIFY(params >= 3);  // vsa: tile; sla_star: tile, feature_map
  QVERIFY2(!train.find_param("tile")->check("4,4").ok(), "tile takes 3 values");
  const engine::ParamSpec* sparsity = sampler().find_param("sparsity");
  for (const char* name : {"sparsity_start", "sparsity_target"}) {
    const engine::ParamSpec* spec = train.find_param(name);
    QVERIFY2(spec, name);
    QCOMPARE(spec->max_exclusive, sparsity->max_exclusive);
    QCOMPARE(spec->max.value_or(-1), sparsity->max.value_or(-2));
    QVERIFY2(!spec->check(1.0).ok(), name);  // the plugin refuses 1: so does validation
    QVERIFY2(spec->check(0.9).ok(), name);
  }
  QCOMPARE(train.find_param("sparsity_target")->default_value, sparsity->default_value);
}

void tst_nodes_schema::refusedValuesFailValidation_data() {
  QTest::addColumn<QByteArray>("params");
  QTest::addColumn<QString>("param");
  QTest::addColumn<QString>("why");
  QTest::newRow("sparsity 1") << QByteArray(R"({"attention": "vsa", "sparsity": 1.0})") << "sparsity" << "[0, 1)";
  QTest::newRow("sparsity -0.1") << QByteArray(R"({"sparsity": -0.1})") << "sparsity" << "[0, 1)";
  QTest::newRow("tile of 2") << QByteArray(R"({"tile": "4,4"})") << "tile" << "3 values";
  QTest::newRow("tile of 0") << QByteArray(R"({"tile": "0,4,4"})") << "tile" << "[1, 64]";
  QTest::newRow("tile not numbers") << QByteArray(R"({"tile": "a,b,c"})") << "tile" << "cannot read";
  QTest::newRow("feature map") << QByteArray(R"({"feature_map": "tanh"})") << "feature_map" << "softmax";
}

// The engine's validation (the one check for workflow users) refuses what the plugin would.
void tst_nodes_schema::refusedValuesFailValidation() {
  QFETCH(QByteArray, params);
  QFETCH(QString, param);
  QFETCH(QString, why);
  engine::LoadOptions load;
  load.registry = &registry_;
  auto loaded = engine::load_workflow_string(sampler_flow_with(json::parse(params.toStdString())), load);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().to_string().c_str());
  const engine::ValidationReport report = engine::validate_document(loaded->document, registry_);
  QVERIFY2(any_contains(report.errors, "'" + param.toStdString() + "'", why.toStdString()),
           report.errors.empty() ? "no error" : report.errors.front().message.c_str());
  QCOMPARE(report.errors.front().node_id, std::string("sampler"));
}

void tst_nodes_schema::runnerRefusesBeforeLoading_data() {
  QTest::addColumn<QString>("command");
  QTest::addColumn<QString>("flow");
  QTest::addColumn<QString>("set");
  QTest::addColumn<QString>("fragment");
  const QString sampler = QString::fromUtf8(kSamplerFlow);
  // The shipped demo as it is (method full): sparsity is checked whatever the method.
  QTest::newRow("demo run sparsity=1") << "run" << QString::fromUtf8(kDemoFlow) << "sampler.sparsity=1"
                                       << "sparsity' is 1, outside [0, 1)";
  QTest::newRow("validate sparsity=1") << "validate" << sampler << "sampler.sparsity=1" << "outside [0, 1)";
  QTest::newRow("run sparsity=1") << "run" << sampler << "sampler.sparsity=1" << "outside [0, 1)";
  QTest::newRow("run tile=4,4") << "run" << sampler << "sampler.tile=4,4" << "3 values";
  QTest::newRow("validate feature_map") << "validate" << sampler << "sampler.feature_map=tanh" << "tanh";
  // A learning rate of 0 used to pass validation and fail after the dataset was encoded.
  QTest::newRow("run train.lr=0") << "run" << QString::fromUtf8(kFinetuneFlow) << "train.lr=0" << "outside [1e-09, 1]";
  QTest::newRow("validate distill.critic_lr=0")
      << "validate" << QString::fromUtf8(kDistillFlow) << "distill.critic_lr=0" << "outside [1e-09, 1]";
}

// vidgraph-run: exit 2 with the param named, and for run no node started (the model never loads).
void tst_nodes_schema::runnerRefusesBeforeLoading() {
  QFETCH(QString, command);
  QFETCH(QString, flow);
  QFETCH(QString, set);
  QFETCH(QString, fragment);
  QTemporaryDir out;
  QStringList args{command, flow, "--set", set};
  if (flow == QString::fromUtf8(kSamplerFlow)) args << "--set" << "sampler.attention=vsa";
  if (command == "run") {
    args << "--json-events" << "--output-dir" << out.path();
  }
  const test_common::ProcessOutcome p = run_vidgraph(args);
  QVERIFY2(p.exit_code == 2, qPrintable(QStringLiteral("exit %1\n%2\n%3").arg(p.exit_code).arg(p.out, p.err)));
  const QString param = set.section('.', 1).section('=', 0, 0);
  QVERIFY2((p.out + p.err).contains("'" + param + "'"), qPrintable(p.out + p.err));
  QVERIFY2((p.out + p.err).contains(fragment), qPrintable(p.out + p.err));
  QVERIFY2(!p.out.contains("node_started"), qPrintable(p.out));
}

// An edit (the GUI's, an override's set_param) stores a badly formed tile as it is; validation then
// names it, so the editor can show the value as invalid instead of losing it.
void tst_nodes_schema::editsKeepARefusedValueForValidation() {
  engine::LoadOptions load;
  load.registry = &registry_;
  auto loaded = engine::load_workflow_string(sampler_flow_with({{"attention", "vsa"}}), load);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().to_string().c_str());
  auto set = loaded->document.set_param("sampler", "tile", json("4,4"));
  QVERIFY2(set.ok(), set.ok() ? "" : set.error().message.c_str());
  QCOMPARE(loaded->document.find_node("sampler")->params["tile"], json("4,4"));
  const engine::ValidationReport report = engine::validate_document(loaded->document, registry_);
  QVERIFY(any_contains(report.errors, "'tile'", "3 values"));
  QVERIFY(!loaded->document.set_param("sampler", "tile", json(4)).ok());  // the JSON type still is enforced
}

// Saved with a plugin that had a `window` param: the value is kept, reported, and written back.
void tst_nodes_schema::workflowOfAPluginWithAParamMore() {
  engine::LoadOptions load;
  load.registry = &registry_;
  auto loaded = engine::load_workflow_string(sampler_flow_with({{"attention", "vsa"}, {"window", 7}}), load);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().to_string().c_str());
  const engine::ValidationReport report = engine::validate_document(loaded->document, registry_);
  QVERIFY2(report.errors.empty(), report.errors.empty() ? "" : report.errors.front().message.c_str());
  QVERIFY(any_contains(report.warnings, "'window'", "kept"));
  const json saved = json::parse(engine::save_workflow_string(loaded->document));
  bool kept = false;
  for (const json& n : saved["nodes"])
    if (n["id"] == "sampler") kept = n["params"].value("window", 0) == 7;
  QVERIFY(kept);
}

// Opened with a plugin whose vsa lost `tile` (and gained `window`): the tile value is kept and
// reported, the new param takes its default, the rest still validates.
void tst_nodes_schema::workflowOfAPluginWithAParamLess() {
  std::vector<plugin::MethodInfo> methods = methods_;
  for (auto& m : methods) {
    m.params.erase(std::remove_if(m.params.begin(), m.params.end(),
                                  [](const plugin::ParamDescriptor& d) { return d.name == "tile"; }),
                   m.params.end());
    if (m.name == "vsa") {
      plugin::ParamDescriptor window;
      window.name = "window";
      window.type = plugin::ParamType::Int;
      window.default_value = int64_t(3);
      window.min = 1;
      window.max = 9;
      m.params.push_back(window);
    }
  }
  engine::Registry other;
  QVERIFY(other.add(wan_sampler_node(methods)).ok());
  QVERIFY(other.add(load_wan_model_node()).ok());
  QVERIFY(other.add(encode_text_node()).ok());
  QVERIFY(other.add(prompt_node()).ok());
  QVERIFY(other.add(save_latent_node()).ok());
  engine::LoadOptions load;
  load.registry = &other;
  auto loaded = engine::load_workflow_string(
      sampler_flow_with({{"attention", "vsa"}, {"tile", "2,2,2"}, {"sparsity", 0.5}}), load);
  QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().to_string().c_str());
  const engine::ValidationReport report = engine::validate_document(loaded->document, other);
  QVERIFY2(report.errors.empty(), report.errors.empty() ? "" : report.errors.front().message.c_str());
  QVERIFY(any_contains(report.warnings, "'tile'", "kept"));
  const engine::ParamSpec* window = other.find("WanSampler")->find_param("window");
  QVERIFY(window && window->default_value == json(3));
  const json saved = json::parse(engine::save_workflow_string(loaded->document));
  for (const json& n : saved["nodes"]) {
    if (n["id"] != "sampler") continue;
    QCOMPARE(n["params"]["tile"], json("2,2,2"));
    QCOMPARE(n["params"]["sparsity"], json(0.5));
  }
}

// Two methods declaring one name with different rules: the later one's param gets its prefix, and
// a name the sampler already uses is never taken over.
void tst_nodes_schema::conflictingParamsGetTheMethodPrefix() {
  plugin::ParamDescriptor loose;
  loose.name = "sparsity";
  loose.type = plugin::ParamType::Float;
  loose.default_value = 0.5;
  loose.min = 0;
  loose.max = 1;
  plugin::ParamDescriptor steps = loose;
  steps.name = "steps";
  std::vector<plugin::MethodInfo> methods = methods_;
  methods.push_back(plugin::MethodInfo{"wide", "test method", {loose, steps}});
  const engine::NodeType t = wan_sampler_node(methods);
  QVERIFY(t.find_param("sparsity") && t.find_param("sparsity")->max_exclusive);
  QVERIFY(t.find_param("wide_sparsity") && !t.find_param("wide_sparsity")->max_exclusive);
  QVERIFY(t.find_param("wide_steps"));
  QCOMPARE(t.find_param("steps")->default_value, json(50));
}

void tst_nodes_schema::preparationRefusesBeforeSampling_data() {
  QTest::addColumn<int>("head_dim");
  QTest::addColumn<QByteArray>("params");
  QTest::addColumn<QString>("expected");
  // A compute call that skipped validation (as a direct API user's would): the plugin still refuses.
  QTest::newRow("tile of 0") << 32 << QByteArray(R"({"attention": "vsa", "tile": "0,4,4"})") << "values must be in [1, 64]";
  // A model whose head dim the CPU path does not take (1..256).
  QTest::newRow("head dim 260") << 260 << QByteArray(R"({"attention": "full"})") << "head dim 260 is not supported";
}

// Prepared at the sampler's set-up: a node error naming the cause before the first step.
void tst_nodes_schema::preparationRefusesBeforeSampling() {
  QFETCH(int, head_dim);
  QFETCH(QByteArray, params);
  QFETCH(QString, expected);
  wan::WanConfig config = wan::wan_tiny_config();
  config.dim = head_dim * config.num_heads;
  engine::ValueMap inputs = tiny_model_inputs();
  DitHandle dit;
  dit.model = wan::wan_make_model(config, 7).ptr();
  inputs["model"] = engine::make_value(kModelType, dit);
  json p = tiny_params("full");
  p.update(json::parse(params.toStdString()));
  Recorder rec;
  auto ctx = make_context(sampler(), p, inputs, {}, &rec);
  auto out = sampler().compute(ctx);
  QVERIFY(!out.ok());
  QVERIFY2(out.error().message.find(expected.toStdString()) != std::string::npos, out.error().message.c_str());
  QVERIFY(rec.progress.empty());
}

QTEST_GUILESS_MAIN(tst_nodes_schema)
#include "tst_nodes_schema.moc"
