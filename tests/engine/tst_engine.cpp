// Engine suite: registry, document invariants + undoable operations, validation, overrides, executor
// (cache hits/misses, eviction, cancellation, failures, targets, upgrades) and event order.
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include <spdlog/logger.h>

#include "engine/document.h"
#include "engine/bypass.h"
#include "engine/engine.h"
#include "engine/event_bus_sink.h"
#include "engine/operations.h"
#include "engine/overrides.h"
#include "engine/run_history.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "engine_test_nodes.h"

using namespace vidgraph::engine;
using nlohmann::json;

namespace {

Node make_node(const std::string& id, const std::string& type, json params = json::object(),
               std::map<std::string, InputLink> inputs = {}) {
  Node n;
  n.id = id;
  n.type = type;
  n.params = std::move(params);
  n.inputs = std::move(inputs);
  return n;
}

// number a(1) → scale s(x2) → add t(a=s, b=b) ; number b(10) → t. Sinks: t.
GraphDocument chain_doc(const Registry* reg) {
  auto doc = GraphDocument::build({make_node("a", "Number", {{"value", 1.0}}),
                                   make_node("b", "Number", {{"value", 10.0}}),
                                   make_node("s", "Scale", {{"factor", 2.0}}, {{"x", {"a", "value"}}}),
                                   make_node("t", "Add", json::object(), {{"a", {"s", "out"}}, {"b", {"b", "value"}}})},
                                  json::object(), json::object(), reg);
  if (!doc.ok()) qFatal("chain_doc: %s", doc.error().message.c_str());
  return std::move(doc.value());
}

double number_out(const RunResult& r, const std::string& node, const std::string& port) {
  auto it = r.outputs.find(node);
  if (it == r.outputs.end() || !it->second.count(port)) return -12345.0;
  const double* v = value_as<double>(it->second.at(port));
  return v ? *v : -12345.0;
}

struct Recorder {
  explicit Recorder(EventBus& bus) : bus_(bus) {
    id_ = bus.subscribe([this](const Event& e) {
      std::lock_guard<std::mutex> lock(mutex);
      events.push_back(e);
    });
  }
  ~Recorder() { bus_.unsubscribe(id_); }
  std::vector<std::string> lines(bool with_progress = false) {
    std::lock_guard<std::mutex> lock(mutex);
    std::vector<std::string> out;
    for (const auto& e : events) {
      if (!with_progress && (e.kind == EventKind::NodeProgress || e.kind == EventKind::Log)) continue;
      out.push_back(std::string(to_string(e.kind)) + (e.node_id.empty() ? "" : ":" + e.node_id));
    }
    return out;
  }
  EventBus& bus_;
  EventBus::SubscriptionId id_;
  std::mutex mutex;
  std::vector<Event> events;
};

QStringList to_qt(const std::vector<std::string>& v) {
  QStringList out;
  for (const auto& s : v) out << QString::fromStdString(s);
  return out;
}

}  // namespace

class tst_Engine : public QObject {
  Q_OBJECT

 private:
  Registry reg_;

 private Q_SLOTS:
  void initTestCase() { vidgraph::test::register_engine_test_nodes(reg_); }
  void init() { vidgraph::test::reset_compute_counts(); }

