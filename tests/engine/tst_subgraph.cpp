// Subgraphs in the engine (engine/subgraph.h, subgraph_edits.h) with the test node types: a
// workflow file's definitions run headless through their instances (nested too), inner nodes are
// cached like any node, `--set` reaches exposed params (NODE.PARAM) and inner ones
// (NODE/INNER.PARAM), bad definitions and instances are refused with sentences naming them, and
// making, unpacking and exposing are single undo steps that leave the result unchanged.
#include <QtTest/QtTest>

#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/operations.h"
#include "engine/overrides.h"
#include "engine/subgraph.h"
#include "engine/subgraph_edits.h"
#include "engine/workflow_file.h"
#include "engine_test_nodes.h"

using namespace vidgraph::engine;
using nlohmann::json;
namespace test = vidgraph::test;

namespace {

// "double_plus": y = x * factor + offset (Scale s, then Add a). Exposes input x, output y, param factor.
json double_plus() {
  return json::parse(R"({
    "name": "Double plus one",
    "nodes": [
      {"id": "s", "type": "Scale", "params": {"factor": 2.0}},
      {"id": "a", "type": "Add", "params": {"offset": 1.0}, "inputs": {"a": {"node": "s", "output": "out"}}}],
    "inputs": {"x": [{"node": "s", "input": "x"}]},
    "outputs": {"y": {"node": "a", "output": "sum"}},
    "params": {"factor": {"node": "s", "param": "factor"}}})");
}

// "times_ten": an instance of double_plus, then Scale t (x10); exposes its inner instance's factor.
json times_ten() {
  return json::parse(R"({
    "name": "Times ten",
    "nodes": [
      {"id": "inner", "type": "Subgraph", "params": {"subgraph": "double_plus"}},
      {"id": "t", "type": "Scale", "params": {"factor": 10.0}, "inputs": {"x": {"node": "inner", "output": "y"}}}],
    "inputs": {"x": [{"node": "inner", "input": "x"}]},
    "outputs": {"y": {"node": "t", "output": "out"}},
    "params": {"factor": {"node": "inner", "param": "factor"}}})");
}

// n (2) → sub (double_plus) → sink.
json flow(json instance_params = json::object(), std::string definition = "double_plus") {
  instance_params["subgraph"] = definition;
  return {{"format", kWorkflowFormatId},
          {"version", kWorkflowFormatVersion},
          {"subgraphs", {{"double_plus", double_plus()}, {"times_ten", times_ten()}}},
          {"nodes",
           {{{"id", "n"}, {"type", "Number"}, {"params", {{"value", 2.0}}}},
            {{"id", "sub"}, {"type", "Subgraph"}, {"params", instance_params},
             {"inputs", {{"x", {{"node", "n"}, {"output", "value"}}}}}},
            {{"id", "sink"}, {"type", "Sink"}, {"inputs", {{"value", {{"node", "sub"}, {"output", "y"}}}}}}}}};
}

GraphDocument load(const json& j, const Registry& registry) {
  LoadOptions options;
  options.registry = &registry;
  auto loaded = load_workflow_string(j.dump(), options);
  if (!loaded.ok()) qFatal("%s", loaded.error().message.c_str());
  return std::move(loaded.value().document);
}

std::string first_error(const RunResult& r) { return r.errors.empty() ? std::string() : r.errors.front().message; }

}  // namespace

class tst_subgraph : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { test::register_engine_test_nodes(reg_); }
  void instanceRunsAndInnerNodesCache();
  void overridesReachExposedAndInnerParams();
  void nestedSubgraphsRun();
  void badSubgraphsAreRefused_data();
  void badSubgraphsAreRefused();
  void definitionsSurviveSaveAndLoad();
  void makeUnpackAndExposeAreUndoable();

 private:
  double run_sink(const GraphDocument& doc, std::vector<std::string> overrides = {}) {
    Engine engine(reg_);
    RunRequest request;
    request.overrides = std::move(overrides);
    const RunResult r = engine.run(doc, request);
    if (r.status != RunStatus::Succeeded) qWarning("run failed: %s", first_error(r).c_str());
    return r.status == RunStatus::Succeeded ? test::last_sink_value() : -1.0;
  }
  Registry reg_;
};

