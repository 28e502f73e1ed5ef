// Workflow file suite: byte-stable round trip, migration chain (v0 test format), newer versions
// refused, unknown nodes and keys preserved, atomic save under a failing write, and a corpus of bad
// files that must give clear errors (never a crash).
#include <QtTest/QtTest>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <limits>

#include "engine/registry.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "engine_test_nodes.h"

using namespace vidgraph::engine;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string data_path(const std::string& name) {
  return std::string(VIDGRAPH_SOURCE_DIR) + "/tests/workflow/data/" + name;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// v0 test format: {"graph": {id: {"class", "settings", "links": {port: [node, output]}}}}.
Status migrate_v0_to_v1(json& doc) {
  if (!doc.contains("graph") || !doc["graph"].is_object()) return make_error("v0 file without a \"graph\" object");
  json nodes = json::array();
  for (const auto& [id, n] : doc["graph"].items()) {
    json node{{"id", id}, {"type", n.value("class", "")}, {"type_version", 1},
              {"params", n.value("settings", json::object())}, {"inputs", json::object()}};
    const json links = n.value("links", json::object());
    for (const auto& [port, link] : links.items()) {
      if (!link.is_array() || link.size() != 2) return make_error("v0 link '" + port + "' must be [node, output]");
      node["inputs"][port] = json{{"node", link[0]}, {"output", link[1]}};
    }
    nodes.push_back(node);
  }
  doc.erase("graph");
  doc["nodes"] = nodes;
  return {};
}

MigrationChain test_chain(int current) {
  MigrationChain chain;
  chain.current_version = current;
  chain.oldest_version = 0;
  chain.steps[0] = migrate_v0_to_v1;
  chain.steps[1] = [](json& doc) -> Status {
    doc["history"].push_back("1->2");
    return {};
  };
  return chain;
}

}  // namespace

class tst_Workflow : public QObject {
  Q_OBJECT

 private:
  Registry reg_;
  QTemporaryDir tmp_;
  std::string tmp(const std::string& name) const { return tmp_.path().toStdString() + "/" + name; }

 private Q_SLOTS:
  // JSON cannot spell NaN (and the parser refuses 1e999), but nlohmann values built in code carry
  // NaN and infinities and dump them as null: param checks refuse them for every numeric kind.
  void paramChecksRefuseNonFiniteNumbers_data() {
    QTest::addColumn<int>("kind");
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("fragment");
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    QTest::newRow("float nan") << int(ParamKind::Float) << nan << "finite";
    QTest::newRow("float inf") << int(ParamKind::Float) << inf << "finite";
    QTest::newRow("float -inf") << int(ParamKind::Float) << -inf << "finite";
    QTest::newRow("int nan") << int(ParamKind::Int) << nan << "must be an integer, got number nan";
    QTest::newRow("int inf") << int(ParamKind::Int) << inf << "must be an integer, got number inf";
    QTest::newRow("seed nan") << int(ParamKind::Seed) << nan << "must be an integer";
  }
  void paramChecksRefuseNonFiniteNumbers() {
    QFETCH(int, kind);
    QFETCH(double, value);
    QFETCH(QString, fragment);
    const ParamSpec spec = kind == int(ParamKind::Float) ? ParamSpec::real("ratio", 0.5)
                           : kind == int(ParamKind::Int) ? ParamSpec::integer("count", 1)
                                                         : ParamSpec::seed("seed", 1);
    const Status s = spec.check(json(value));
    QVERIFY(!s.ok());
    QVERIFY2(QString::fromStdString(s.error().message).contains(fragment), s.error().message.c_str());
    // The same through validation: a document built in code can hold such a value.
    Node a{"a", "Number", 1, {{"value", value}}, {}};
    Node k{"k", "Kinds", 1, {{"ratio", value}, {"count", value}, {"seed", value}}, {}};
    auto doc = GraphDocument::build({a, k}, json::object(), json::object(), &reg_);
    QVERIFY(doc.ok());
    const ValidationReport report = validate_document(doc.value(), reg_);
    QCOMPARE(report.errors.size(), std::size_t(4));
    QCOMPARE(report.errors[0].node_id, std::string("a"));
    QCOMPARE(report.errors[3].node_id, std::string("k"));
  }

  void initTestCase() {
    vidgraph::test::register_engine_test_nodes(reg_);
    QVERIFY(tmp_.isValid());
  }