  // ---- registry
  void registryFindAndList() {
    QVERIFY(reg_.find("Number") != nullptr);
    QCOMPARE(reg_.find("nUmBeR"), reg_.find("Number"));
    QCOMPARE(QString::fromStdString(reg_.find("scale")->name), QStringLiteral("Scale"));
    QVERIFY(reg_.find("Nope") == nullptr);
    QCOMPARE(reg_.list_category("TEST").size(), reg_.size());
    QCOMPARE(reg_.categories(), std::vector<std::string>{"test"});
    const json d = reg_.describe();
    QCOMPARE(d["node_types"].size(), reg_.size());
    const json* kinds = nullptr;
    for (const auto& t : d["node_types"]) {
      if (t["name"] == "Kinds") kinds = &t;
    }
    QVERIFY(kinds);
    QCOMPARE((*kinds)["params"].size(), std::size_t(9));
    QCOMPARE((*kinds)["params"][5]["choices"], json({"fast", "slow"}));
    QCOMPARE((*kinds)["params"][0]["max"].get<double>(), 10.0);
  }
  // An Int param with a step accepts only min + k·step (frames: 1, 5, 9, ...); describe() says so.
  void intStepsAreChecked() {
    const ParamSpec frames = ParamSpec::integer("frames", 121, 1, 1025).with_step(4);
    QVERIFY(frames.check(121).ok());
    QVERIFY(frames.check(1).ok());
    QVERIFY(frames.check(25).ok());
    const auto bad = frames.check(24);
    QVERIFY(!bad.ok());
    QVERIFY2(QString::fromStdString(bad.error().message).contains("multiple of 4 (e.g. 21 or 25)"),
             bad.error().message.c_str());
    QVERIFY(!frames.check(1029).ok());  // the range still applies
    QVERIFY(ParamSpec::integer("n", 3, 1, 10).check(4).ok());  // no step: any integer
    NodeType t;
    t.name = "Stepped";
    t.category = "test";
    t.params = {frames};
    t.compute = [](NodeContext&) -> Result<ValueMap> { return ValueMap{}; };
    Registry local;
    QVERIFY(local.add(t).ok());
    QCOMPARE(local.describe()["node_types"][0]["params"][0]["step"].get<int>(), 4);
  }
  // --set and set_param with a stepped param: 5 is set and validates; 24 is refused by --set with
  // the base in the message, and set_param (type only) keeps it for validation to report.
  void steppedParamThroughOverridesAndDocument() {
    NodeType t;
    t.name = "Frames";
    t.category = "test";
    t.params = {ParamSpec::integer("frames", 121, 1, 1025).with_step(4)};
    t.compute = [](NodeContext&) -> Result<ValueMap> { return ValueMap{}; };
    Registry local;
    QVERIFY(local.add(t).ok());
    GraphDocument doc(&local);
    QVERIFY(doc.add_node(make_node("f", "Frames")).ok());
    QVERIFY(apply_overrides(doc, local, {"f.frames=5"}).ok());
    QCOMPARE(doc.find_node("f")->params["frames"], json(5));
    QVERIFY(validate_document(doc, local).ok());
    const Status bad = apply_overrides(doc, local, {"f.frames=24"});
    QVERIFY(!bad.ok());
    QVERIFY2(QString::fromStdString(bad.error().message).contains("1 plus a multiple of 4 (e.g. 21 or 25)"),
             bad.error().message.c_str());
    QVERIFY(doc.set_param("f", "frames", 24).ok());
    QVERIFY(!validate_document(doc, local).ok());
  }
  void registryRefuses_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("duplicate, other case") << 0 << "already registered";
    QTest::newRow("no compute") << 1 << "no compute";
    QTest::newRow("empty name") << 2 << "needs a name";
    QTest::newRow("duplicate port") << 3 << "twice";
    QTest::newRow("bad default") << 4 << "default of param 'n'";
    QTest::newRow("enum default not a choice") << 5 << "not one of";
  }
  void registryRefuses() {
    QFETCH(int, which);
    QFETCH(QString, fragment);
    NodeType t;
    t.name = "Fresh";
    t.compute = [](NodeContext&) -> Result<ValueMap> { return ValueMap{}; };
    switch (which) {
      case 0: t.name = "NUMBER"; break;
      case 1: t.compute = nullptr; break;
      case 2: t.name.clear(); break;
      case 3: t.inputs = {{"x", "A", false, ""}, {"x", "B", false, ""}}; break;
      case 4: t.params = {ParamSpec::integer("n", 50, 0, 10)}; break;
      case 5: t.params = {ParamSpec::enumeration("m", {"a", "b"}, "c")}; break;
    }
    Registry local;
    vidgraph::test::register_engine_test_nodes(local);
    const std::size_t before = local.size();
    auto s = local.add(t);
    QVERIFY(!s.ok());
    QVERIFY2(QString::fromStdString(s.error().message).contains(fragment), s.error().message.c_str());
    QCOMPARE(local.size(), before);
  }

  // ---- document invariants
  void documentRefusesBadEdits_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("duplicate id") << 0 << "already exists";
    QTest::newRow("invalid id") << 1 << "not a valid node id";
    QTest::newRow("dangling link on add") << 2 << "does not exist";
    QTest::newRow("second link to an input") << 3 << "already connected";
    QTest::newRow("cycle") << 4 << "cycle";
    QTest::newRow("self link") << 5 << "itself";
    QTest::newRow("type mismatch") << 6 << "takes NUMBER";
    QTest::newRow("unknown input port") << 7 << "has no input";
    QTest::newRow("remove a used node") << 8 << "still uses";
    QTest::newRow("rename onto another id") << 9 << "already exists";
    QTest::newRow("param of the wrong JSON type") << 10 << "must be a number";
    QTest::newRow("link from a missing node") << 11 << "no node 'ghost'";
  }
  void documentRefusesBadEdits() {
    QFETCH(int, which);
    QFETCH(QString, fragment);
    GraphDocument doc = chain_doc(&reg_);
    const std::string before = save_workflow_string(doc);
    int notifications = 0;
    doc.subscribe([&](const DocumentChange&) { ++notifications; });
    Status s;
    switch (which) {
      case 0: s = doc.add_node(make_node("a", "Number")); break;
      case 1: s = doc.add_node(make_node("bad.id", "Number")); break;
      case 2: s = doc.add_node(make_node("n", "Scale", json::object(), {{"x", {"ghost", "value"}}})); break;
      case 3: s = doc.connect("t", "a", {"a", "value"}); break;
      case 4: s = doc.connect("s", "x2", {"t", "sum"}); break;
      case 5: s = doc.connect("s", "x", {"s", "out"}); break;
      case 6:
        (void)doc.add_node(make_node("blob", "Blob"));
        (void)doc.disconnect("s", "x");
        s = doc.connect("s", "x", {"blob", "out"});
        break;
      case 7: s = doc.disconnect("s", "x").ok() ? doc.connect("s", "nope", {"a", "value"}) : make_error("?"); break;
      case 8: s = doc.remove_node("a").ok() ? Status() : doc.remove_node("a").error(); break;
      case 9: s = doc.rename_node("a", "b"); break;
      case 10: s = doc.set_param("s", "factor", "big").ok() ? Status() : doc.set_param("s", "factor", "x").error(); break;
      case 11: s = doc.connect("s", "y", {"ghost", "value"}); break;
    }
    QVERIFY(!s.ok());
    QVERIFY2(QString::fromStdString(s.error().message).contains(fragment), s.error().message.c_str());
    if (which != 6 && which != 7) {
      QCOMPARE(save_workflow_string(doc), before);  // nothing changed
      QCOMPARE(notifications, 0);
    }
  }
  void documentRenameRewritesLinksAndLayout() {
    GraphDocument doc = chain_doc(&reg_);
    QVERIFY(doc.set_node_editor("a", json{{"pos", {1, 2}}}).ok());
    std::vector<DocumentChange> changes;
    doc.subscribe([&](const DocumentChange& c) { changes.push_back(c); });
    QVERIFY(doc.rename_node("a", "source").ok());
    QCOMPARE(doc.find_node("s")->inputs.at("x").node, std::string("source"));
    QCOMPARE(doc.node_editor("source")["pos"], json({1, 2}));
    QVERIFY(doc.node_editor("a").is_null());
    QCOMPARE(changes.size(), std::size_t(1));
    QVERIFY(changes[0].kind == ChangeKind::NodeRenamed);
    QCOMPARE(changes[0].old_node_id, std::string("a"));
    QCOMPARE(doc.sink_nodes(), std::vector<std::string>{"t"});
    QCOMPARE(doc.unique_node_id("s"), std::string("s_2"));
  }

  // ---- operations + undo
  void operationsUndoRestoresDocument_data() {
    QTest::addColumn<int>("which");
    int i = 0;
    for (const char* name : {"add", "remove with consumers", "connect", "disconnect", "rename", "set param",
                             "remove param", "move", "node data", "remove several", "paste", "editor entry"}) {
      QTest::newRow(name) << i++;
    }
  }
  void operationsUndoRestoresDocument() {
    QFETCH(int, which);
    GraphDocument doc = chain_doc(&reg_);
    QVERIFY(doc.set_node_editor("a", json{{"pos", {5, 6}}, {"collapsed", true}}).ok());
    const std::string original = save_workflow_string(doc);
    OperationPtr op;
    switch (which) {
      case 0: op = make_add_node(make_node("n", "Scale", json::object(), {{"x", {"b", "value"}}}), 1, json{{"pos", {0, 0}}}); break;
      case 1: op = make_remove_node("a"); break;
      case 2: op = make_connect("t", "zzz_unused", {"a", "value"}); break;
      case 3: op = make_disconnect("t", "b"); break;
      case 4: op = make_rename_node("s", "scaler"); break;
      case 5: op = make_set_param("s", "factor", 3.5); break;
      case 6: op = make_set_param("a", "value", nullptr); break;
      case 7: op = make_move_node("a", 100, 200); break;
      case 8: op = make_set_node_data("a", 7, json{{"value", 2.0}}); break;
      case 9: op = make_remove_nodes(doc, {"a", "s"}); break;
      case 10: op = make_paste(doc, {doc.nodes()[0], doc.nodes()[2]}, json{{"a", {{"pos", {5, 6}}}}}, 10, 10); break;
      case 11: op = make_set_editor_entry("groups", json::array({json{{"title", "g"}, {"rect", {0, 0, 9, 9}}}})); break;
    }
    GraphDocument plain = chain_doc(nullptr);  // connect to an unknown port needs no registry
    GraphDocument& target = which == 2 ? plain : doc;
    const std::string target_before = save_workflow_string(target);
    auto inverse = op->apply(target);
    QVERIFY2(inverse.ok(), inverse.ok() ? "" : inverse.error().message.c_str());
    const std::string after = save_workflow_string(target);
    QVERIFY(after != target_before);
    auto redo = inverse.value()->apply(target);
    QVERIFY(redo.ok());
    QCOMPARE(save_workflow_string(target), target_before);
    QVERIFY(redo.value()->apply(target).ok());  // redo of the undo = the edit again
    QCOMPARE(save_workflow_string(target), after);
    if (which != 2) QCOMPARE(target_before, original);
    if (which == 11) {  // the node layouts are not document-wide editor state
      QVERIFY(!make_set_editor_entry("nodes", json::object())->apply(doc).ok());
      QCOMPARE(save_workflow_string(doc), after);
    }
  }
  void operationsParamEditsMerge() {
    GraphDocument doc = chain_doc(&reg_);
    auto first = make_set_param("s", "factor", 3.0);
    auto undo_first = first->apply(doc);
    QVERIFY(undo_first.ok());
    auto second = make_set_param("s", "factor", 4.0);
    QVERIFY(second->apply(doc).ok());
    QCOMPARE(first->merge_key(), second->merge_key());
    QVERIFY(!first->merge_key().empty());
    QVERIFY(first->merge_with(*second));
    QVERIFY(!first->merge_with(*make_set_param("s", "other", 1)));
    QVERIFY(make_set_param("a", "value", 1)->merge_key() != first->merge_key());
    QVERIFY(undo_first.value()->apply(doc).ok());  // one undo restores the value before the drag
    QCOMPARE(doc.find_node("s")->params["factor"].get<double>(), 2.0);
    QVERIFY(first->apply(doc).ok());  // merged redo applies the final value
    QCOMPARE(doc.find_node("s")->params["factor"].get<double>(), 4.0);
  }
  void operationsCompositeRollsBack() {
    GraphDocument doc = chain_doc(&reg_);
    const std::string before = save_workflow_string(doc);
    std::vector<OperationPtr> parts;
    parts.push_back(make_add_node(make_node("n", "Number")));
    parts.push_back(make_set_param("n", "value", 3.0));
    parts.push_back(make_connect("t", "a", {"n", "value"}));  // fails: t.a is connected
    auto r = make_composite("paste", std::move(parts))->apply(doc);
    QVERIFY(!r.ok());
    QVERIFY(QString::fromStdString(r.error().message).contains("already connected"));
    QCOMPARE(save_workflow_string(doc), before);
  }
  void operationsPasteRenamesClashingIds() {
    GraphDocument doc = chain_doc(&reg_);
    auto op = make_paste(doc, {doc.nodes()[0], doc.nodes()[2]}, json{{"a", {{"pos", {5, 6}}}}}, 10, 20);
    QVERIFY(op->apply(doc).ok());
    QVERIFY(doc.find_node("a_2") && doc.find_node("s_2"));
    QCOMPARE(doc.find_node("s_2")->inputs.at("x").node, std::string("a_2"));  // internal link follows
    QCOMPARE(doc.node_editor("a_2")["pos"], json({15.0, 26.0}));
  }

  // ---- validation
  void validationErrorsNameTheNode_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("node");
    QTest::addColumn<QString>("fragment");
    QTest::newRow("unknown type") << 0 << "u" << "unknown node type 'Mystery'";
    QTest::newRow("missing required input") << 1 << "s" << "required input 'x'";
    QTest::newRow("type mismatch") << 2 << "s" << "takes NUMBER but";
    QTest::newRow("unknown input port") << 3 << "s" << "does not exist on Scale";
    QTest::newRow("unknown output port") << 4 << "s" << "no such output";
    QTest::newRow("param above max") << 5 << "s" << "outside [-100, 100]";
    QTest::newRow("enum not a choice") << 6 << "k" << "not one of: fast, slow";
    QTest::newRow("param wrong JSON type") << 7 << "k" << "must be an integer";
    QTest::newRow("newer type version") << 8 << "a" << "newer than this build";
    QTest::newRow("unknown target") << 9 << "zz" << "no node 'zz'";
    QTest::newRow("negative seed") << 10 << "k" << "outside [0, inf]";
  }
  void validationErrorsNameTheNode() {
    QFETCH(int, which);
    QFETCH(QString, node);
    QFETCH(QString, fragment);
    std::vector<Node> nodes = {make_node("a", "Number"), make_node("s", "Scale", json::object(), {{"x", {"a", "value"}}}),
                               make_node("k", "Kinds"), make_node("blob", "Blob")};
    std::vector<std::string> targets;
    switch (which) {
      case 0: nodes.push_back(make_node("u", "Mystery")); break;
      case 1: nodes[1].inputs.clear(); break;
      case 2: nodes[1].inputs["x"] = {"blob", "out"}; break;
      case 3: nodes[1].inputs["y"] = {"a", "value"}; break;
      case 4: nodes[1].inputs["x"] = {"a", "nothing"}; break;
      case 5: nodes[1].params["factor"] = 1000.0; break;
      case 6: nodes[2].params["mode"] = "medium"; break;
      case 7: nodes[2].params["count"] = 2.5; break;
      case 8: nodes[0].type_version = 9; break;
      case 9: targets = {"zz"}; break;
      case 10: nodes[2].params["seed"] = -1; break;
    }
    auto doc = GraphDocument::build(nodes);
    QVERIFY(doc.ok());
    auto report = validate_document(doc.value(), reg_, targets);
    QVERIFY(!report.ok());
    QCOMPARE(report.errors.size(), std::size_t(1));
    QCOMPARE(QString::fromStdString(report.errors[0].node_id), node);
    QVERIFY2(QString::fromStdString(report.errors[0].message).contains(fragment), report.errors[0].message.c_str());
  }
  void validationScopesToTargetsAndWarns() {
    auto doc = GraphDocument::build({make_node("a", "Number", {{"value", 1.0}, {"extra", 1}}), make_node("u", "Mystery")});
    QVERIFY(doc.ok());
    auto whole = validate_document(doc.value(), reg_);
    QCOMPARE(whole.errors.size(), std::size_t(1));
    auto scoped = validate_document(doc.value(), reg_, {"a"});
    QVERIFY(scoped.ok());
    QCOMPARE(scoped.warnings.size(), std::size_t(1));
    QVERIFY(QString::fromStdString(scoped.warnings[0].message).contains("'extra'"));
  }
  void overridesParseAndCheck_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("error");  // empty = accepted
    QTest::newRow("float") << "s.factor=3.5" << "";
    QTest::newRow("int into float") << "s.factor=3" << "";
    QTest::newRow("enum") << "k.mode=slow" << "";
    QTest::newRow("bool yes") << "k.flag=yes" << "";
    QTest::newRow("string with =") << "k.name=a=b" << "";
    QTest::newRow("quoted string") << "k.name=\"q\"" << "";
    QTest::newRow("no equals") << "s.factor" << "NODE.PARAM=VALUE";
    QTest::newRow("no dot") << "factor=3" << "NODE.PARAM=VALUE";
    QTest::newRow("unknown node") << "zz.factor=3" << "no node 'zz'";
    QTest::newRow("unknown param") << "s.speed=3" << "has no param 'speed' (its params: factor)";
    QTest::newRow("not a number") << "s.factor=abc" << "takes a number";
    QTest::newRow("out of range") << "s.factor=1e6" << "outside";
    QTest::newRow("int garbage") << "k.count=3x" << "takes an integer";
    QTest::newRow("bad enum") << "k.mode=warp" << "not one of";
    QTest::newRow("bad bool") << "k.flag=maybe" << "true or false";
  }
  void overridesParseAndCheck() {
    QFETCH(QString, text);
    QFETCH(QString, error);
    auto doc = GraphDocument::build({make_node("a", "Number"), make_node("k", "Kinds"),
                                     make_node("s", "Scale", json::object(), {{"x", {"a", "value"}}})});
    QVERIFY(doc.ok());
    auto s = apply_overrides(doc.value(), reg_, {text.toStdString()});
    if (error.isEmpty()) {
      QVERIFY2(s.ok(), s.ok() ? "" : s.error().message.c_str());
    } else {
      QVERIFY(!s.ok());
      QVERIFY2(QString::fromStdString(s.error().to_string()).contains(error), s.error().to_string().c_str());
    }
  }
  void overrideValuesAreTyped() {
    auto doc = GraphDocument::build({make_node("k", "Kinds")});
    QVERIFY(apply_overrides(doc.value(), reg_, {"k.count=7", "k.flag=on", "k.name=a=b", "k.ratio=0.25"}).ok());
    const json& p = doc.value().find_node("k")->params;
    QCOMPARE(p["count"], json(7));
    QVERIFY(p["count"].is_number_integer());
    QCOMPARE(p["flag"], json(true));
    QCOMPARE(p["name"], json("a=b"));
    QCOMPARE(p["ratio"].get<double>(), 0.25);
  }

  // ---- execution
  void runComputesAndCachesAcrossRuns() {
    Engine engine(reg_);
    GraphDocument doc = chain_doc(&reg_);
    RunResult r1 = engine.run(doc, {});
    QCOMPARE(r1.status, RunStatus::Succeeded);
    QCOMPARE(number_out(r1, "t", "sum"), 12.0);  // 1*2 + 10
    QCOMPARE(vidgraph::test::total_compute_count(), 4);
    RunResult r2 = engine.run(doc, {});
    QCOMPARE(r2.status, RunStatus::Succeeded);
    QCOMPARE(vidgraph::test::total_compute_count(), 4);  // nothing re-ran
    for (const auto& n : r2.nodes) QCOMPARE(n.outcome, NodeOutcome::Cached);
    QCOMPARE(number_out(r2, "t", "sum"), 12.0);
  }
  // A bypassed Scale passes its input through (1 + 10, not 1*2 + 10) without running, and a
  // later run with bypass off computes it; the keys differ, so neither run reads the other's cache.
  void bypassedNodePassesItsInputThrough() {
    Engine engine(reg_);
    GraphDocument doc = chain_doc(&reg_);
    QVERIFY(doc.set_bypass("s", true).ok());
    Recorder rec(engine.events());
    RunResult r1 = engine.run(doc, {});
    QCOMPARE(r1.status, RunStatus::Succeeded);
    QCOMPARE(number_out(r1, "t", "sum"), 11.0);
    QCOMPARE(vidgraph::test::compute_count("s"), 0);
    bool bypassedEvent = false;
    for (const Event& e : rec.events) bypassedEvent = bypassedEvent || (e.kind == EventKind::NodeBypassed && e.node_id == "s");
    QVERIFY(bypassedEvent);
    for (const auto& n : r1.nodes) {
      if (n.node_id == "s") QCOMPARE(n.outcome, NodeOutcome::Bypassed);
    }
    QVERIFY(doc.set_bypass("s", false).ok());
    RunResult r2 = engine.run(doc, {});
    QCOMPARE(number_out(r2, "t", "sum"), 12.0);
    QCOMPARE(vidgraph::test::compute_count("s"), 1);
  }
  // A run's result lists what its nodes wrote; its history line keeps that, the workflow it ran and
  // its node times, appended after the lines of earlier runs and read back in order.
  void historyRecordsTheRun() {
    QTemporaryDir dir;
    Engine engine(reg_);
    const std::string file = dir.filePath("w.txt").toStdString();
    auto doc = GraphDocument::build({make_node("w", "WriteText", {{"file", file}, {"text", "hi"}})}, json::object(),
                                    json::object(), &reg_);
    QVERIFY(doc.ok());
    const RunResult r = engine.run(doc.value(), {});
    QCOMPARE(r.status, RunStatus::Succeeded);
    QCOMPARE(r.files.size(), std::size_t(1));
    QCOMPARE(r.files.front().node_id, std::string("w"));
    QCOMPARE(r.files.front().path, file);

    const std::string folder = dir.filePath("out/sub").toStdString();  // made by the first append
    const auto started = std::chrono::system_clock::time_point(std::chrono::seconds(1796598062));
    QVERIFY(append_run_history(folder, run_history_entry(r, save_workflow_string(doc.value()), "a.vgflow", started)));
    RunResult failed = r;
    failed.status = RunStatus::Failed;
    failed.errors.push_back(Error{"w", "disk full"});
    QVERIFY(append_run_history(folder, run_history_entry(failed, "not json", "", started)));
    const auto history = read_run_history(folder);
    QVERIFY(history.ok());
    QCOMPARE(history->runs.size(), std::size_t(2));
    QCOMPARE(history->skipped, 0);
    const json& first = history->runs[0];
    QCOMPARE(first["started"], json("2026-12-06T23:01:02Z"));
    QCOMPARE(first["status"], json("succeeded"));
    QCOMPARE(first["source"], json("a.vgflow"));
    QCOMPARE(first["files"][0]["path"], json(file));
    QCOMPARE(first["nodes"][0]["outcome"], json("finished"));
    QCOMPARE(first["workflow"]["nodes"][0]["params"]["text"], json("hi"));
    QCOMPARE(history->runs[1]["error"], json("node 'w': disk full"));
    QVERIFY(history->runs[1]["workflow"].is_null());
  }
  // Two runs' settings compared: changed params, a param one side lacks, nodes on one side only.
  void paramDifferencesBetweenRuns() {
    const json a = json::parse(R"({"nodes": [{"id": "s", "type": "Sampler", "params": {"steps": 4, "seed": 1}},
                                            {"id": "old", "type": "Note", "params": {}}]})");
    const json b = json::parse(R"({"nodes": [{"id": "s", "type": "Sampler", "params": {"steps": 8, "seed": 1,
                                                                                     "shift": 5.0}},
                                            {"id": "new", "type": "Export"}]})");
    const std::vector<std::string> want = {"s.steps: 4 -> 8", "s.shift: (unset) -> 5.0",
                                           "node 'old' (Note) only in the first run",
                                           "node 'new' (Export) only in the second run"};
    QCOMPARE(param_differences(a, b), want);
    QVERIFY(param_differences(a, a).empty());
    QCOMPARE(param_differences(nullptr, a).size(), std::size_t(2));  // a run that kept no workflow
  }
  // The history's name taken by a FIFO or a link: refused at once, never blocked on or followed.
  void historyRefusesWhatIsNotAFile() {
    QTemporaryDir dir;
    const std::string fifo_folder = dir.filePath("fifo").toStdString();
    std::filesystem::create_directories(fifo_folder);
    QCOMPARE(::mkfifo((fifo_folder + "/" + kRunHistoryFile).c_str(), 0644), 0);
    QVERIFY(!append_run_history(fifo_folder, json::object()).ok());
    QVERIFY(!read_run_history(fifo_folder).ok());
    const std::string link_folder = dir.filePath("link").toStdString();
    std::filesystem::create_directories(link_folder);
    std::filesystem::create_symlink(dir.filePath("elsewhere").toStdString(), link_folder + "/" + kRunHistoryFile);
    QVERIFY(!append_run_history(link_folder, json::object()).ok());
    QVERIFY(!std::filesystem::exists(dir.filePath("elsewhere").toStdString()));
    QCOMPARE(read_run_history(dir.filePath("none").toStdString())->runs.size(), std::size_t(0));
  }
  // A bypassed node whose read output has no input of its type is refused before anything runs;
  // its params are not checked (it does not run), its links still are.
  void bypassWithoutAStandInIsAnError() {
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("a", "Number", {{"value", 1.0}}),
                                     make_node("w", "WriteText", {{"file", 5}}, {{"x", {"a", "value"}}}),
                                     make_node("k", "Sink", json::object(), {{"value", {"w", "path"}}})},
                                    json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    QVERIFY(doc->set_bypass("w", true).ok());
    const ValidationReport report = validate_document(doc.value(), reg_);
    QCOMPARE(report.errors.size(), std::size_t(1));
    QCOMPARE(report.errors.front().node_id, std::string("w"));
    QVERIFY2(report.errors.front().message.find("output 'path' (STRING), which 'k' reads, has no connected input of "
                                                "type STRING") != std::string::npos,
             report.errors.front().message.c_str());
    QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Invalid);
    QCOMPARE(vidgraph::test::total_compute_count(), 0);
  }
  // A bypassed sink is muted: it and what only it needs do not run; the other sink still does.
  // With every sink bypassed the run says there is nothing to run.
  void bypassedSinkIsMuted() {
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("a", "Number", {{"value", 1.0}}),
                                     make_node("b", "Number", {{"value", 2.0}}),
                                     make_node("ka", "Sink", json::object(), {{"value", {"a", "value"}}}),
                                     make_node("kb", "Sink", json::object(), {{"value", {"b", "value"}}})},
                                    json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    QVERIFY(doc->set_bypass("kb", true).ok());
    RunResult r = engine.run(doc.value(), {});
    QCOMPARE(r.status, RunStatus::Succeeded);
    QCOMPARE(vidgraph::test::compute_count("ka"), 1);
    QCOMPARE(vidgraph::test::compute_count("kb"), 0);
    QCOMPARE(vidgraph::test::compute_count("b"), 0);
    QVERIFY(doc->set_bypass("ka", true).ok());
    RunResult none = engine.run(doc.value(), {});
    QCOMPARE(none.status, RunStatus::Invalid);
    QVERIFY2(none.errors.front().message.find("every output node is bypassed") != std::string::npos,
             none.errors.front().message.c_str());
  }
  // The flag is saved as "bypass": true (absent when off), read back, refused when not a boolean,
  // and toggled by an undoable operation.
  void bypassSavedAndUndoable() {
    GraphDocument doc = chain_doc(&reg_);
    QVERIFY(save_workflow_string(doc).find("bypass") == std::string::npos);
    auto op = make_set_bypass("s", true);
    auto inverse = op->apply(doc);
    QVERIFY(inverse.ok());
    QVERIFY(doc.find_node("s")->bypass);
    const std::string text = save_workflow_string(doc);
    QVERIFY(text.find("\"bypass\": true") != std::string::npos);
    LoadOptions options;
    options.registry = &reg_;
    auto loaded = load_workflow_string(text, options, "mem");
    QVERIFY(loaded.ok());
    QVERIFY(loaded->document.find_node("s")->bypass);
    QVERIFY(!loaded->document.find_node("a")->bypass);
    QVERIFY(loaded->document.find_node("s")->extra.empty());
    std::string bad = text;
    bad.replace(bad.find("\"bypass\": true"), 14, "\"bypass\": \"yes\"");
    auto refused = load_workflow_string(bad, options, "mem");
    QVERIFY(!refused.ok());
    QVERIFY2(refused.error().message.find("\"bypass\" must be true or false") != std::string::npos,
             refused.error().message.c_str());
    QVERIFY(inverse.value()->apply(doc).ok());
    QVERIFY(!doc.find_node("s")->bypass);
  }
  // An optional output a node leaves out for its params: a link to it fails naming the output and
  // what it is (its description), not as a bug in the node type; a required one still is.
  void absentOutputsAreNamed() {
    Registry local;
    vidgraph::test::register_engine_test_nodes(local);
    NodeType pair;
    pair.name = "Pair";
    pair.category = "test";
    pair.outputs = {{"first", "NUMBER", false, ""}, {"second", "NUMBER", true, "the partner, when there is one"},
                    {"third", "NUMBER", false, ""}};
    pair.compute = [](NodeContext&) -> Result<ValueMap> { return ValueMap{{"first", make_value("NUMBER", 1.0)}}; };
    QVERIFY(local.add(pair).ok());
    Engine engine(local);
    for (const char* port : {"second", "third"}) {
      auto doc = GraphDocument::build({make_node("p", "Pair", json::object()),
                                       make_node("s", "Scale", json::object(), {{"x", {"p", port}}})},
                                      json::object(), json::object(), &local);
      QVERIFY(doc.ok());
      const RunResult r = engine.run(doc.value(), {});
      QCOMPARE(r.status, RunStatus::Failed);
      QVERIFY(!r.errors.empty());
      const QString message = QString::fromStdString(r.errors.front().message);
      if (std::string(port) == "second") {
        QVERIFY2(message.contains("no 'second'") && message.contains("the partner, when there is one") &&
                     !message.contains("bug"),
                 qPrintable(message));
      } else {
        QVERIFY2(message.contains("bug in the node type Pair"), qPrintable(message));
      }
    }
  }
  // A node served from the cache posts again the previews it posted when computed: a second
  // identical preview node (same key) and a re-run both show the picture.
  void cachedNodesPostTheirPreviewsAgain() {
    Registry local;
    vidgraph::test::register_engine_test_nodes(local);
    NodeType shows;
    shows.name = "Shows";
    shows.category = "test";
    shows.inputs = {{"x", "NUMBER", false, ""}};
    shows.outputs = {{"out", "NUMBER", false, ""}};
    shows.compute = [](NodeContext& ctx) -> Result<ValueMap> {
      const Value& in = *ctx.input("x");
      ctx.emit_preview(in);
      return ValueMap{{"out", in}};
    };
    QVERIFY(local.add(shows).ok());
    Engine engine(local);
    auto doc = GraphDocument::build({make_node("a", "Number", {{"value", 3.0}}),
                                     make_node("p1", "Shows", json::object(), {{"x", {"a", "value"}}}),
                                     make_node("p2", "Shows", json::object(), {{"x", {"a", "value"}}})},
                                    json::object(), json::object(), &local);
    QVERIFY(doc.ok());
    auto previews = [](Recorder& rec) {
      std::lock_guard<std::mutex> lock(rec.mutex);
      std::vector<std::string> out;
      for (const auto& e : rec.events) {
        if (e.kind != EventKind::Preview) continue;
        const double* v = value_as<double>(e.preview);
        out.push_back(e.node_id + "=" + (v ? std::to_string(int(*v)) : "?"));
      }
      return out;
    };
    {
      Recorder rec(engine.events());
      QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Succeeded);
      QCOMPARE(to_qt(previews(rec)), QStringList({"p1=3", "p2=3"}));
      const auto lines = rec.lines();
      QVERIFY(std::find(lines.begin(), lines.end(), "node_cached:p2") != lines.end());
    }
    {
      Recorder rec(engine.events());
      QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Succeeded);
      QCOMPARE(to_qt(previews(rec)), QStringList({"p1=3", "p2=3"}));
      const auto lines = rec.lines();
      // Order: node_cached, then its preview.
      auto cached = std::find(lines.begin(), lines.end(), "node_cached:p1");
      QVERIFY(cached != lines.end() && std::next(cached) != lines.end());
      QCOMPARE(*std::next(cached), std::string("preview:p1"));
    }
  }
  // Step previews (a sampler's per-step image) carry step/steps into the event and its JSON; a
  // cache hit posts only the last step's again.
  void stepPreviewsReplayOnlyTheLast() {
    Registry local;
    vidgraph::test::register_engine_test_nodes(local);
    NodeType steps;
    steps.name = "Steps";
    steps.category = "test";
    steps.outputs = {{"out", "NUMBER", false, ""}};
    steps.compute = [](NodeContext& ctx) -> Result<ValueMap> {
      for (int i = 1; i <= 3; ++i) ctx.emit_step_preview(make_value("NUMBER", double(10 * i)), i, 3);
      return ValueMap{{"out", make_value("NUMBER", 1.0)}};
    };
    QVERIFY(local.add(steps).ok());
    Engine engine(local);
    auto doc = GraphDocument::build({make_node("s", "Steps")}, json::object(), json::object(), &local);
    QVERIFY(doc.ok());
    auto previews = [](Recorder& rec) {
      std::lock_guard<std::mutex> lock(rec.mutex);
      std::vector<std::string> out;
      for (const auto& e : rec.events) {
        if (e.kind != EventKind::Preview) continue;
        const json j = event_to_json(e);
        out.push_back(std::to_string(j.value("step", 0)) + "/" + std::to_string(j.value("steps", 0)) + "=" +
                      std::to_string(int(*value_as<double>(e.preview))));
      }
      return out;
    };
    {
      Recorder rec(engine.events());
      QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Succeeded);
      QCOMPARE(to_qt(previews(rec)), QStringList({"1/3=10", "2/3=20", "3/3=30"}));
    }
    {
      Recorder rec(engine.events());
      QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Succeeded);
      QCOMPARE(to_qt(previews(rec)), QStringList({"3/3=30"}));
    }
  }
  void paramChangeRerunsExactlyDownstream() {
    Engine engine(reg_);
    GraphDocument doc = chain_doc(&reg_);
    QCOMPARE(engine.run(doc, {}).status, RunStatus::Succeeded);
    QVERIFY(doc.set_param("s", "factor", 5.0).ok());
    RunResult r = engine.run(doc, {});
    QCOMPARE(number_out(r, "t", "sum"), 15.0);
    QCOMPARE(vidgraph::test::compute_count("a"), 1);
    QCOMPARE(vidgraph::test::compute_count("b"), 1);
    QCOMPARE(vidgraph::test::compute_count("s"), 2);
    QCOMPARE(vidgraph::test::compute_count("t"), 2);
    // Back to the old value: everything is cached again.
    QVERIFY(doc.set_param("s", "factor", 2.0).ok());
    QCOMPARE(number_out(engine.run(doc, {}), "t", "sum"), 12.0);
    QCOMPARE(vidgraph::test::total_compute_count(), 6);
  }
  void runPlansOnlyWhatTargetsNeed() {
    Engine engine(reg_);
    GraphDocument doc = chain_doc(&reg_);
    RunRequest req;
    req.targets = {"s"};
    RunResult r = engine.run(doc, req);
    QCOMPARE(r.status, RunStatus::Succeeded);
    QCOMPARE(r.nodes.size(), std::size_t(2));
    QCOMPARE(vidgraph::test::compute_count("b"), 0);
    QCOMPARE(vidgraph::test::compute_count("t"), 0);
    QCOMPARE(number_out(r, "s", "out"), 2.0);
  }
  void evictionUnderSmallBudget() {
    EngineConfig cfg;
    cfg.cache_budget_bytes = 250;
    Engine engine(reg_, cfg);
    auto doc = GraphDocument::build({make_node("x", "Blob", {{"bytes", 100}, {"tag", "x"}}),
                                     make_node("y", "Blob", {{"bytes", 100}, {"tag", "y"}}),
                                     make_node("z", "Blob", {{"bytes", 100}, {"tag", "z"}})});
    QVERIFY(doc.ok());
    QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Succeeded);
    CacheStats st = engine.cache().stats();
    QCOMPARE(st.entries, std::size_t(2));  // x evicted (least recently used)
    QCOMPARE(st.bytes, std::size_t(200));
    QCOMPARE(st.evictions, std::uint64_t(1));
    auto run_target = [&](const std::string& id) {
      RunRequest req;
      req.targets = {id};
      RunResult r = engine.run(doc.value(), req);
      return r.nodes.empty() ? NodeOutcome::Pending : r.nodes[0].outcome;
    };
    QCOMPARE(run_target("z"), NodeOutcome::Cached);
    QCOMPARE(run_target("x"), NodeOutcome::Finished);  // x was evicted: re-runs, evicts y (now LRU)
    QCOMPARE(vidgraph::test::compute_count("x"), 2);
    QCOMPARE(run_target("z"), NodeOutcome::Cached);
    QCOMPARE(run_target("y"), NodeOutcome::Finished);
    QCOMPARE(vidgraph::test::compute_count("z"), 1);
    QCOMPARE(engine.cache().stats().bytes, std::size_t(200));
    // An entry larger than the budget is never stored.
    ResultCache cache(10);
    QVERIFY(!cache.put(1, ValueMap{{"v", make_value("BLOB", 0, 11)}}));
    QCOMPARE(cache.stats().entries, std::size_t(0));
  }
  void cancellationStopsPromptly() {
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("slow", "Slow", {{"steps", 100000}, {"step_ms", 1}}),
                                     make_node("after", "Scale", json::object(), {{"x", {"slow", "out"}}})});
    QVERIFY(doc.ok());
    Recorder rec(engine.events());
    std::atomic<int> progress{0};
    engine.events().subscribe([&](const Event& e) {
      if (e.kind == EventKind::NodeProgress && ++progress == 20) engine.cancel();
    });
    const auto t0 = std::chrono::steady_clock::now();
    RunResult r = engine.run(doc.value(), {});
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    QCOMPARE(r.status, RunStatus::Cancelled);
    QVERIFY2(secs < 5.0, "cancel was not prompt");
    QCOMPARE(vidgraph::test::compute_count("after"), 0);
    QCOMPARE(r.nodes[0].outcome, NodeOutcome::Cancelled);
    const auto lines = rec.lines();
    QCOMPARE(lines.back(), std::string("run_finished"));
    QCOMPARE(lines[lines.size() - 2], std::string("node_cancelled:slow"));
    // The engine stays usable.
    QVERIFY(doc.value().set_param("slow", "steps", 3).ok());
    QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Succeeded);
  }
  void cancelFromAnotherThread() {
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("slow", "Slow", {{"steps", 100000}, {"step_ms", 1}})});
    QVERIFY(engine.start(doc.value(), {}).ok());
    QVERIFY(!engine.start(doc.value(), {}).ok());  // one run at a time
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    QVERIFY(engine.running());
    engine.cancel();
    QCOMPARE(engine.wait().status, RunStatus::Cancelled);
    QVERIFY(!engine.running());
  }
  void failingNodeFailsRunAndEngineStaysUsable_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("message");
    QTest::newRow("throws") << "Fail" << "kaboom: weights missing";
    QTest::newRow("returns an error") << "Refuse" << "cannot do that";
  }
  // A LibTorch error's C++ backtrace never reaches the node's message.
  void thrownBacktraceIsCut() {
    Engine engine(reg_);
    const std::string thrown = "shape mismatch in the DiT\nException raised from check at x.cpp:7 (most "
                               "recent call first):\nframe #0: c10::Error::Error() + 0x1 (libc10.so)";
    auto doc = GraphDocument::build({make_node("bad", "Fail", {{"message", thrown}})});
    RunResult r = engine.run(doc.value(), {});
    QCOMPARE(r.status, RunStatus::Failed);
    QCOMPARE(r.errors.at(0).message, std::string("shape mismatch in the DiT"));
  }
  void failingNodeFailsRunAndEngineStaysUsable() {
    QFETCH(QString, type);
    QFETCH(QString, message);
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("a", "Number"),
                                     make_node("bad", type.toStdString(), {{"message", message.toStdString()}},
                                               {{"x", {"a", "value"}}}),
                                     make_node("after", "Scale", json::object(), {{"x", {"bad", "out"}}})});
    Recorder rec(engine.events());
    RunResult r = engine.run(doc.value(), {});
    QCOMPARE(r.status, RunStatus::Failed);
    QCOMPARE(r.errors.size(), std::size_t(1));
    QCOMPARE(r.errors[0].node_id, std::string("bad"));
    QCOMPARE(QString::fromStdString(r.errors[0].message), message);
    QCOMPARE(vidgraph::test::compute_count("after"), 0);
    bool saw_failed = false;
    for (const auto& e : rec.events) {
      if (e.kind == EventKind::NodeFailed) saw_failed = e.node_id == "bad" && e.text == message.toStdString();
    }
    QVERIFY(saw_failed);
    QVERIFY(doc.value().remove_node("after").ok());
    QVERIFY(doc.value().remove_node("bad").ok());
    RunResult ok = engine.run(doc.value(), {});
    QCOMPARE(ok.status, RunStatus::Succeeded);
    QCOMPARE(vidgraph::test::compute_count("a"), 1);  // cached from the failed run
  }
  void invalidRunReportsEveryError() {
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("u", "Mystery"), make_node("s", "Scale")});
    Recorder rec(engine.events());
    RunResult r = engine.run(doc.value(), {});
    QCOMPARE(r.status, RunStatus::Invalid);
    QCOMPARE(r.errors.size(), std::size_t(2));
    QCOMPARE(to_qt(rec.lines()), QStringList({"run_started", "run_finished"}));
    QCOMPARE(rec.events.back().status, RunStatus::Invalid);
  }
  void eventOrder() {
    Engine engine(reg_);
    GraphDocument doc = chain_doc(&reg_);
    QVERIFY(doc.add_node(make_node("sink", "Sink", json::object(), {{"value", {"t", "sum"}}})).ok());
    {
      Recorder rec(engine.events());
      QCOMPARE(engine.run(doc, {}).status, RunStatus::Succeeded);
      QCOMPARE(to_qt(rec.lines(true)),
               QStringList({"run_started", "node_queued:a", "node_queued:b", "node_queued:s", "node_queued:t",
                            "node_queued:sink", "node_started:a", "node_finished:a", "node_started:b",
                            "node_finished:b", "node_started:s", "node_finished:s", "node_started:t",
                            "node_finished:t", "node_started:sink", "log:sink", "node_finished:sink",
                            "run_finished"}));
      QCOMPARE(rec.events.front().value, std::int64_t(5));
      QCOMPARE(vidgraph::test::last_sink_value(), 12.0);
    }
    QVERIFY(doc.set_param("b", "value", 20.0).ok());
    Recorder rec(engine.events());
    QCOMPARE(engine.run(doc, {}).status, RunStatus::Succeeded);
    QCOMPARE(to_qt(rec.lines()),
             QStringList({"run_started", "node_queued:a", "node_queued:b", "node_queued:s", "node_queued:t",
                          "node_queued:sink", "node_cached:a", "node_started:b", "node_finished:b",
                          "node_cached:s", "node_started:t", "node_finished:t", "node_started:sink",
                          "node_finished:sink", "run_finished"}));
    QCOMPARE(vidgraph::test::last_sink_value(), 22.0);
  }
  void progressEventsCarryValueAndMax() {
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("slow", "Slow", {{"steps", 4}, {"step_ms", 0}})});
    Recorder rec(engine.events());
    QCOMPARE(engine.run(doc.value(), {}).status, RunStatus::Succeeded);
    std::vector<std::int64_t> values;
    for (const auto& e : rec.events) {
      if (e.kind == EventKind::NodeProgress) {
        QCOMPARE(e.max, std::int64_t(4));
        values.push_back(e.value);
      }
    }
    QCOMPARE(values, (std::vector<std::int64_t>{1, 2, 3, 4}));
    const json j = event_to_json(rec.events[3]);
    QCOMPARE(j["event"], json("node_progress"));
    QCOMPARE(j["node"], json("slow"));
    QCOMPARE(j["max"], json(4));
  }
  void overridesAndUpgradesApplyToTheRunCopyOnly() {
    Engine engine(reg_);
    auto doc = GraphDocument::build({make_node("v", "Versioned", {{"amount", 7.0}})});
    doc.value().set_registry(&reg_);
    Node& n = const_cast<Node&>(doc.value().nodes()[0]);
    n.type_version = 1;
    RunRequest req;
    RunResult r = engine.run(doc.value(), req);
    QCOMPARE(r.status, RunStatus::Succeeded);
    QCOMPARE(number_out(r, "v", "out"), 7.0);  // upgrade hook renamed amount → value
    QCOMPARE(doc.value().nodes()[0].type_version, 1);  // the document itself is untouched
    req.overrides = {"v.value=9"};
    QCOMPARE(number_out(engine.run(doc.value(), req), "v", "out"), 9.0);
    req.overrides = {"v.value=nine"};
    RunResult bad = engine.run(doc.value(), req);
    QCOMPARE(bad.status, RunStatus::Invalid);
    QCOMPARE(bad.errors[0].node_id, std::string("v"));
  }

  void largeGraphRuns() {
    // 2000 nodes in a chain, listed in reverse order (the worst case for ordering); the engine_plan
    // suite runs 50,000 under its timeout.
    std::vector<Node> nodes;
    for (int i = 1999; i >= 1; --i) {
      nodes.push_back(make_node("n" + std::to_string(i), "Scale", {{"factor", 1.0}},
                                {{"x", {"n" + std::to_string(i - 1), i == 1 ? "value" : "out"}}}));
    }
    nodes.push_back(make_node("n0", "Number", {{"value", 3.0}}));
    auto doc = GraphDocument::build(nodes, json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    QVERIFY(validate_document(doc.value(), reg_).ok());
    QVERIFY(doc.value().connect("n0", "x", {"n1999", "out"}).error().message.find("cycle") != std::string::npos);
    Engine engine(reg_);
    RunResult r = engine.run(doc.value(), {});
    QCOMPARE(r.status, RunStatus::Succeeded);
    QCOMPARE(number_out(r, "n1999", "out"), 3.0);
  }

  // ---- node context, paths, bus
  void nodeContextStandalone() {
    RunOptions opts;
    opts.workflow_dir = "/flows/project";
    opts.resources_dir = "/opt/vg/share";
    opts.output_dir = "/tmp/out";
    ValueMap inputs{{"x", make_value("NUMBER", 2.5)}};
    int progress_calls = 0;
    NodeContext::Hooks hooks;
    hooks.progress = [&](std::int64_t, std::int64_t, const std::string&, const ProgressMetrics&) { ++progress_calls; };
    NodeContext ctx("n1", "Scale", inputs, json{{"factor", 3}, {"name", "x"}, {"f", "img/a.png"}}, opts, hooks);
    QCOMPARE(ctx.input_as<double>("x"), 2.5);
    QVERIFY(!ctx.has_input("y"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ctx.input_as<int>("x"));
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ctx.input_as<double>("y"));
    QCOMPARE(ctx.param_float("factor"), 3.0);
    QVERIFY_THROWS_EXCEPTION(std::runtime_error, ctx.param_int("name"));
    QCOMPARE(ctx.param_path("f"), std::string("/flows/project/img/a.png"));
    QCOMPARE(ctx.resolve_path("/abs/x"), std::string("/abs/x"));
    QCOMPARE(ctx.resolve_path("{resources}/flows/a.vgflow"), std::string("/opt/vg/share/flows/a.vgflow"));
    QCOMPARE(ctx.resolve_path("{output}/v.mp4"), std::string("/tmp/out/v.mp4"));
    QCOMPARE(ctx.resolve_path("../x/./y"), std::string("/flows/x/y"));
    ctx.progress(1, 2);
    QCOMPARE(progress_calls, 1);
    QVERIFY(!ctx.cancelled());
  }
  void busUnsubscribeAndLogSink() {
    EventBus bus;
    int a = 0, b = 0;
    EventBus::SubscriptionId ida = 0;
    ida = bus.subscribe([&](const Event&) {
      ++a;
      bus.unsubscribe(ida);  // from inside a handler: no deadlock, no further calls
    });
    bus.subscribe([&](const Event&) { ++b; });
    bus.post(Event{});
    bus.post(Event{});
    QCOMPARE(a, 1);
    QCOMPARE(b, 2);
    auto sink = std::make_shared<EventBusSink>(bus);
    spdlog::logger logger("unit", sink);
    std::string got;
    bus.subscribe([&](const Event& e) {
      if (e.kind == EventKind::Log) got = e.logger + "|" + to_string(e.level) + "|" + e.text;
    });
    logger.warn("disk {} full", 3);
    QCOMPARE(QString::fromStdString(got), QStringLiteral("unit|warn|disk 3 full"));
  }
};

QTEST_GUILESS_MAIN(tst_Engine)
#include "tst_engine.moc"
