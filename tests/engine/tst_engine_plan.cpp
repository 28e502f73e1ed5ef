// Engine planning at scale: plan_execution, find_cycle_node, validate_document and a whole engine
// run on documents of tens of thousands of nodes stay near-linear (CTest's timeout guards it: the old repeated-pass
// ordering took minutes on the 50,000-node chain), and the plan keeps its documented order (ties by
// document order, as repeated passes over the document would give).
#include <QtTest/QtTest>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/sinks/ringbuffer_sink.h>

#include "engine/document.h"
#include "engine/engine.h"
#include "engine/log.h"
#include "engine/plan.h"
#include "engine/registry.h"
#include "engine/validation.h"
#include "engine_test_nodes.h"

using namespace vidgraph::engine;
using nlohmann::json;

namespace {

constexpr int kChain = 50000;

Node make_node(const std::string& id, const std::string& type, std::map<std::string, InputLink> inputs = {}) {
  Node n;
  n.id = id;
  n.type = type;
  n.inputs = std::move(inputs);
  return n;
}

std::string chain_id(int i) { return "n" + std::to_string(i); }

// n0 (Number) → n1 (Scale) → ... → n{count-1}, listed last to first: every node comes before its
// source, the worst case for ordering by passes.
std::vector<Node> reverse_chain(int count) {
  std::vector<Node> nodes;
  nodes.reserve(static_cast<std::size_t>(count));
  for (int i = count - 1; i >= 1; --i) {
    nodes.push_back(make_node(chain_id(i), "Scale", {{"x", {chain_id(i - 1), i == 1 ? "value" : "out"}}}));
  }
  nodes.push_back(make_node(chain_id(0), "Number"));
  return nodes;
}

// The engine logger's lines while it is alive, at debug level (restored after).
class EngineLogCapture {
 public:
  EngineLogCapture() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(1000)), level_(logger()->level()) {
    logger()->sinks().push_back(sink_);
    logger()->set_level(spdlog::level::debug);
  }
  ~EngineLogCapture() {
    auto& sinks = logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
    logger()->set_level(level_);
  }
  int count(const std::string& text) const {
    const auto lines = sink_->last_formatted();
    return static_cast<int>(std::count_if(lines.begin(), lines.end(),
                                          [&](const std::string& l) { return l.find(text) != std::string::npos; }));
  }

 private:
  static std::shared_ptr<spdlog::logger> logger() { return vidgraph::engine::engine_logger(); }
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  spdlog::level::level_enum level_;
};

QStringList to_qt(const std::vector<std::string>& ids) {
  QStringList out;
  for (const auto& id : ids) out << QString::fromStdString(id);
  return out;
}

}  // namespace

class tst_EnginePlan : public QObject {
  Q_OBJECT

 private:
  Registry reg_;

 private Q_SLOTS:
  void initTestCase() { vidgraph::test::register_engine_test_nodes(reg_); }

  void longReverseChainPlansInOrder() {
    auto doc = GraphDocument::build(reverse_chain(kChain), json::object(), json::object(), &reg_);
    QVERIFY2(doc.ok(), doc.ok() ? "" : doc.error().message.c_str());
    QCOMPARE(find_cycle_node(doc.value()), std::string());
    const ValidationReport report = validate_document(doc.value(), reg_);
    QVERIFY2(report.ok(), report.ok() ? "" : report.errors.front().message.c_str());

    auto plan = plan_execution(doc.value(), {});
    QVERIFY(plan.ok());
    QCOMPARE(plan.value().size(), static_cast<std::size_t>(kChain));
    for (int i = 0; i < kChain; ++i) {
      if (plan.value()[static_cast<std::size_t>(i)] != chain_id(i)) {
        QFAIL(qPrintable(QStringLiteral("plan position %1 is %2, expected %3")
                             .arg(i)
                             .arg(QString::fromStdString(plan.value()[static_cast<std::size_t>(i)]),
                                  QString::fromStdString(chain_id(i)))));
      }
    }
  }