void tst_subgraph::instanceRunsAndInnerNodesCache() {
  const GraphDocument doc = load(flow(), reg_);
  QCOMPARE(doc.find_node("sub")->type, std::string(kSubgraphType));  // the file's graph stays as written
  Engine engine(reg_);
  test::reset_compute_counts();
  RunResult first = engine.run(doc, {});
  QCOMPARE(first.status, RunStatus::Succeeded);
  QCOMPARE(test::last_sink_value(), 5.0);  // 2 * 2 + 1
  std::vector<std::string> ran;
  for (const NodeRunStat& s : first.nodes) ran.push_back(s.node_id);
  QCOMPARE(ran, (std::vector<std::string>{"n", "sub/s", "sub/a", "sink"}));
  QCOMPARE(test::compute_count("sub/s"), 1);
  // Unchanged: every inner node comes from the cache.
  RunResult again = engine.run(doc, {});
  QCOMPARE(again.status, RunStatus::Succeeded);
  for (const NodeRunStat& s : again.nodes) {
    if (s.node_id != "sink") QCOMPARE(int(s.outcome), int(NodeOutcome::Cached));
  }
  QCOMPARE(test::compute_count("sub/s"), 1);
  // The exposed param changes the inner Scale: it and what follows run again, the source does not.
  RunRequest factor;
  factor.overrides = {"sub.factor=3"};
  QCOMPARE(engine.run(doc, factor).status, RunStatus::Succeeded);
  QCOMPARE(test::last_sink_value(), 7.0);
  QCOMPARE(test::compute_count("sub/s"), 2);
  QCOMPARE(test::compute_count("n"), 1);
  // A target that names the instance runs its inner nodes.
  RunRequest target;
  target.targets = {"sub"};
  const RunResult only = engine.run(doc, target);
  QCOMPARE(only.status, RunStatus::Succeeded);
  QCOMPARE(only.nodes.size(), size_t{3});
}

void tst_subgraph::overridesReachExposedAndInnerParams() {
  const GraphDocument doc = load(flow({{"factor", 5.0}}), reg_);
  QCOMPARE(run_sink(doc), 11.0);                                        // the instance's value
  QCOMPARE(run_sink(doc, {"sub.factor=4", "sub/a.offset=10"}), 18.0);  // exposed, then inner by path
  Engine engine(reg_);
  auto refused = [&](const std::string& set, const char* sentence) {
    RunRequest r;
    r.overrides = {set};
    const RunResult result = engine.run(doc, r);
    QCOMPARE(result.status, RunStatus::Invalid);
    QVERIFY2(first_error(result).find(sentence) != std::string::npos, first_error(result).c_str());
  };
  refused("sub.offset=1", "subgraph 'double_plus' exposes no param 'offset' (it exposes: factor); set an inner "
                          "node's param as sub/NODE.PARAM");
  refused("sub/zz.offset=1", "there is no node 'sub/zz'");
  refused("sub.factor=500", "factor");  // checked against the inner param's range
}

void tst_subgraph::nestedSubgraphsRun() {
  const GraphDocument doc = load(flow({{"factor", 3.0}}, "times_ten"), reg_);
  QCOMPARE(run_sink(doc), 70.0);  // (2 * 3 + 1) * 10
  QCOMPARE(run_sink(doc, {"sub/inner/a.offset=0"}), 60.0);
  QCOMPARE(run_sink(doc, {"sub.factor=1"}), 30.0);  // through both exposures
}