  void roundTripIsByteStable_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("chain") << "chain.vgflow";
    QTest::newRow("unknown nodes") << "unknown_nodes.vgflow";
  }
  void roundTripIsByteStable() {
    QFETCH(QString, file);
    const std::string path = data_path(file.toStdString());
    const std::string original = read_all(path);
    auto loaded = load_workflow_file(path);
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
    QCOMPARE(save_workflow_string(loaded->document), original);
    const std::string out = tmp("rt_" + file.toStdString());
    QVERIFY(save_workflow_file(loaded->document, out).ok());
    QCOMPARE(read_all(out), original);
    auto again = load_workflow_file(out);
    QVERIFY(again.ok());
    QCOMPARE(save_workflow_string(again->document), original);
  }
  void editorLayoutIsApartFromSemantics() {
    auto loaded = load_workflow_file(data_path("chain.vgflow"));
    QVERIFY(loaded.ok());
    const GraphDocument& doc = loaded->document;
    QCOMPARE(doc.node_editor("t")["collapsed"], json(true));
    QCOMPARE(doc.editor()["viewport"]["zoom"].get<double>(), 1.25);
    QCOMPARE(doc.find_node("s")->inputs.at("x").node, std::string("a"));
    QVERIFY(doc.find_node("a")->extra.empty());  // layout is not mixed into the node
    QVERIFY(validate_document(doc, reg_).ok());
  }
  void stringLoadAndSaveForClipboard() {
    auto loaded = load_workflow_file(data_path("chain.vgflow"));
    const std::string text = save_workflow_string(loaded->document);
    auto back = load_workflow_string(text, {&reg_, nullptr}, "<clipboard>");
    QVERIFY(back.ok());
    QCOMPARE(back->document.registry(), &reg_);
    QCOMPARE(back->document.nodes().size(), std::size_t(4));
  }
  void unknownNodesAndKeysArePreserved() {
    auto loaded = load_workflow_file(data_path("unknown_nodes.vgflow"), {&reg_, nullptr});
    QVERIFY(loaded.ok());
    const Node* fx = loaded->document.find_node("fx");
    QVERIFY(fx);
    QCOMPARE(fx->type, std::string("FancyPluginEffect"));
    QCOMPARE(fx->type_version, 4);
    QCOMPARE(fx->extra["plugin"]["id"], json("com.example.fx"));
    QCOMPARE(loaded->document.extra()["comment"].get<std::string>().substr(0, 9), std::string("top-level"));
    auto report = validate_document(loaded->document, reg_);
    QCOMPARE(report.errors.size(), std::size_t(1));  // reported, not dropped
    QCOMPARE(report.errors[0].node_id, std::string("fx"));
    // Editing a known node leaves the unknown one byte-identical.
    QVERIFY(loaded->document.set_param("a", "value", 3.0).ok());
    const json saved = json::parse(save_workflow_string(loaded->document));
    const json original = json::parse(read_all(data_path("unknown_nodes.vgflow")));
    QCOMPARE(saved["nodes"][1], original["nodes"][1]);
  }
  void migrationFromV0() {
    const MigrationChain chain = test_chain(1);
    auto loaded = load_workflow_file(data_path("chain_v0.vgflow"), {&reg_, &chain});
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
    QCOMPARE(loaded->file_version, 0);
    QCOMPARE(loaded->warnings.size(), std::size_t(1));
    const GraphDocument& doc = loaded->document;
    QCOMPARE(doc.nodes().size(), std::size_t(2));
    QCOMPARE(doc.find_node("s")->inputs.at("x"), (InputLink{"a", "value"}));
    QCOMPARE(doc.find_node("a")->params["value"].get<double>(), 1.5);
    QVERIFY(validate_document(doc, reg_).ok());
    const json saved = json::parse(save_workflow_string(doc));
    QCOMPARE(saved["version"], json(kWorkflowFormatVersion));
    QVERIFY(!saved.contains("graph"));
  }
  void migrationChainRunsEveryStepInOrder() {
    const MigrationChain chain = test_chain(2);
    auto from0 = load_workflow_file(data_path("chain_v0.vgflow"), {nullptr, &chain});
    QVERIFY(from0.ok());
    QCOMPARE(from0->document.extra()["history"], json({"1->2"}));
    // A v1 file only runs the 1→2 step.
    auto from1 = load_workflow_file(data_path("chain.vgflow"), {nullptr, &chain});
    QVERIFY(from1.ok());
    QCOMPARE(from1->file_version, 1);
    QCOMPARE(from1->document.extra()["history"], json({"1->2"}));
    // Without the test chain, v0 is refused clearly.
    auto plain = load_workflow_file(data_path("chain_v0.vgflow"));
    QVERIFY(!plain.ok());
    QVERIFY(QString::fromStdString(plain.error().message).contains("too old"));
    // A failing step names the version.
    MigrationChain broken = chain;
    broken.steps[0] = [](json&) -> Status { return make_error("no graph"); };
    auto bad = load_workflow_file(data_path("chain_v0.vgflow"), {nullptr, &broken});
    QVERIFY(!bad.ok());
    QVERIFY(QString::fromStdString(bad.error().message).contains("migrating from format version 0 failed: no graph"));
  }
  void atomicSaveFailureLeavesOldFile() {
    const std::string path = tmp("atomic.vgflow");
    auto loaded = load_workflow_file(data_path("chain.vgflow"));
    QVERIFY(save_workflow_file(loaded->document, path).ok());
    const std::string old_text = read_all(path);
    // A much bigger document, written under a file-size limit smaller than it: the write fails
    // midway (EFBIG), as a full disk would.
    GraphDocument big = loaded->document;
    QVERIFY(big.set_param("a", "note", std::string(200000, 'x')).ok());
    struct rlimit saved {};
    QCOMPARE(getrlimit(RLIMIT_FSIZE, &saved), 0);
    auto previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = saved;
    small.rlim_cur = 64 * 1024;
    QCOMPARE(setrlimit(RLIMIT_FSIZE, &small), 0);
    Status s = save_workflow_file(big, path);
    QCOMPARE(setrlimit(RLIMIT_FSIZE, &saved), 0);
    std::signal(SIGXFSZ, previous_handler);
    QVERIFY(!s.ok());
    QVERIFY2(QString::fromStdString(s.error().message).contains("cannot write"), s.error().message.c_str());
    QCOMPARE(read_all(path), old_text);
    for (const auto& entry : fs::directory_iterator(tmp_.path().toStdString())) {
      QVERIFY2(entry.path().filename().string().find(".tmp-") == std::string::npos, "temp file left behind");
    }
    // And a save into a missing folder fails without creating anything.
    QVERIFY(!save_workflow_file(big, tmp("missing/dir/x.vgflow")).ok());
    QVERIFY(save_workflow_file(big, path).ok());  // the limit gone, it works
    QVERIFY(read_all(path).size() > 200000);
  }
  void newerVersionIsRefused() {
    auto r = load_workflow_string(R"({"format":"vidgraph-workflow","version":99,"nodes":[]})");
    QVERIFY(!r.ok());
    QVERIFY(QString::fromStdString(r.error().message).contains("newer Vidgraph"));
    QVERIFY(QString::fromStdString(r.error().message).contains("update Vidgraph"));
  }
  void badFilesGiveClearErrors_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("fragment");
    const QByteArray head = R"({"format":"vidgraph-workflow","version":1,"nodes":)";
    QTest::newRow("empty") << QByteArray() << "not valid JSON";
    QTest::newRow("truncated") << QByteArray(read_all(data_path("chain.vgflow")).substr(0, 300).c_str())
                               << "not valid JSON";
    QTest::newRow("not an object") << QByteArray("[1,2]") << "must be a JSON object";
    QTest::newRow("wrong format id") << QByteArray(R"({"format":"comfy","version":1,"nodes":[]})") << "not a Vidgraph workflow";
    QTest::newRow("version a string") << QByteArray(R"({"format":"vidgraph-workflow","version":"1","nodes":[]})")
                                      << "\"version\" must be an integer";
    QTest::newRow("nodes not an array") << head + "{}}" << "\"nodes\" must be a JSON array";
    QTest::newRow("node not an object") << head + "[3]}" << "node #1: must be a JSON object";
    QTest::newRow("id a number") << head + R"([{"id":5,"type":"Number"}]})" << "needs an \"id\" string";
    QTest::newRow("type missing") << head + R"([{"id":"a"}]})" << "node 'a': needs a \"type\"";
    QTest::newRow("params an array") << head + R"([{"id":"a","type":"Number","params":[]}]})" << "\"params\" must be";
    QTest::newRow("link malformed") << head + R"([{"id":"a","type":"Add","inputs":{"a":"b"}}]})"
                                    << "input 'a' must be";
    QTest::newRow("type_version negative") << head + R"([{"id":"a","type":"Number","type_version":-2}]})"
                                           << "non-negative";
    QTest::newRow("editor not an object") << QByteArray(R"({"format":"vidgraph-workflow","version":1,"nodes":[],"editor":7})")
                                          << "\"editor\" must be";
    QTest::newRow("duplicate ids") << head + R"([{"id":"a","type":"Number"},{"id":"a","type":"Number"}]})"
                                   << "two nodes have the id 'a'";
    QTest::newRow("invalid id") << head + R"([{"id":"a b","type":"Number"}]})" << "not a valid node id";
    QTest::newRow("dangling link") << head + R"([{"id":"s","type":"Scale","inputs":{"x":{"node":"gone","output":"value"}}}]})"
                                   << "'gone', which does not exist";
    QTest::newRow("cycle") << head + R"([{"id":"p","type":"Scale","inputs":{"x":{"node":"q","output":"out"}}},)"
                                     R"({"id":"q","type":"Scale","inputs":{"x":{"node":"p","output":"out"}}}]})"
                           << "cycle";
    QTest::newRow("self link") << head + R"([{"id":"p","type":"Scale","inputs":{"x":{"node":"p","output":"out"}}}]})"
                               << "its own node";
    QTest::newRow("deep nesting") << QByteArray(200000, '[') << "nests deeper than 64";
    QTest::newRow("deep nesting in params") << head + R"([{"id":"a","type":"Number","params":{"x":)" +
                                                   QByteArray(100, '[') + QByteArray(100, ']') + "}}]}"
                                            << "nests deeper";
    QTest::newRow("non-UTF-8 bytes") << head + "[{\"id\":\"a\",\"type\":\"Num\xff\xfe" "ber\"}]}" << "not valid UTF-8";
    QTest::newRow("overlong UTF-8") << head + "[{\"id\":\"a\",\"type\":\"\xc0\xaf\"}]}" << "not valid UTF-8";
    QTest::newRow("NUL byte") << head + QByteArray("[\0]}", 4) << "not valid JSON";
  }
  void badFilesGiveClearErrors() {
    QFETCH(QByteArray, text);
    QFETCH(QString, fragment);
    const std::string path = tmp("bad.vgflow");
    write_all(path, text.toStdString());
    auto r = load_workflow_file(path);
    QVERIFY(!r.ok());
    const QString msg = QString::fromStdString(r.error().message);
    QVERIFY2(msg.contains(fragment), r.error().message.c_str());
    QVERIFY2(msg.startsWith(QString::fromStdString(path)), "the error must name the file");
  }
  // Editors drop a dangling link (and list it) instead of refusing the file; runners still refuse it.
  void danglingLinksDroppedForEditors() {
    const std::string text = R"({"format":"vidgraph-workflow","version":1,"nodes":[
      {"id":"n","type":"Number"},
      {"id":"s","type":"Scale","inputs":{"x":{"node":"gone","output":"value"}}},
      {"id":"k","type":"Sink","inputs":{"value":{"node":"s","output":"out"}}}]})";
    auto refused = load_workflow_string(text, {}, "f.vgflow");
    QVERIFY(!refused.ok());
    const QString msg = QString::fromStdString(refused.error().to_string());
    QVERIFY2(msg.contains("'gone', which does not exist"), qPrintable(msg));
    QCOMPARE(msg.count("node 's'"), 1);  // the node is named once
    LoadOptions options;
    options.drop_dangling_links = true;
    auto loaded = load_workflow_string(text, options, "f.vgflow");
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().message.c_str());
    QCOMPARE(loaded->document.nodes().size(), std::size_t(3));
    QVERIFY(loaded->document.find_node("s")->inputs.empty());
    QCOMPARE(loaded->document.find_node("k")->inputs.at("value").node, std::string("s"));
    QCOMPARE(loaded->broken_links.size(), std::size_t(1));
    QCOMPARE(loaded->broken_links[0].node, std::string("s"));
    QCOMPARE(loaded->broken_links[0].port, std::string("x"));
    QCOMPARE(loaded->broken_links[0].link.node, std::string("gone"));
    QCOMPARE(loaded->warnings.size(), std::size_t(1));
    QVERIFY(QString::fromStdString(loaded->warnings[0]).contains("input 'x' was linked to node 'gone'"));
  }

  // A video, an image, a model or other binary data is named for what it is, not as bad UTF-8.
  void nonWorkflowFilesAreNamed_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("kind");
    QTest::newRow("mp4") << QByteArray("\0\0\0\x20" "ftypisom\0\0\x02\0isomiso2avc1mp41\xff\xfe", 34) << "an MP4 video";
    QTest::newRow("mov") << QByteArray("\0\0\0\x14" "ftypqt  \0\0\0\0qt  \xff", 21) << "a QuickTime (MOV) video";
    QTest::newRow("png") << QByteArray("\x89PNG\r\n\x1a\n\0\0\0\rIHDR\xff", 17) << "a PNG image";
    QTest::newRow("jpeg") << QByteArray("\xff\xd8\xff\xe0\0\x10JFIF", 10) << "a JPEG image";
    QTest::newRow("webm") << QByteArray("\x1a\x45\xdf\xa3\x9f\x42\x86\x81", 8) << "a WebM/Matroska video";
    QTest::newRow("safetensors") << QByteArray("\x40\0\0\0\0\0\0\0{\"w\":{}}", 16) << "a safetensors model file";
    QTest::newRow("other binary") << QByteArray("\x01\x02\x03\xff\xfe garbage", 14) << "a binary file";
  }
  void nonWorkflowFilesAreNamed() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, kind);
    const std::string path = tmp("clip.vgflow");
    write_all(path, bytes.toStdString());
    auto r = load_workflow_file(path);
    QVERIFY(!r.ok());
    const QString msg = QString::fromStdString(r.error().message);
    QVERIFY2(msg.contains("this is " + kind + ", not a Vidgraph workflow"), qPrintable(msg));
    QVERIFY2(!msg.contains("UTF-8"), qPrintable(msg));
    QVERIFY2(msg.startsWith(QString::fromStdString(path)), "the error must name the file");
  }
  void hugeFileIsRefused() {
    // 100 MB, sparse on disk: the size check refuses it before reading.
    const std::string path = tmp("huge.vgflow");
    { std::ofstream(path) << "{"; }
    fs::resize_file(path, 100u * 1024u * 1024u);
    auto r = load_workflow_file(path);
    QVERIFY(!r.ok());
    QVERIFY2(QString::fromStdString(r.error().message).contains("100 MB is larger than the 32 MB"),
             r.error().message.c_str());
    fs::remove(path);
    // The same through the string API (clipboard paste of something huge).
    std::string text(100u * 1024u * 1024u, ' ');
    auto s = load_workflow_string(text, {}, "<clipboard>");
    QVERIFY(!s.ok());
    QVERIFY(QString::fromStdString(s.error().message).startsWith("<clipboard>: 100 MB"));
  }
  void missingAndFolderPaths() {
    auto missing = load_workflow_file(tmp("nope.vgflow"));
    QVERIFY(!missing.ok());
    QVERIFY(QString::fromStdString(missing.error().message).contains("does not exist"));
    auto folder = load_workflow_file(tmp_.path().toStdString());
    QVERIFY(!folder.ok());
    QVERIFY(QString::fromStdString(folder.error().message).contains("is a folder"));
    // A FIFO is refused without being opened (opening it would wait for a writer forever).
    const std::string fifo = tmp("pipe.vgflow");
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    auto pipe = read_workflow_file(fifo);
    QVERIFY(!pipe.ok());
    QVERIFY(QString::fromStdString(pipe.error().message).contains("is not a regular file"));
    // The text read is the file's, byte for byte: front ends parse it without reading again.
    auto text = read_workflow_file(data_path("chain.vgflow"));
    QVERIFY(text.ok());
    std::ifstream in(data_path("chain.vgflow"), std::ios::binary);
    QCOMPARE(*text, std::string(std::istreambuf_iterator<char>(in), {}));
  }
  void utf8CheckerAcceptsValidText() {
    QVERIFY(check_utf8("plain ascii").ok());
    QVERIFY(check_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x8e\xac").ok());  // é € 🎬
    QVERIFY(!check_utf8("\xed\xa0\x80").ok());                                 // surrogate
    QVERIFY(!check_utf8("\xe2\x82").ok());                                     // truncated
  }
};

QTEST_GUILESS_MAIN(tst_Workflow)
#include "tst_workflow.moc"