  // The engine runs the chain too: preflight, consumer counts and output checks are linear.
  void longReverseChainRuns() {
    auto doc = GraphDocument::build(reverse_chain(kChain), json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    Engine engine(reg_);
    RunRequest request;
    request.targets = {chain_id(kChain - 1)};
    const RunResult r = engine.run(doc.value(), request);
    QCOMPARE(r.status, RunStatus::Succeeded);
    QCOMPARE(r.nodes.size(), std::size_t(kChain));
    QCOMPARE(r.nodes.back().node_id, chain_id(kChain - 1));
    QVERIFY(r.outputs.count(chain_id(kChain - 1)));
  }

  void longChainTargetsAndValidationScope() {
    auto doc = GraphDocument::build(reverse_chain(kChain), json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    const std::string mid = chain_id(kChain / 2);
    auto plan = plan_execution(doc.value(), {mid});
    QVERIFY(plan.ok());
    QCOMPARE(plan.value().size(), static_cast<std::size_t>(kChain / 2 + 1));
    QCOMPARE(plan.value().front(), chain_id(0));
    QCOMPARE(plan.value().back(), mid);
    QVERIFY(validate_document(doc.value(), reg_, {mid}).ok());
  }

  // Validation plans the targets to know its scope; the run uses that plan instead of a second one.
  void aRunBuildsOnePlan_data() {
    QTest::addColumn<QStringList>("targets");
    QTest::newRow("targets") << QStringList{QStringLiteral("n2")};
    QTest::newRow("two targets") << QStringList{QStringLiteral("n2"), QStringLiteral("n3")};
    QTest::newRow("the sinks") << QStringList{};
  }
  void aRunBuildsOnePlan() {
    QFETCH(QStringList, targets);
    auto doc = GraphDocument::build(reverse_chain(5), json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    RunRequest request;
    for (const QString& t : targets) request.targets.push_back(t.toStdString());
    Engine engine(reg_);
    const EngineLogCapture log;
    const RunResult r = engine.run(doc.value(), request);
    QCOMPARE(r.status, RunStatus::Succeeded);
    QCOMPARE(r.nodes.size(), std::size_t(targets.isEmpty() ? 5 : targets.size() + 2));
    QCOMPARE(log.count("planned "), 1);
  }

  void longChainCycleIsFound() {
    // The cycle closes at the far end: n0 takes its input from the last node.
    std::vector<Node> nodes = reverse_chain(kChain);
    nodes.back() = make_node(chain_id(0), "Scale", {{"x", {chain_id(kChain - 1), "out"}}});
    auto doc = GraphDocument::build(nodes, json::object(), json::object(), &reg_);
    QVERIFY(!doc.ok());
    QVERIFY2(doc.error().message.find("cycle") != std::string::npos, doc.error().message.c_str());
  }

  void wideGraphPlansInDocumentOrder() {
    // 50,000 independent Number → Scale pairs: every Scale is a sink.
    std::vector<Node> nodes;
    for (int i = 0; i < kChain / 2; ++i) {
      nodes.push_back(make_node("s" + std::to_string(i), "Scale", {{"x", {"a" + std::to_string(i), "value"}}}));
      nodes.push_back(make_node("a" + std::to_string(i), "Number"));
    }
    auto doc = GraphDocument::build(nodes, json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    QVERIFY(validate_document(doc.value(), reg_).ok());
    auto plan = plan_execution(doc.value(), {});
    QVERIFY(plan.ok());
    QCOMPARE(plan.value().size(), nodes.size());
    // First pass: every Number (document order); second pass: every Scale.
    QCOMPARE(plan.value()[0], std::string("a0"));
    QCOMPARE(plan.value()[1], std::string("a1"));
    QCOMPARE(plan.value()[nodes.size() / 2], std::string("s0"));
    QCOMPARE(plan.value().back(), "s" + std::to_string(kChain / 2 - 1));
  }

  void tiesFollowDocumentOrderByPasses_data() {
    QTest::addColumn<QStringList>("expected");
    QTest::addColumn<int>("which");
    // [t ← c, c, a]: pass 1 takes c then a, pass 2 takes t.
    QTest::newRow("consumer listed first") << QStringList{"c", "a", "t"} << 0;
    // [a, c, t ← c, u ← t]: one pass takes all, in document order.
    QTest::newRow("sources listed first") << QStringList{"a", "c", "t", "u"} << 1;
    // [u ← t, t ← a, b ← ?, a]: pass 1 b, a; pass 2 t; pass 3 u.
    QTest::newRow("two passes back") << QStringList{"b", "a", "t", "u"} << 2;
  }
  void tiesFollowDocumentOrderByPasses() {
    QFETCH(QStringList, expected);
    QFETCH(int, which);
    std::vector<Node> nodes;
    if (which == 0) {
      nodes = {make_node("t", "Scale", {{"x", {"c", "value"}}}), make_node("c", "Number"), make_node("a", "Number")};
    } else if (which == 1) {
      nodes = {make_node("a", "Number"), make_node("c", "Number"), make_node("t", "Scale", {{"x", {"c", "value"}}}),
               make_node("u", "Scale", {{"x", {"t", "out"}}})};
    } else {
      nodes = {make_node("u", "Scale", {{"x", {"t", "out"}}}), make_node("t", "Scale", {{"x", {"a", "value"}}}),
               make_node("b", "Number"), make_node("a", "Number")};
    }
    auto doc = GraphDocument::build(nodes, json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    auto plan = plan_execution(doc.value(), {});
    QVERIFY(plan.ok());
    QCOMPARE(to_qt(plan.value()), expected);
  }
};

QTEST_GUILESS_MAIN(tst_EnginePlan)
#include "tst_engine_plan.moc"