void tst_subgraph::badSubgraphsAreRefused_data() {
  QTest::addColumn<int>("which");
  QTest::addColumn<QString>("sentence");
  QTest::newRow("no definition") << 0 << "The workflow has no subgraph 'nope' (it has: double_plus, times_ten)";
  QTest::newRow("unexposed param") << 1 << "Subgraph instance 'sub' sets param 'offset', which subgraph "
                                           "'double_plus' does not expose (it exposes: factor)";
  QTest::newRow("unexposed input") << 2 << "has input 'z' connected, which subgraph 'double_plus' does not expose";
  QTest::newRow("unexposed output") << 3 << "is linked to output 'w' of subgraph instance 'sub', which its "
                                            "subgraph does not expose";
  QTest::newRow("bypassed") << 4 << "is bypassed, which subgraphs do not support";
  QTest::newRow("contains itself") << 5 << "does a subgraph contain an instance of itself?";
  QTest::newRow("exposes a missing node") << 6 << "has param 'factor' naming node 'gone', which it does not have";
  QTest::newRow("inner cycle") << 7 << "is not a valid graph";
}

void tst_subgraph::badSubgraphsAreRefused() {
  QFETCH(int, which);
  QFETCH(QString, sentence);
  json j = flow();
  json& sub = j["nodes"][1];
  switch (which) {
    case 0: sub["params"]["subgraph"] = "nope"; break;
    case 1: sub["params"]["offset"] = 1.0; break;
    case 2: sub["inputs"]["z"] = {{"node", "n"}, {"output", "value"}}; break;
    case 3: j["nodes"][2]["inputs"]["value"]["output"] = "w"; break;
    case 4: sub["bypass"] = true; break;
    case 5:
      j["subgraphs"]["double_plus"]["nodes"].push_back({{"id", "again"}, {"type", "Subgraph"},
                                                        {"params", {{"subgraph", "double_plus"}}}});
      break;
    case 6: j["subgraphs"]["double_plus"]["params"]["factor"]["node"] = "gone"; break;
    case 7:
      j["subgraphs"]["double_plus"]["nodes"][0]["inputs"] = {{"x", {{"node", "a"}, {"output", "sum"}}}};
      j["subgraphs"]["double_plus"]["inputs"]["x"][0]["node"] = "a";
      j["subgraphs"]["double_plus"]["inputs"]["x"][0]["input"] = "b";
      break;
  }
  const GraphDocument doc = load(j, reg_);
  Engine engine(reg_);
  const RunResult r = engine.run(doc, {});
  QCOMPARE(r.status, RunStatus::Invalid);
  QVERIFY2(QString::fromStdString(first_error(r)).contains(sentence), first_error(r).c_str());
}

void tst_subgraph::definitionsSurviveSaveAndLoad() {
  const GraphDocument doc = load(flow({{"factor", 3.0}}, "times_ten"), reg_);
  const std::string saved = save_workflow_string(doc);
  const GraphDocument again = load(json::parse(saved), reg_);
  QCOMPARE(save_workflow_string(again), saved);
  auto d = find_subgraph(again, "times_ten");
  QVERIFY2(d.ok(), d.ok() ? "" : d.error().message.c_str());
  QCOMPARE(d->name, std::string("Times ten"));
  QCOMPARE(subgraph_to_json(*d)["params"], times_ten()["params"]);
  QCOMPARE(run_sink(again), 70.0);
}

void tst_subgraph::makeUnpackAndExposeAreUndoable() {
  // n (2) → s (Scale x2) → a (Add +1) → sink, flat.
  GraphDocument doc = load(json::parse(R"({"format": "vidgraph-workflow", "version": 1, "nodes": [
      {"id": "n", "type": "Number", "params": {"value": 2.0}},
      {"id": "s", "type": "Scale", "params": {"factor": 2.0}, "inputs": {"x": {"node": "n", "output": "value"}}},
      {"id": "a", "type": "Add", "params": {"offset": 1.0}, "inputs": {"a": {"node": "s", "output": "out"}}},
      {"id": "sink", "type": "Sink", "inputs": {"value": {"node": "a", "output": "sum"}}}],
      "editor": {"nodes": {"s": {"pos": [100, 0]}, "a": {"pos": [300, 0]}}}})"),
                           reg_);
  const std::string flat = save_workflow_string(doc);
  QCOMPARE(run_sink(doc), 5.0);

  std::string instance;
  auto make = make_subgraph_from(doc, {"s", "a"}, "Double plus", &instance);
  QVERIFY2(make.ok(), make.ok() ? "" : make.error().message.c_str());
  auto undo_make = make.value()->apply(doc);
  QVERIFY(undo_make.ok());
  QVERIFY(!doc.find_node("s") && !doc.find_node("a"));
  const Node* made = doc.find_node(instance);
  QVERIFY(made && made->type == kSubgraphType);
  QCOMPARE(made->inputs.at("x"), (InputLink{"n", "value"}));
  QCOMPARE(doc.find_node("sink")->inputs.at("value"), (InputLink{instance, "sum"}));
  QCOMPARE(doc.node_editor(instance)["pos"], json::array({200.0, 0.0}));
  QCOMPARE(run_sink(doc), 5.0);  // the same graph, one level down

  // Expose Scale's factor, set it on the instance; unexpose takes the instance's value away too.
  const std::string definition = made->params[kSubgraphParam].get<std::string>();
  auto expose = make_expose_param(doc, definition, "factor", {"s", "factor"});
  QVERIFY2(expose.ok(), expose.ok() ? "" : expose.error().message.c_str());
  QVERIFY(expose.value()->apply(doc).ok());
  QVERIFY(!make_expose_param(doc, definition, "factor", {"s", "factor"}).ok());  // taken
  QVERIFY(!make_expose_param(doc, definition, "gain", {"s", "gain"}).ok());      // Scale has no gain
  QVERIFY(doc.set_param(instance, "factor", 4.0).ok());
  QCOMPARE(run_sink(doc), 9.0);
  auto unexpose = make_unexpose_param(doc, definition, "factor");
  QVERIFY(unexpose.ok());
  auto undo_unexpose = unexpose.value()->apply(doc);
  QVERIFY(undo_unexpose.ok());
  QVERIFY(!doc.find_node(instance)->params.contains("factor"));
  QCOMPARE(run_sink(doc), 5.0);
  QVERIFY(undo_unexpose.value()->apply(doc).ok());
  QCOMPARE(run_sink(doc), 9.0);

  // An input connected to a port the subgraph does not expose is refused, not dropped by the unpack.
  QVERIFY(doc.connect(instance, "zz", {"n", "value"}).ok());
  auto refused = make_unpack_subgraph(doc, instance);
  QVERIFY(!refused.ok());
  QVERIFY2(refused.error().message.find("has input 'zz' connected") != std::string::npos,
           refused.error().message.c_str());
  QVERIFY(doc.disconnect(instance, "zz").ok());

  // Unpack: the inner nodes back in the parent with the instance's value; the unused definition goes.
  const std::string packed = save_workflow_string(doc);
  auto unpack = make_unpack_subgraph(doc, instance);
  QVERIFY2(unpack.ok(), unpack.ok() ? "" : unpack.error().message.c_str());
  auto undo_unpack = unpack.value()->apply(doc);
  QVERIFY(undo_unpack.ok());
  QVERIFY(!has_subgraph_instances(doc));
  QVERIFY(!doc.extra().contains(kSubgraphsKey));
  QCOMPARE(doc.find_node("s")->params["factor"].get<double>(), 4.0);
  QCOMPARE(run_sink(doc), 9.0);
  QVERIFY(undo_unpack.value()->apply(doc).ok());
  QCOMPARE(save_workflow_string(doc), packed);
  QVERIFY(!make_unpack_subgraph(doc, "n").ok());  // not an instance

  // Undo of the make, after the unexpose round trip: the flat file again, byte for byte.
  QVERIFY(doc.set_param(instance, "factor", nullptr).ok());
  auto unexpose_again = make_unexpose_param(doc, definition, "factor");
  QVERIFY(unexpose_again.ok() && unexpose_again.value()->apply(doc).ok());
  QVERIFY(undo_make.value()->apply(doc).ok());
  QCOMPARE(save_workflow_string(doc), flat);
}

QTEST_GUILESS_MAIN(tst_subgraph)
#include "tst_subgraph.moc"
