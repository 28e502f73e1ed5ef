// Tests of the Qt node editor (app/gui), editor side: edits through the editor model equal the engine
// API, undo/redo of every command, refused connections, the scene and wire drags, clipboard, runs from
// the GUI controller (states, preview frames, cancel, errors on the node), palette and inspector, view
// zoom, and a screenshot of the main window. Files, autosave, recovery and the window's dialogs are in
// tst_gui_files.cpp; shared fixtures in gui_test_fixture.h.
#include <QtCore/QDir>
#include <QtCore/QElapsedTimer>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QProcess>
#include <QtCore/QSettings>
#include <QtCore/QTemporaryDir>
#include <QtGui/QDesktopServices>
#include <QtTest/QSignalSpy>
#include <QtTest/QtTest>
#include <QtWidgets/QApplication>
#include <QtWidgets/QComboBox>
#include <QtWidgets/QToolButton>
#include <QtWidgets/QDockWidget>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QLabel>
#include <QtWidgets/QMenu>
#include <QtWidgets/QSlider>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QToolBar>
#include <QtWidgets/QToolButton>

#include "engine/operations.h"
#include "engine/subgraph_edits.h"
#include "engine/validation.h"
#include "engine/workflow_file.h"
#include "gui/about_dialog.h"
#include "gui/clipboard_json.h"
#include "gui/connection_item.h"
#include "gui/document_controller.h"
#include "gui/graph_scene.h"
#include "gui/graph_view.h"
#include "gui/group_item.h"
#include "gui/inspector_editors.h"
#include "gui/inspector_panel.h"
#include "gui/loss_chart.h"
#include "gui/main_window.h"
#include "gui/minimap.h"
#include "gui/node_item.h"
#include "gui/node_palette.h"
#include "gui/port_style.h"
#include "gui/preview_player.h"
#include "gui/run_controller.h"
#include "gui_dialog_answerer.h"
#include "gui_test_fixture.h"

using namespace vidgraph;
using gui::DocumentController;
using gui_test::buildChain;
using gui_test::saved;
using gui_test::waitFinished;
using nlohmann::json;

namespace {

const QString kScreenshot = QStringLiteral(VIDGRAPH_BINARY_DIR "/tests/artifacts/vidgraph-main-window.png");
const QString kMidRunScreenshot = QStringLiteral(VIDGRAPH_BINARY_DIR "/tests/artifacts/vidgraph-mid-run.png");

// Shows the window at the screenshots' size with every node in view.
void showForScreenshot(gui::MainWindow& window) {
  window.resize(1400, 860);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  window.fitView();
  QApplication::processEvents();
}

// Writes a rendering of the window to `path`; the image must not be blank.
void saveImage(const QImage& shot, const gui::MainWindow& window, const QString& path) {
  QCOMPARE(shot.size(), window.size() * window.devicePixelRatio());
  QSet<QRgb> colours;
  for (int y = 0; y < shot.height(); y += 23) {
    for (int x = 0; x < shot.width(); x += 17) colours.insert(shot.pixel(x, y));
  }
  QVERIFY2(colours.size() > 20, "the window rendered (almost) blank");
  QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
  QVERIFY(shot.save(path));
}

// Renders the window to the screenshot artefact.
void saveScreenshot(gui::MainWindow& window) {
  showForScreenshot(window);
  saveImage(window.grab().toImage(), window, kScreenshot);
}

// Receives the URLs QDesktopServices would open (Show in Folder).
class UrlCatcher : public QObject {
  Q_OBJECT

 public:
  QList<QUrl> urls;

 public Q_SLOTS:
  void open(const QUrl& url) { urls << url; }
};

}  // namespace

class tst_Gui : public QObject {
  Q_OBJECT

 private:
#ifdef VIDGRAPH_GUI_HAVE_NODES
  nodes::Session session_;  // before registry_: see gui_test::initGuiSuite
#endif  // VIDGRAPH_GUI_HAVE_NODES
  engine::Registry registry_;
  QTemporaryDir tmp_;
  bool screenshotOfRun_ = false;  // runDemoWorkflow wrote the artefact with a finished run

 private Q_SLOTS:
  void initTestCase() {
    gui_test::initGuiSuite(registry_, QStringLiteral("tst_gui"));
#ifdef VIDGRAPH_GUI_HAVE_NODES
    nodes::register_builtin_nodes(registry_, session_.builtin_options());
#endif  // VIDGRAPH_GUI_HAVE_NODES
    QVERIFY(tmp_.isValid());
  }

  void editsEqualEngineApi() {
    DocumentController c(registry_);
    buildChain(c);
    QVERIFY(c.setParam("Scale", "factor", 3.5).ok());
    QVERIFY(c.moveNodes({{"Sink", QPointF(700, 50)}}).ok());

    engine::GraphDocument doc(&registry_);
    auto add = [&](const std::string& type, double x, double y) {
      engine::Node n;
      n.id = type;
      n.type = type;
      n.params = registry_.find(type)->params_with_defaults(json::object());
      QVERIFY(doc.add_node(n).ok());
      QVERIFY(doc.set_node_editor(type, json{{"pos", {x, y}}}).ok());
    };
    add("Number", 0, 0);
    add("Scale", 300, 0);
    add("Sink", 600, 0);
    QVERIFY(doc.connect("Scale", "x", {"Number", "value"}).ok());
    QVERIFY(doc.connect("Sink", "value", {"Scale", "out"}).ok());
    QVERIFY(doc.set_param("Scale", "factor", 3.5).ok());
    QVERIFY(doc.set_node_editor("Sink", json{{"pos", {700.0, 50.0}}}).ok());
    QCOMPARE(QString::fromStdString(saved(c.document())), QString::fromStdString(saved(doc)));
  }

  void undoRedoEveryCommand_data() {
    QTest::addColumn<QString>("action");
    for (const char* a : {"add", "remove", "connect", "disconnect", "reconnect", "rename", "param", "move",
                          "moveMany", "paste", "duplicate", "removeMany"}) {
      QTest::newRow(a) << QString::fromLatin1(a);
    }
  }

  void undoRedoEveryCommand() {
    QFETCH(QString, action);
    DocumentController c(registry_);
    buildChain(c);
    QVERIFY(c.addNode("Number", {0, 200}).ok());  // "Number_2", unconnected
    const std::string before = saved(c.document());
    const int steps = c.undoStack()->count();
    engine::Status status;
    if (action == "add") status = c.addNode("Add", {10, 10}).ok() ? engine::Status{} : engine::make_error("add");
    if (action == "remove") status = c.removeNodes({"Number_2"});
    if (action == "connect") status = c.connectPorts("Number_2", "value", "Scale", "x");
    if (action == "disconnect") status = c.disconnectInput("Sink", "value");
    if (action == "reconnect") status = c.connectPorts("Number", "value", "Sink", "value");
    if (action == "rename") status = c.renameNode("Scale", "times");
    if (action == "param") status = c.setParam("Number", "value", 42.0);
    if (action == "move") status = c.moveNodes({{"Number", QPointF(-50, 80)}});
    if (action == "moveMany") status = c.moveNodes({{"Number", QPointF(1, 2)}, {"Sink", QPointF(3, 4)}});
    if (action == "paste") status = c.pasteJson(c.copyJson({"Number", "Scale"}), {20, 20}).ok() ? engine::Status{} : engine::make_error("paste");
    if (action == "duplicate") status = c.duplicateNodes({"Scale"}, {40, 40}).ok() ? engine::Status{} : engine::make_error("dup");
    if (action == "removeMany") status = c.removeNodes({"Number", "Scale"});
    QVERIFY2(status.ok(), status.ok() ? "" : status.error().message.c_str());
    const std::string after = saved(c.document());
    QVERIFY(after != before);
    QCOMPARE(c.undoStack()->count(), steps + 1);
    QVERIFY(c.isModified());
    c.undoStack()->undo();
    QCOMPARE(QString::fromStdString(saved(c.document())), QString::fromStdString(before));
    c.undoStack()->redo();
    QCOMPARE(QString::fromStdString(saved(c.document())), QString::fromStdString(after));
    c.undoStack()->undo();
    QCOMPARE(QString::fromStdString(saved(c.document())), QString::fromStdString(before));
  }

  void paramDragIsOneStep() {
    DocumentController c(registry_);
    buildChain(c);
    const int steps = c.undoStack()->count();
    const double original = c.document().find_node("Scale")->params["factor"].get<double>();
    QVERIFY(original != 7.25);
    for (double v : {1.5, 2.0, 2.5, 3.0, 7.25}) QVERIFY(c.setParam("Scale", "factor", v).ok());
    QCOMPARE(c.undoStack()->count(), steps + 1);
    QCOMPARE(c.document().find_node("Scale")->params["factor"].get<double>(), 7.25);
    c.undoStack()->undo();
    QCOMPARE(c.document().find_node("Scale")->params["factor"].get<double>(), original);
    c.undoStack()->redo();
    QCOMPARE(c.document().find_node("Scale")->params["factor"].get<double>(), 7.25);
    // A slider in the inspector merges the same way.
    gui::InspectorPanel inspector(&c);
    inspector.setNode("Number");
    gui::ParamEditor* editor = inspector.editor("value");
    QVERIFY(editor);
    editor->setValue(json(1.0));  // shows, never commits
    QCOMPARE(c.undoStack()->count(), steps + 1);
  }

  void refusedConnections_data() {
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("output");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("input");
    QTest::addColumn<QString>("reasonWord");
    QTest::newRow("type mismatch") << "Blob" << "out" << "Scale" << "x" << "BLOB";
    QTest::newRow("cycle") << "Scale" << "out" << "Add" << "a" << "cycle";
    QTest::newRow("unknown input") << "Number" << "value" << "Scale" << "nope" << "nope";
    QTest::newRow("self link") << "Scale" << "out" << "Scale" << "x" << "itself";
  }

  void refusedConnections() {
    QFETCH(QString, from);
    QFETCH(QString, output);
    QFETCH(QString, to);
    QFETCH(QString, input);
    QFETCH(QString, reasonWord);
    DocumentController c(registry_);
    buildChain(c);
    QVERIFY(c.addNode("Blob", {0, 300}).ok());
    QVERIFY(c.addNode("Add", {300, 300}).ok());
    QVERIFY(c.connectPorts("Add", "sum", "Number", "value").ok() == false);  // Number has no inputs
    QVERIFY(c.connectPorts("Add", "sum", "Scale", "x").ok());                 // Add → Scale
    const std::string before = saved(c.document());
    const int steps = c.undoStack()->count();
    auto status = c.connectPorts(from.toStdString(), output.toStdString(), to.toStdString(), input.toStdString());
    QVERIFY(!status.ok());
    QVERIFY2(QString::fromStdString(status.error().message).contains(reasonWord, Qt::CaseInsensitive),
             status.error().message.c_str());
    QCOMPARE(c.undoStack()->count(), steps);
    QCOMPARE(QString::fromStdString(saved(c.document())), QString::fromStdString(before));
  }

  // Make Subgraph puts the selection into one node titled with the subgraph's name, with the
  // ports the links crossing it need (typed from the inner nodes), one undo step; an exposed param
  // shows in the inspector; Unpack brings the nodes back, and undo restores the file exactly.
  void subgraphMakeExposeUnpack() {
    DocumentController c(registry_);
    gui::GraphScene scene(&c);
    buildChain(c);
    const std::string before = saved(c.document());
    const int steps = c.undoStack()->count();
    auto made = c.makeSubgraph({"Scale"}, "Doubler");
    QVERIFY2(made.ok(), made.ok() ? "" : made.error().message.c_str());
    QCOMPARE(c.undoStack()->count(), steps + 1);
    QVERIFY(!scene.nodeItem("Scale"));
    gui::NodeItem* item = scene.nodeItem(*made);
    QVERIFY(item);
    QCOMPARE(item->title(), QStringLiteral("Doubler"));
    QCOMPARE(item->inputs().size(), std::size_t(1));
    QCOMPARE(item->inputs()[0].name, QStringLiteral("x"));
    QCOMPARE(item->inputs()[0].type, QStringLiteral("NUMBER"));
    QCOMPARE(item->outputs()[0].name, QStringLiteral("out"));
    QVERIFY(item->problems().isEmpty());
    QCOMPARE(scene.connectionItemCount(), std::size_t(2));  // Number → Doubler → Sink

    const std::string definition = c.document().find_node(*made)->params["subgraph"].get<std::string>();
    auto expose = vidgraph::engine::make_expose_param(c.document(), definition, "factor", {"Scale", "factor"});
    QVERIFY(expose.ok());
    QVERIFY(c.apply(std::move(expose.value())).ok());
    gui::InspectorPanel inspector(&c);
    inspector.setNode(*made);
    QVERIFY(inspector.editor("factor"));

    QVERIFY(c.unpackSubgraph(*made).ok());
    QVERIFY(scene.nodeItem("Scale"));
    QCOMPARE(c.document().find_node("Sink")->inputs.at("value").node, std::string("Scale"));
    c.undoStack()->undo();  // unpack
    c.undoStack()->undo();  // expose
    c.undoStack()->undo();  // make
    QCOMPARE(saved(c.document()), before);
    QVERIFY(scene.nodeItem("Scale"));
  }

  // Opening an instance shows its inner graph with its own undo stack; exposing a param there is an
  // undo step of that level; runs and saves see the open level's edits; leaving writes them into the
  // definition as one step above. The window's breadcrumb shows the levels and goes back.
  void subgraphOpenEditLeave() {
    gui::MainWindow w(registry_, {tmp_.filePath("rec-sub"), 3600000, false});
    DocumentController& c = *w.controller();
    buildChain(c);
    auto made = c.makeSubgraph({"Scale"}, "Doubler");
    QVERIFY(made.ok());
    const std::string before = saved(c.document());
    const int steps = c.undoStack()->count();
    QVERIFY(!w.findChild<QToolBar*>(QStringLiteral("breadcrumbBar"))->isVisibleTo(&w));
    w.scene()->selectNodes({*made});
    std::unique_ptr<QMenu> menu(w.contextMenuAt(w.view()->mapFromScene(w.scene()->nodeItem(*made)->sceneBoundingRect().center())));
    QAction* open = nullptr;
    for (QAction* a : menu->actions()) {
      if (a->text() == QStringLiteral("&Open Subgraph")) open = a;
    }
    QVERIFY(open);
    open->trigger();
    QCOMPARE(c.depth(), 1);
    QCOMPARE(c.breadcrumb(), QStringList({QStringLiteral("Untitled"), QStringLiteral("Doubler")}));
    QCOMPARE(c.levelPath(), *made);
    QVERIFY(w.scene()->nodeItem("Scale") && !w.scene()->nodeItem("Sink"));
    QToolBar* bar = w.findChild<QToolBar*>(QStringLiteral("breadcrumbBar"));
    QVERIFY(bar->isVisibleTo(&w));
    QCOMPARE(c.undoStack()->count(), 0);  // this level's own stack
    QVERIFY(c.setParam("Scale", "factor", 5.0).ok());
    QVERIFY(c.exposeParam("Scale", "factor", "factor").ok());
    QVERIFY(!c.exposeParam("Scale", "factor", "factor").ok());  // the name is taken
    QVERIFY(!c.exposeParam("Scale", "nope", "other").ok());
    QCOMPARE(c.exposedParams().size(), std::size_t(1));
    c.undoStack()->undo();
    QVERIFY(c.exposedParams().empty());
    c.undoStack()->redo();
    QVERIFY(c.isModified());
    // Runs and saves take the workflow with this level's edits folded in.
    auto whole = c.workflow();
    QVERIFY(whole.ok());
    auto expanded = vidgraph::engine::expand_subgraphs(*whole);
    QVERIFY(expanded.ok());
    QCOMPARE(expanded->find_node(*made + "/Scale")->params["factor"].get<double>(), 5.0);
    const QString file = tmp_.filePath("inside.vgflow");
    QVERIFY(c.save(file).ok());
    QVERIFY(!c.isModified());
    DocumentController reopened(registry_);
    QVERIFY(reopened.open(file).ok());
    QCOMPARE(saved(reopened.document()), saved(*whole));
    // The first crumb leaves: one undo step at the workflow, which stays saved.
    QAction* top = nullptr;
    for (QAction* a : bar->actions()) {
      if (a->text() == QStringLiteral("Untitled") || a->text() == QStringLiteral("inside.vgflow")) top = a;
    }
    QVERIFY(top && top->isEnabled());
    top->trigger();
    QCOMPARE(c.depth(), 0);
    QVERIFY(!bar->isVisibleTo(&w));
    QVERIFY(w.scene()->nodeItem("Sink"));
    QCOMPARE(c.undoStack()->count(), steps + 1);
    QVERIFY(!c.isModified());
    QCOMPARE(saved(c.document()), saved(*whole));
    gui::InspectorPanel inspector(&c);
    inspector.setNode(*made);
    QVERIFY(inspector.editor("factor"));  // the instance now sets it
    c.undoStack()->undo();
    QCOMPARE(saved(c.document()), before);
    // An exposure whose node is deleted inside goes, and the instance's value of it with it.
    c.undoStack()->redo();
    QVERIFY(c.setParam(*made, "factor", 7.0).ok());
    QVERIFY(c.enterSubgraph(*made).ok());
    QVERIFY(c.removeNodes({"Scale"}).ok());
    QVERIFY(c.leaveSubgraph().ok());
    const auto* instance = c.document().find_node(*made);
    QVERIFY(!instance->params.contains("factor"));
    QVERIFY(instance->inputs.empty());  // its input fed the deleted node
    QVERIFY(c.document().find_node("Sink")->inputs.empty());
    QVERIFY(!c.enterSubgraph("Sink").ok());
    c.undoStack()->undo();  // the deletion's fold
    // A subgraph made inside one is a nested definition of the workflow after leaving.
    QVERIFY(c.enterSubgraph(*made).ok());
    auto nested = c.makeSubgraph({"Scale"}, "Inner");
    QVERIFY(nested.ok());
    QVERIFY(c.leaveSubgraph().ok());
    QCOMPARE(vidgraph::engine::subgraph_ids(c.document()).size(), std::size_t(2));
    auto expanded_nested = vidgraph::engine::expand_subgraphs(c.document());
    QVERIFY2(expanded_nested.ok(), expanded_nested.ok() ? "" : expanded_nested.error().message.c_str());
    QVERIFY(expanded_nested->find_node(*made + "/" + *nested + "/Scale"));
    // Opening another document drops the open levels.
    QVERIFY(c.enterSubgraph(*made).ok());
    c.newDocument();
    QCOMPARE(c.depth(), 0);
    QVERIFY(!bar->isVisibleTo(&w));
  }

  void sceneObservesDocumentAndDragsWires() {
    DocumentController c(registry_);
    gui::GraphScene scene(&c);
    buildChain(c);
    QCOMPARE(scene.nodeItemCount(), std::size_t(3));
    QCOMPARE(scene.connectionItemCount(), std::size_t(2));
    QVERIFY(scene.nodeItem("Scale"));
    QCOMPARE(scene.nodeItem("Scale")->pos(), QPointF(300, 0));
    // Drag a wire from an output port to an input port: connect.
    QVERIFY(c.addNode("Number", {0, 300}).ok());
    gui::NodeItem* n2 = scene.nodeItem("Number_2");
    gui::NodeItem* scale = scene.nodeItem("Scale");
    auto hit = scene.portAt(n2->portScenePos("value", true));
    QVERIFY(hit && hit->isOutput && hit->port == "value");
    QVERIFY(scene.dropWire(*hit, scale->portScenePos("x", false)).ok());
    QCOMPARE(c.document().find_node("Scale")->inputs.at("x").node, std::string("Number_2"));
    // Output to output is refused with a reason shown.
    QVERIFY(!scene.dropWire(*hit, scale->portScenePos("out", true)).ok());
    QVERIFY(scene.lastRefusal().contains("output"));
    // Dropping on empty canvas asks for the palette with the wire's type.
    QSignalSpy dropped(&scene, &gui::GraphScene::wireDroppedOnCanvas);
    QVERIFY(scene.dropWire(*hit, QPointF(5000, 5000)).ok());
    QCOMPARE(dropped.count(), 1);
    QCOMPARE(dropped.at(0).at(0).value<gui::WireDrop>().type, QStringLiteral("NUMBER"));
    // A picked-up wire dropped on empty canvas disconnects.
    QVERIFY(scene.dropWire(*hit, QPointF(5000, 5000), std::make_pair(std::string("Scale"), QStringLiteral("x"))).ok());
    QVERIFY(!c.document().find_node("Scale")->inputs.count("x"));
    QCOMPARE(scene.connectionItemCount(), std::size_t(1));
    c.undoStack()->undo();
    QCOMPARE(scene.connectionItemCount(), std::size_t(2));
    // Moves follow the document, undo included.
    QVERIFY(c.moveNodes({{"Scale", QPointF(123, 45)}}).ok());
    QCOMPARE(scale->pos(), QPointF(123, 45));
    c.undoStack()->undo();
    QCOMPARE(scale->pos(), QPointF(300, 0));
    QVERIFY(c.removeNodes({"Number_2"}).ok());
    QVERIFY(!scene.nodeItem("Number_2"));
  }

  // Reroute points of copied links and groups whose nodes are all copied paste with the nodes, moved
  // by the paste's offset, in the same undo step.
  void copyPasteCarriesReroutesAndGroups() {
    DocumentController c(registry_);
    buildChain(c);
    QVERIFY(c.setReroutePoints("Scale", "x", {QPointF(150, 50)}).ok());
    QVERIFY(c.setReroutePoints("Sink", "value", {QPointF(450, 60)}).ok());
    QVERIFY(c.addGroup(QStringLiteral("chain"), QRectF(-50, -50, 1000, 400)).ok());
    const QString clip = c.copyJson({"Number", "Scale"}, {0});
    auto parsed = gui::parseWorkflowJson(clip);
    QVERIFY(parsed.ok());
    QCOMPARE(parsed->reroutes.size(), std::size_t(1));  // Scale -> Sink left the copy with Sink
    QCOMPARE(parsed->groups.size(), std::size_t(1));
    const int steps = c.undoStack()->count();
    auto added = c.pasteJson(clip, {0, 400});
    QVERIFY2(added.ok(), added.ok() ? "" : added.error().message.c_str());
    QCOMPARE(c.undoStack()->count(), steps + 1);
    const std::string scale2 = added->at(1);
    QCOMPARE(c.reroutePoints(scale2, "x"), QVector<QPointF>{QPointF(150, 450)});
    QCOMPARE(c.reroutePoints("Scale", "x"), QVector<QPointF>{QPointF(150, 50)});  // the original stays
    const std::vector<gui::NodeGroup> groups = c.groups();
    QCOMPARE(groups.size(), std::size_t(2));
    QCOMPARE(groups[1].title, QStringLiteral("chain"));
    QCOMPARE(groups[1].rect, QRectF(-50, 350, 1000, 400));
    c.undoStack()->undo();
    QCOMPARE(c.groups().size(), std::size_t(1));
    QVERIFY(c.document().find_node(scale2) == nullptr);
    QVERIFY(c.reroutePoints(scale2, "x").isEmpty());
    // Through a window's Copy: a group goes with the copy when all its nodes are selected.
    gui::MainWindow a(registry_, {tmp_.filePath("rec-ga"), 3600000, false});
    gui::MainWindow b(registry_, {tmp_.filePath("rec-gb"), 3600000, false});
    buildChain(*a.controller());
    QVERIFY(a.controller()->addGroup(QStringLiteral("all"), QRectF(-50, -50, 1000, 400)).ok());
    a.scene()->selectNodes({"Number", "Scale"});
    a.copySelection();
    b.pasteClipboard();
    QCOMPARE(b.controller()->groups().size(), std::size_t(0));  // Sink, inside it, was not selected
    a.scene()->selectNodes({"Number", "Scale", "Sink"});
    a.copySelection();
    b.pasteClipboard();
    QCOMPARE(b.controller()->groups().size(), std::size_t(1));
    QCOMPARE(b.controller()->groups()[0].title, QStringLiteral("all"));
  }

  void copyPasteRoundTrip() {
    DocumentController c(registry_);
    buildChain(c);
    QVERIFY(c.setParam("Scale", "factor", 2.5).ok());
    const QString clip = c.copyJson({"Scale", "Sink"});
    auto parsed = gui::parseWorkflowJson(clip);
    QVERIFY(parsed.ok());
    QCOMPARE(parsed->nodes.size(), std::size_t(2));
    QVERIFY(parsed->nodes[0].inputs.empty());  // the link from Number (not copied) is dropped
    auto added = c.pasteJson(clip, {0, 400});
    QVERIFY(added.ok());
    QCOMPARE(added->size(), std::size_t(2));
    const engine::Node* scale2 = c.document().find_node(added->at(0));
    const engine::Node* sink2 = c.document().find_node(added->at(1));
    QVERIFY(scale2 && sink2);
    QCOMPARE(scale2->type, std::string("Scale"));
    QCOMPARE(scale2->params["factor"].get<double>(), 2.5);
    QCOMPARE(sink2->inputs.at("value").node, scale2->id);  // the internal link follows the new id
    QCOMPARE(c.nodePosition(scale2->id), QPointF(300, 400));
    // Through the system clipboard of a window, as between two windows.
    gui::MainWindow a(registry_, {tmp_.filePath("rec-a"), 3600000, false});
    gui::MainWindow b(registry_, {tmp_.filePath("rec-b"), 3600000, false});
    buildChain(*a.controller());
    a.scene()->selectNodes({"Number", "Scale"});
    a.copySelection();
    b.pasteClipboard();
    QCOMPARE(b.controller()->document().nodes().size(), std::size_t(2));
    QCOMPARE(b.controller()->document().find_node("Scale")->inputs.at("x").node, std::string("Number"));
  }

  void runReachesDoneAndPreviewGetsFrames() {
    DocumentController c(registry_);
    gui::RunController run(registry_);
    gui::GraphScene scene(&c);
    scene.setRunController(&run);
    buildChain(c);
    QVERIFY(c.addNode("GuiPreview", {600, 300}).ok());
    QVERIFY(c.connectPorts("Scale", "out", "GuiPreview", "x").ok());
    QSignalSpy finished(&run, &gui::RunController::runFinished);
    QSignalSpy previews(&run, &gui::RunController::previewReceived);
    QVERIFY(run.start(c.document()).ok());
    QVERIFY(run.isRunning());
    QVERIFY(!run.start(c.document()).ok());  // one run at a time
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(finished.at(0).at(0).toString(), QStringLiteral("succeeded"));
    for (const auto& n : c.document().nodes()) {
      QCOMPARE(QString::fromLatin1(gui::toString(run.nodeStatus(n.id).state)), QStringLiteral("done"));
      QCOMPARE(scene.nodeItem(n.id)->status().state, gui::NodeRunState::Done);
    }
    QCOMPARE(previews.count(), 1);
    const auto clip = previews.at(0).at(1).value<gui::PreviewClip>();
    QCOMPARE(clip.frames.size(), 4);
    QCOMPARE(clip.frames.front().size(), QSize(32, 16));
    QVERIFY(scene.nodeItem("GuiPreview")->hasThumbnail());
    gui::PreviewPlayer player;
    player.setClip("GuiPreview", clip);
    QCOMPARE(player.frameCount(), 4);
    player.setFrame(3);
    QCOMPARE(player.currentFrame(), 3);
    const QString error = player.exportTo(tmp_.filePath(QStringLiteral("frames")), QStringLiteral("png"));
    QVERIFY2(error.isEmpty(), qPrintable(error));
    // The file dialog asked, so its own earlier export is replaced; a folder or file it did not
    // write never is.
    QVERIFY(player.exportTo(tmp_.filePath(QStringLiteral("frames")), QStringLiteral("png")).isEmpty());
    QVERIFY(QDir(tmp_.path()).mkpath(QStringLiteral("album")));
    const QString victim = tmp_.filePath(QStringLiteral("album/precious.txt"));
    {
      QFile f(victim);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("precious");
    }
    QVERIFY(!player.exportTo(tmp_.filePath(QStringLiteral("album")), QStringLiteral("png")).isEmpty());
    QVERIFY(!player.exportTo(tmp_.filePath(QStringLiteral("album")), QStringLiteral("mp4")).isEmpty());
    QVERIFY(!player.exportTo(victim, QStringLiteral("mp4")).isEmpty());
    QFile kept(victim);
    QVERIFY(kept.open(QIODevice::ReadOnly));
    QCOMPARE(kept.readAll(), QByteArray("precious"));
    // A second run is served from the cache.
    finished.clear();
    QVERIFY(run.start(c.document()).ok());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(run.nodeStatus("Number").state, gui::NodeRunState::Cached);
  }

  void runToSelectedRunsOnlyAncestors() {
    DocumentController c(registry_);
    gui::RunController run(registry_);
    buildChain(c);
    QSignalSpy finished(&run, &gui::RunController::runFinished);
    QVERIFY(run.start(c.document(), {QStringLiteral("Scale")}).ok());
    QVERIFY(waitFinished(finished, 10000));
    QVERIFY(run.nodeStatus("Scale").state == gui::NodeRunState::Done || run.nodeStatus("Scale").state == gui::NodeRunState::Cached);
    QCOMPARE(run.nodeStatus("Sink").state, gui::NodeRunState::Idle);
  }

  void failureLandsOnTheNode() {
    DocumentController c(registry_);
    gui::RunController run(registry_);
    gui::GraphScene scene(&c);
    scene.setRunController(&run);
    QVERIFY(c.addNode("Fail", {0, 0}).ok());
    QVERIFY(c.setParam("Fail", "message", std::string("the disk is on fire")).ok());
    QSignalSpy finished(&run, &gui::RunController::runFinished);
    QVERIFY(run.start(c.document()).ok());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(finished.at(0).at(0).toString(), QStringLiteral("failed"));
    QCOMPARE(run.nodeStatus("Fail").state, gui::NodeRunState::Failed);
    QVERIFY(run.nodeStatus("Fail").message.contains("the disk is on fire"));
    QVERIFY(scene.nodeItem("Fail")->toolTip().contains("the disk is on fire"));
    // A validation error (missing required input) also lands on its node.
    QVERIFY(c.addNode("Scale", {0, 200}).ok());
    finished.clear();
    QVERIFY(run.start(c.document(), {QStringLiteral("Scale")}).ok());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(finished.at(0).at(0).toString(), QStringLiteral("invalid"));
    QCOMPARE(run.nodeStatus("Scale").state, gui::NodeRunState::Failed);
  }

  // A node that posts a loss per step (as Train Wan does) draws the Training panel's curve, which
  // opens by itself; a second run starts a new curve.
  void trainingStepsDrawTheLossCurve() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-loss"), 3600000, false});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* dock = window.findChild<QDockWidget*>(QStringLiteral("trainingDock"));
    QVERIFY(dock && !dock->isVisible());
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("Learn", {0, 0}).ok());
    QVERIFY(c->addNode("Sink", {200, 0}).ok());
    QVERIFY(c->connectPorts("Learn", "out", "Sink", "value").ok());
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    const gui::LossChart* chart = window.lossChart();
    QCOMPARE(chart->points().size(), 5);
    QCOMPARE(chart->points().front(), QPointF(1, 1.0));
    QCOMPARE(chart->points().back(), QPointF(5, 0.2));
    QVERIFY(dock->isVisible());
    QVERIFY2(chart->summary().contains(QLatin1String("step 5 of 5")) && chart->summary().contains(QLatin1String("loss 0.2000")),
             qPrintable(chart->summary()));
    QVERIFY(c->setParam("Learn", "steps", 3).ok());
    finished.clear();
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(chart->points().size(), 3);
  }

  // Distill Wan posts a generator and a critic loss per step: two curves, both in the summary; a
  // step of another node starts over.
  void distillationStepsDrawTwoCurves() {
    gui::LossChart chart;
    for (int step = 1; step <= 3; ++step) {
      chart.addStep(QStringLiteral("distill"), step, 3,
                    {{QStringLiteral("generator_loss"), 1.0 / step}, {QStringLiteral("critic_loss"), 2.0 / step},
                     {QStringLiteral("dmd_grad_norm"), 7.0}});
    }
    QCOMPARE(chart.points(QStringLiteral("generator_loss")).size(), 3);
    QCOMPARE(chart.points(QStringLiteral("critic_loss")).back(), QPointF(3, 2.0 / 3));
    QVERIFY(chart.points().isEmpty());
    QVERIFY2(chart.summary().contains(QLatin1String("generator 0.3333")) &&
                 chart.summary().contains(QLatin1String("critic 0.6667")),
             qPrintable(chart.summary()));
    chart.addStep(QStringLiteral("train"), 1, 2, {{QStringLiteral("loss"), 0.5}});
    QVERIFY(chart.points(QStringLiteral("generator_loss")).isEmpty());
    QCOMPARE(chart.points().size(), 1);
  }

  void cancelFromGui() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-cancel"), 3600000, false});
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("Slow", {0, 0}).ok());
    QVERIFY(c->setParam("Slow", "steps", 2000).ok());
    QVERIFY(c->setParam("Slow", "step_ms", 5).ok());
    gui::RunController* run = window.runController();
    QSignalSpy finished(run, &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QTRY_VERIFY_WITH_TIMEOUT(run->nodeStatus("Slow").state == gui::NodeRunState::Running && run->nodeStatus("Slow").value > 0, 5000);
    QElapsedTimer t;
    t.start();
    window.cancelRun();
    QVERIFY(waitFinished(finished, 5000));
    QVERIFY(t.elapsed() < 3000);
    QCOMPARE(finished.at(0).at(0).toString(), QStringLiteral("cancelled"));
    QCOMPARE(run->nodeStatus("Slow").state, gui::NodeRunState::Cancelled);
    QVERIFY(!run->isRunning());
  }

  // The Run toolbar holds the Run menu's actions and the run state. Run during a run queues (the
  // label counts it; the queued run keeps the document as it was then); each queued run starts when
  // the previous one ends; Cancel stops only the current one; Clear Queue drops the waiting ones.
  void toolbarQueuesRuns() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-queue"), 3600000, false});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("Slow", {0, 0}).ok());
    QVERIFY(c->setParam("Slow", "steps", 2000).ok());
    QVERIFY(c->setParam("Slow", "step_ms", 5).ok());
    auto* bar = window.findChild<QToolBar*>(QStringLiteral("runToolBar"));
    auto* label = window.findChild<QLabel*>(QStringLiteral("runStateLabel"));
    QVERIFY(bar && label);
    QCOMPARE(label->text(), QStringLiteral("Idle"));
    auto button = [&](const QString& text) -> QToolButton* {
      for (QAction* a : bar->actions()) {
        if (a->text() == text) return qobject_cast<QToolButton*>(bar->widgetForAction(a));
      }
      return nullptr;
    };
    QToolButton* runButton = button(QStringLiteral("&Run"));
    QToolButton* cancelButton = button(QStringLiteral("&Cancel"));
    QVERIFY(runButton && cancelButton && button(QStringLiteral("Run to &Selected")));
    QVERIFY(!cancelButton->isEnabled());
    gui::RunController* run = window.runController();
    QSignalSpy finished(run, &gui::RunController::runFinished);
    QTest::mouseClick(runButton, Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(run->nodeStatus("Slow").state == gui::NodeRunState::Running && run->nodeStatus("Slow").value > 0, 5000);
    QTRY_VERIFY(label->text().startsWith(QLatin1String("Running Slow (")));
    QVERIFY(cancelButton->isEnabled());
    QVERIFY(c->setParam("Slow", "steps", 3).ok());  // the queued runs are quick
    QTest::mouseClick(runButton, Qt::LeftButton);
    QTest::mouseClick(runButton, Qt::LeftButton);
    QCOMPARE(run->queuedCount(), 2);
    QVERIFY2(label->text().endsWith(QStringLiteral("· 2 queued")), qPrintable(label->text()));
    QTest::mouseClick(cancelButton, Qt::LeftButton);
    QTRY_COMPARE_WITH_TIMEOUT(finished.count(), 3, 10000);
    QCOMPARE(finished.at(0).at(0).toString(), QStringLiteral("cancelled"));
    QCOMPARE(finished.at(1).at(0).toString(), QStringLiteral("succeeded"));
    QCOMPARE(finished.at(2).at(0).toString(), QStringLiteral("succeeded"));
    QCOMPARE(run->queuedCount(), 0);
    QTRY_COMPARE(label->text(), QStringLiteral("Idle"));
    // Clear Queue drops the waiting run; cancelling the current one then leaves nothing to run.
    QVERIFY(c->setParam("Slow", "steps", 2000).ok());
    finished.clear();
    QVERIFY(window.runWorkflow());
    QVERIFY(window.runWorkflow());
    QCOMPARE(run->queuedCount(), 1);
    QAction* clear = gui_test::findAction(window, QStringLiteral("Clear &Queue"));
    QVERIFY(clear && clear->isEnabled());
    clear->trigger();
    QCOMPARE(run->queuedCount(), 0);
    window.cancelRun();
    QVERIFY(waitFinished(finished, 5000));
    QTest::qWait(200);
    QCOMPARE(finished.count(), 1);
    QVERIFY(!run->isRunning());
  }

  void runDemoWorkflow() {
#ifndef VIDGRAPH_GUI_HAVE_NODES
    QSKIP("built without the built-in nodes (VIDGRAPH_GUI_NODES=OFF or app/nodes absent)");
#else
    const QString demo = QStringLiteral(VIDGRAPH_BINARY_DIR "/share/vidgraph/workflows/demo.vgflow");
    if (!QFile::exists(QStringLiteral(VIDGRAPH_BINARY_DIR "/share/vidgraph/models/wan22-tiny/spiece.model"))) {
      QSKIP("the tiny demo model was not generated (libsentencepiece_train missing)");
    }
    QVERIFY2(QFile::exists(demo), qPrintable(demo + " is not staged"));
    gui::MainWindow window(registry_, {tmp_.filePath("rec-demo"), 3600000, false});
    QVERIFY(window.openFile(demo));
    QVERIFY(window.controller()->setParam("sampler", "steps", 2).ok());  // keep it quick on CPU
    QTemporaryDir out;
    engine::RunOptions options;
    options.output_dir = out.path().toStdString();
    options.workflow_dir = QFileInfo(demo).absolutePath().toStdString();
    options.overwrite = true;
    gui::RunController* run = window.runController();
    QSignalSpy finished(run, &gui::RunController::runFinished);
    QSignalSpy previews(run, &gui::RunController::previewReceived);
    // The sampler's live previews: one per step, each on the node while the sampler still runs. The
    // first one is also the mid-run screenshot (progress, the preview on the node, the toolbar).
    showForScreenshot(window);
    window.scene()->selectNodes({"sampler"});
    int samplerPreviews = 0, shownWhileRunning = 0;
    QImage midRun;
    connect(run, &gui::RunController::previewReceived, this, [&](const QString& id, const gui::PreviewClip& clip) {
      if (id != QStringLiteral("sampler")) return;
      ++samplerPreviews;
      const bool running = run->nodeStatus("sampler").state == gui::NodeRunState::Running;
      if (running && !clip.empty() && window.scene()->nodeItem("sampler")->hasThumbnail()) {
        ++shownWhileRunning;
        if (midRun.isNull()) midRun = window.grab().toImage();
      }
    });
    QVERIFY(run->start(window.controller()->document(), {}, options).ok());
    QVERIFY(waitFinished(finished, 540000));
    QVERIFY2(finished.at(0).at(0).toString() == QStringLiteral("succeeded"), qPrintable(finished.at(0).at(1).toString()));
    QCOMPARE(samplerPreviews, 2);
    QCOMPARE(shownWhileRunning, 2);
    saveImage(midRun, window, kMidRunScreenshot);
    QVERIFY(window.scene()->nodeItem("sampler")->hasThumbnail());
    for (const auto& n : window.controller()->document().nodes()) {
      QVERIFY2(run->nodeStatus(n.id).state == gui::NodeRunState::Done, n.id.c_str());
    }
    QVERIFY(previews.count() >= 1);
    QVERIFY(window.player()->frameCount() > 1);  // the player got the clip
    window.player()->play();
    QTRY_VERIFY(window.player()->currentFrame() > 0);
    window.player()->pause();
    window.scene()->selectNodes({"sampler"});
    saveScreenshot(window);
    screenshotOfRun_ = true;
#endif  // VIDGRAPH_GUI_HAVE_NODES
  }

  void paletteSearchesAndFilters_data() {
    QTest::addColumn<QString>("query");
    QTest::addColumn<QString>("wireType");  // "" = no filter
    QTest::addColumn<bool>("fromOutput");
    QTest::addColumn<QString>("mustContain");
    QTest::addColumn<QString>("mustNotContain");
    QTest::newRow("by name") << "scale" << "" << true << "Scale" << "Number";
    QTest::newRow("by description") << "cancellable" << "" << true << "Slow" << "Scale";
    QTest::newRow("by category") << "test" << "" << true << "Number" << "";
    QTest::newRow("number output wants an input") << "" << "NUMBER" << true << "Scale" << "Number";
    QTest::newRow("blob input wants an output") << "" << "BLOB" << false << "Blob" << "Scale";
  }

  void paletteSearchesAndFilters() {
    QFETCH(QString, query);
    QFETCH(QString, wireType);
    QFETCH(bool, fromOutput);
    QFETCH(QString, mustContain);
    QFETCH(QString, mustNotContain);
    std::optional<gui::PortFilter> filter;
    if (!wireType.isEmpty()) filter = gui::PortFilter{wireType, fromOutput};
    QStringList names;
    for (const auto& e : gui::paletteEntries(registry_, query, filter)) names << QString::fromStdString(e.type->name);
    QVERIFY2(names.contains(mustContain), qPrintable(names.join(',')));
    if (!mustNotContain.isEmpty()) QVERIFY2(!names.contains(mustNotContain), qPrintable(names.join(',')));
  }

  void paletteAddsLinkedNode() {
    DocumentController c(registry_);
    QVERIFY(c.addNode("Number", {0, 0}).ok());
    const int steps = c.undoStack()->count();
    auto id = c.addNode("Scale", {300, 0}, gui::PendingLink{"Number", "value", true, "x"});
    QVERIFY(id.ok());
    QCOMPARE(c.document().find_node(*id)->inputs.at("x").node, std::string("Number"));
    QCOMPARE(c.undoStack()->count(), steps + 1);  // node + link: one step
    c.undoStack()->undo();
    QVERIFY(!c.document().find_node(*id));
  }

  void inspectorEditsAreUndoable() {
    DocumentController c(registry_);
    buildChain(c);
    gui::InspectorPanel inspector(&c);
    inspector.setNode("Scale");
    auto* spin = inspector.editor("factor")->findChild<QDoubleSpinBox*>();
    auto* slider = inspector.editor("factor")->findChild<QSlider*>();
    QVERIFY(spin && slider);  // bounded range: spin box and slider
    const int steps = c.undoStack()->count();
    for (int v : {600, 650, 700}) slider->setValue(v);  // a drag
    QCOMPARE(c.undoStack()->count(), steps + 1);
    QCOMPARE(c.document().find_node("Scale")->params["factor"].get<double>(), 40.0);  // -100 + 200 * 0.7
    c.undoStack()->undo();
    QCOMPARE(spin->value(), 2.0);  // the editor follows the document
    inspector.setNode("Number");
    QVERIFY(!inspector.editor("factor"));
    QVERIFY(inspector.editor("value"));
  }

#ifdef VIDGRAPH_GUI_HAVE_NODES
  // A safetensors file of F16 tensors, their data a hole: what the drop-downs read is the header.
  static void writeTensors(const QString& path, const QList<QPair<QString, QList<qint64>>>& tensors) {
    qint64 bytes = 0;
    QStringList entries;
    for (const auto& [key, shape] : tensors) {
      qint64 n = 2;
      QStringList dims;
      for (qint64 d : shape) {
        n *= d;
        dims << QString::number(d);
      }
      entries << QStringLiteral("\"%1\":{\"dtype\":\"F16\",\"shape\":[%2],\"data_offsets\":[%3,%4]}")
                     .arg(key, dims.join(','))
                     .arg(bytes)
                     .arg(bytes + n);
      bytes += n;
    }
    QByteArray header = ("{" + entries.join(',') + "}").toUtf8();
    while (header.size() % 8 != 0) header.append(' ');
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const quint64 size = quint64(header.size());
    for (int i = 0; i < 8; ++i) f.putChar(char((size >> (8 * i)) & 0xff));
    f.write(header);
    QVERIFY(f.resize(8 + header.size() + bytes));
  }

  // Load Wan Model's file params offer the files of the ComfyUI folder model_path names, grouped
  // under what each holds (read from its header), listed again when the drop-down opens, and follow
  // model_path when it changes; other file params keep the plain line.
  void modelFileDropDown() {
    const QString models = tmp_.filePath("dropdown/ComfyUI/models");
    QVERIFY(QDir().mkpath(models + "/vae"));
    QVERIFY(QDir().mkpath(models + "/diffusion_models"));
    writeTensors(models + "/vae/wan2.2_vae.safetensors", {{"decoder.conv1.weight", {384, 48, 3, 3, 3}}});
    writeTensors(models + "/vae/wan_2.1_vae.safetensors", {{"decoder.conv1.weight", {384, 16, 3, 3, 3}}});
    QFile empty(models + "/diffusion_models/wan2.2_ti2v_5B_fp16.safetensors");
    QVERIFY(empty.open(QIODevice::WriteOnly));
    empty.close();
    DocumentController c(registry_);
    auto id = c.addNode("LoadWanModel", {0, 0});
    QVERIFY(id.ok());
    QVERIFY(c.setParam(*id, "model_path", models.toStdString()).ok());
    gui::InspectorPanel inspector(&c);
    inspector.setNode(*id);
    auto* vae = inspector.editor("vae")->findChild<QComboBox*>();
    QVERIFY(vae && vae->isEditable());
    // Each file under its group's title, titles that cannot be chosen; the Wan2.1 VAE's group first.
    QCOMPARE(vae->count(), 4);
    QCOMPARE(vae->itemText(0), QStringLiteral("Wan2.1 VAE (Wan2.2-A14B, Wan2.1)"));
    QVERIFY(vae->itemData(0, gui::kGroupTitleRole).toBool());
    QVERIFY(!(vae->model()->flags(vae->model()->index(0, 0)) & Qt::ItemIsSelectable));
    QCOMPARE(vae->itemText(1), models + "/vae/wan_2.1_vae.safetensors");
    QCOMPARE(vae->itemText(2), QStringLiteral("Wan2.2 VAE (TI2V-5B)"));
    QCOMPARE(vae->itemText(3), models + "/vae/wan2.2_vae.safetensors");
    QVERIFY(!vae->itemData(3, gui::kGroupTitleRole).toBool());
    auto* dit = inspector.editor("dit")->findChild<QComboBox*>();
    QCOMPARE(dit->count(), 2);
    QCOMPARE(dit->itemText(0), QStringLiteral("Unreadable"));  // an empty file: listed, under its own title
    QVERIFY(!inspector.editor("tokenizer")->findChild<QComboBox*>());  // no folder kind: a line
    QVERIFY(inspector.editor("vae")->findChild<QToolButton*>());      // browse kept
    vae->setCurrentIndex(1);
    Q_EMIT vae->activated(1);
    QCOMPARE(c.document().find_node(*id)->params["vae"].get<std::string>(),
             (models + "/vae/wan_2.1_vae.safetensors").toStdString());
    // A file added to the folder meanwhile is listed when the drop-down opens again; the value stays.
    QFile added(models + "/vae/wan2.1_vae_fp8.safetensors");
    QVERIFY(added.open(QIODevice::WriteOnly));
    added.close();
    vae->showPopup();
    QCOMPARE(vae->count(), 6);  // and its title: an empty file is unreadable
    QCOMPARE(vae->currentText(), models + "/vae/wan_2.1_vae.safetensors");
    vae->hidePopup();
    QVERIFY(added.remove());
    QVERIFY(c.setParam(*id, "model_path", tmp_.filePath("dropdown").toStdString()).ok());  // no models folder
    QCoreApplication::processEvents();
    QVERIFY(!inspector.editor("vae")->findChild<QComboBox*>());
    // The runs' default extra_model_paths.yaml (main passes VIDGRAPH_MODEL_PATHS in the run defaults)
    // lists the files for a node that names no folder.
    const QString yaml = tmp_.filePath("dropdown/extra_model_paths.yaml");
    QFile y(yaml);
    QVERIFY(y.open(QIODevice::WriteOnly));
    y.write(("comfyui:\n  base_path: " + models + "\n  vae: vae\n  vae_approx: vae_approx\n").toUtf8());
    y.close();
    auto plain = c.addNode("LoadWanModel", {0, 200});
    QVERIFY(plain.ok());
    vidgraph::engine::RunOptions defaults;
    defaults.model_paths_file = yaml.toStdString();
    gui::InspectorPanel withDefaults(&c, defaults);
    withDefaults.setNode(*plain);
    auto* listed = withDefaults.editor("vae")->findChild<QComboBox*>();
    QVERIFY(listed);
    QCOMPARE(listed->count(), 4);
    QCOMPARE(listed->itemText(3), models + "/vae/wan2.2_vae.safetensors");
    // Light VAE Decode's path lists ComfyUI's vae_approx folder: the TAEHV decoder by its layout.
    QVERIFY(QDir().mkpath(models + "/vae_approx"));
    writeTensors(models + "/vae_approx/taew2_2.safetensors",
                 {{"decoder.1.weight", {256, 48, 3, 3}}, {"decoder.22.weight", {48, 64, 3, 3}}});
    auto light = c.addNode("LightVAEDecode", {0, 400});
    QVERIFY(light.ok());
    withDefaults.setNode(*light);
    auto* taehv = withDefaults.editor("path")->findChild<QComboBox*>();
    QVERIFY(taehv);
    QCOMPARE(taehv->count(), 2);
    QCOMPARE(taehv->itemText(0), QStringLiteral("TAEHV light decoder"));
    QCOMPARE(taehv->itemText(1), models + "/vae_approx/taew2_2.safetensors");
  }
#endif  // VIDGRAPH_GUI_HAVE_NODES

  void canvasMouseDragMovesAndConnects() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-mouse"), 3600000, false});
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("Number", {0, 0}).ok());
    QVERIFY(c->addNode("Scale", {400, 0}).ok());
    window.resize(1200, 800);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    gui::GraphView* view = window.view();
    view->setZoom(1.0, QPointF(0, 0));
    view->centerOn(QPointF(300, 60));
    QWidget* vp = view->viewport();
    // Drag the wire from Number.value to Scale.x.
    const QPoint out = view->mapFromScene(window.scene()->nodeItem("Number")->portScenePos("value", true));
    const QPoint in = view->mapFromScene(window.scene()->nodeItem("Scale")->portScenePos("x", false));
    gui_test::dragMouse(vp, out, in);
    QVERIFY(c->document().find_node("Scale")->inputs.count("x"));
    // Drag Scale by its title: one undo step.
    const int steps = c->undoStack()->count();
    const QPoint title = view->mapFromScene(QPointF(460, 10));
    gui_test::dragMouse(vp, title, title + QPoint(60, 80));
    QCOMPARE(c->undoStack()->count(), steps + 1);
    QCOMPARE(c->nodePosition("Scale"), QPointF(460, 80));
    c->undoStack()->undo();
    QCOMPARE(window.scene()->nodeItem("Scale")->pos(), QPointF(400, 0));
  }

  // Dragging a node's bottom-right corner resizes it (one undo step per drag); the size is editor
  // layout ("size": [w, h]), saved and restored on open; ports and wires follow the new width; the
  // height never cuts the content. The file's nodes are the same with or without the size, and a
  // file without one opens at the default size and saves back byte for byte.
  void nodeResizeByItsCorner() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-resize"), 3600000, false});
    DocumentController* c = window.controller();
    buildChain(*c);
    const std::string unsized = saved(c->document());
    gui_test::showWindow(window, {1200, 800});
    gui::GraphView* view = window.view();
    view->setZoom(1.0, QPointF(0, 0));
    view->centerOn(QPointF(400, 60));
    gui::NodeItem* scale = window.scene()->nodeItem("Scale");
    const QSizeF before = scale->size();
    const QPoint corner = view->mapFromScene(scale->mapToScene(QPointF(before.width() - 3, before.height() - 3)));
    const int steps = c->undoStack()->count();
    gui_test::dragMouse(view->viewport(), corner, corner + QPoint(90, 70));
    QCOMPARE(c->undoStack()->count(), steps + 1);
    QCOMPARE(c->nodePosition("Scale"), QPointF(300, 0));  // resized, not moved
    const QSizeF grown = scale->size();
    QCOMPARE(grown, before + QSizeF(90, 70));
    QCOMPARE(c->nodeSize("Scale"), std::optional<QSizeF>(grown));
    QCOMPARE(scale->portScenePos(QStringLiteral("out"), true).x(), 300 + grown.width());
    gui::ConnectionItem* wire = window.scene()->connectionItem("Sink", QStringLiteral("value"));
    QVERIFY(QLineF(wire->mapToScene(wire->path().pointAtPercent(0.0)), scale->portScenePos(QStringLiteral("out"), true)).length() < 1.0);
    // Too small: the width stops at the minimum, the height at the content.
    const QPoint grownCorner = view->mapFromScene(scale->mapToScene(QPointF(grown.width() - 3, grown.height() - 3)));
    gui_test::dragMouse(view->viewport(), grownCorner, view->mapFromScene(scale->mapToScene(QPointF(10, 10))));
    QCOMPARE(scale->size(), QSizeF(gui::NodeItem::kMinWidth, before.height()));
    QCOMPARE(c->undoStack()->count(), steps + 2);
    c->undoStack()->undo();
    QCOMPARE(scale->size(), grown);
    // Saved, reopened: the size is back; only the editor layout differs from the unsized file.
    const QString path = tmp_.filePath(QStringLiteral("resized.vgflow"));
    QVERIFY(window.saveTo(path));
    gui::MainWindow reopened(registry_, {tmp_.filePath("rec-resize-2"), 3600000, false});
    QVERIFY(reopened.openFile(path));
    QCOMPARE(reopened.scene()->nodeItem("Scale")->size(), grown);
    QCOMPARE(reopened.scene()->nodeItem("Number")->size(), before);
    auto sized = engine::load_workflow_file(path.toStdString());
    auto plain = engine::load_workflow_string(unsized);
    QVERIFY(sized.ok() && plain.ok());
    QCOMPARE(engine::workflow_to_json(sized->document)["nodes"], engine::workflow_to_json(plain->document)["nodes"]);
    QVERIFY(engine::workflow_to_json(sized->document)["editor"]["nodes"]["Scale"].contains("size"));
    DocumentController old(registry_);
    QVERIFY(old.loadText(QString::fromStdString(unsized), {}, QStringLiteral("unsized")).ok());
    QVERIFY(!old.nodeSize("Scale"));
    QCOMPARE(saved(old.document()), unsized);
    c->undoStack()->undo();
    QCOMPARE(scale->size(), before);
    QVERIFY(!c->nodeSize("Scale"));
  }

  // Ctrl+G puts a titled group around the selection; the group's menu (a right click inside it)
  // renames it (its dialog answered) and deletes it keeping its nodes; dragging its title bar moves
  // it with the nodes inside it, not the others. Each is one undo step; the group is saved in the
  // editor layout and comes back on open, and the file's nodes are the same as without it.
  void groupsAroundTheSelection() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-groups"), 3600000, false});
    DocumentController* c = window.controller();
    buildChain(*c);
    QVERIFY(c->addNode("Number", {0, 400}).ok());
    const std::string ungrouped = saved(c->document());
    gui_test::showWindow(window, {1200, 800});
    gui::GraphView* view = window.view();
    view->setZoom(1.0, QPointF(0, 0));
    view->centerOn(QPointF(400, 150));
    window.scene()->selectNodes({"Number", "Scale"});
    const int steps = c->undoStack()->count();
    QTest::keyClick(&window, Qt::Key_G, Qt::ControlModifier);
    QCOMPARE(c->groups().size(), std::size_t(1));
    QCOMPARE(c->undoStack()->count(), steps + 1);
    QCOMPARE(window.scene()->groupItems().size(), std::size_t(1));
    gui::GroupItem* group = window.scene()->groupItems().front();
    QCOMPARE(window.scene()->nodesInGroup(group), std::vector<std::string>({"Number", "Scale"}));
    const QRectF rect = c->groups().front().rect;
    QTest::keyClick(&window, Qt::Key_0, Qt::ControlModifier);  // Fit keeps the group's title in view
    QVERIFY(view->mapToScene(view->viewport()->rect()).boundingRect().contains(rect));
    view->setZoom(1.0, QPointF(0, 0));
    view->centerOn(QPointF(400, 150));
    // Rename through the group menu.
    auto groupMenuAction = [&](const QString& text) -> QAction* {
      const QPointF onTitle = window.scene()->groupItems().front()->sceneRect().topLeft() + QPointF(40, 10);
      QMenu* menu = window.contextMenuAt(view->mapFromScene(onTitle));
      menu->deleteLater();
      return gui_test::findAction(*menu, text);
    };
    {
      gui_test::DialogAnswerer answerer({});
      answerer.answerText(QStringLiteral("Inputs"));
      QAction* rename = groupMenuAction(QStringLiteral("&Rename Group…"));
      QVERIFY(rename);
      rename->trigger();
      QCOMPARE(answerer.seen().size(), 1);
      QCOMPARE(answerer.seen().front().text, QStringLiteral("Group"));
    }
    QCOMPARE(c->groups().front().title, QStringLiteral("Inputs"));
    QCOMPARE(window.scene()->groupItems().front()->title(), QStringLiteral("Inputs"));
    // Drag by the title bar: the group and its two nodes move, Sink and Number_2 stay.
    const QPoint title = view->mapFromScene(rect.topLeft() + QPointF(60, 12));
    gui_test::dragMouse(view->viewport(), title, title + QPoint(100, 50));
    QCOMPARE(c->undoStack()->count(), steps + 3);
    QCOMPARE(c->groups().front().rect, rect.translated(100, 50));
    QCOMPARE(c->nodePosition("Number"), QPointF(100, 50));
    QCOMPARE(c->nodePosition("Scale"), QPointF(400, 50));
    QCOMPARE(c->nodePosition("Sink"), QPointF(600, 0));
    QCOMPARE(c->nodePosition("Number_2"), QPointF(0, 400));
    QCOMPARE(window.scene()->nodeItem("Scale")->pos(), QPointF(400, 50));
    c->undoStack()->undo();
    QCOMPARE(c->groups().front().rect, rect);
    QCOMPARE(window.scene()->nodeItem("Scale")->pos(), QPointF(300, 0));
    c->undoStack()->redo();
    // Saved and reopened: the group is back; the nodes are those of the file without it.
    const QString path = tmp_.filePath(QStringLiteral("grouped.vgflow"));
    QVERIFY(window.saveTo(path));
    gui::MainWindow reopened(registry_, {tmp_.filePath("rec-groups-2"), 3600000, false});
    QVERIFY(reopened.openFile(path));
    QCOMPARE(reopened.scene()->groupItems().size(), std::size_t(1));
    QCOMPARE(reopened.scene()->groupItems().front()->title(), QStringLiteral("Inputs"));
    QCOMPARE(reopened.scene()->groupItems().front()->sceneRect(), rect.translated(100, 50));
    auto grouped = engine::load_workflow_file(path.toStdString());
    QVERIFY(grouped.ok());
    QCOMPARE(engine::workflow_to_json(grouped->document)["nodes"], json::parse(ungrouped)["nodes"]);
    DocumentController plain(registry_);
    QVERIFY(plain.loadText(QString::fromStdString(ungrouped), {}, QStringLiteral("ungrouped")).ok());
    QVERIFY(plain.groups().empty());
    QCOMPARE(saved(plain.document()), ungrouped);
    // Delete the group: the nodes stay.
    QAction* remove = groupMenuAction(QStringLiteral("Delete &Group (Keep Nodes)"));
    QVERIFY(remove);
    remove->trigger();
    QVERIFY(c->groups().empty());
    QVERIFY(window.scene()->groupItems().empty());
    QCOMPARE(c->document().nodes().size(), std::size_t(4));
    c->undoStack()->undo();
    QCOMPARE(c->groups().size(), std::size_t(1));
  }

  // A wire's menu adds a reroute point where it was clicked; the dot drags (the wire bends through
  // it) and its own menu deletes it, each one undo step. Saved as editor layout and restored; runs
  // ignore it (the nodes in the file are those without it), and a link made again from another
  // output starts straight.
  void reroutePointsOnAWire() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-reroute"), 3600000, false});
    DocumentController* c = window.controller();
    buildChain(*c);
    QVERIFY(c->addNode("Number", {0, 300}).ok());
    const std::string straight = saved(c->document());
    gui_test::showWindow(window, {1200, 800});
    gui::GraphView* view = window.view();
    view->setZoom(1.0, QPointF(0, 0));
    view->centerOn(QPointF(400, 150));
    gui::ConnectionItem* wire = window.scene()->connectionItem("Scale", QStringLiteral("x"));
    const QPointF middle = wire->mapToScene(wire->path().pointAtPercent(0.5));
    const int steps = c->undoStack()->count();
    std::unique_ptr<QMenu> menu(window.contextMenuAt(view->mapFromScene(middle)));
    QAction* add = gui_test::findAction(*menu, QStringLiteral("Add &Reroute Point"));
    QVERIFY(add);
    add->trigger();
    QCOMPARE(c->reroutePoints("Scale", "x").size(), 1);
    QVERIFY(QLineF(c->reroutePoints("Scale", "x").front(), middle).length() < 4.0);
    QCOMPARE(c->undoStack()->count(), steps + 1);
    // Drag the dot down: the wire now passes through it.
    const QPoint dot = view->mapFromScene(c->reroutePoints("Scale", "x").front());
    gui_test::dragMouse(view->viewport(), dot, dot + QPoint(0, 150));
    QCOMPARE(c->undoStack()->count(), steps + 2);
    const QPointF bent = c->reroutePoints("Scale", "x").front();
    QVERIFY(QLineF(bent, view->mapToScene(dot + QPoint(0, 150))).length() < 1.0);
    QCOMPARE(wire->reroutePoints(), QVector<QPointF>({bent}));
    qreal nearest = 1e9;
    for (int i = 0; i <= 100; ++i) nearest = std::min(nearest, QLineF(wire->path().pointAtPercent(i / 100.0), bent).length());
    QVERIFY2(nearest < 1.0, "the wire does not pass through its reroute point");
    // Saved and reopened: the point is back; the file's nodes are those of the straight file.
    const QString path = tmp_.filePath(QStringLiteral("rerouted.vgflow"));
    QVERIFY(window.saveTo(path));
    gui::MainWindow reopened(registry_, {tmp_.filePath("rec-reroute-2"), 3600000, false});
    QVERIFY(reopened.openFile(path));
    QCOMPARE(reopened.scene()->connectionItem("Scale", QStringLiteral("x"))->reroutePoints(), QVector<QPointF>({bent}));
    auto rerouted = engine::load_workflow_file(path.toStdString());
    QVERIFY(rerouted.ok());
    QCOMPARE(engine::workflow_to_json(rerouted->document)["nodes"], json::parse(straight)["nodes"]);
    QVERIFY(engine::validate_document(rerouted->document, registry_).ok());
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(finished.front().front().toString(), QStringLiteral("succeeded"));
    DocumentController plain(registry_);
    QVERIFY(plain.loadText(QString::fromStdString(straight), {}, QStringLiteral("straight")).ok());
    QVERIFY(plain.reroutePoints("Scale", "x").isEmpty());
    QCOMPARE(saved(plain.document()), straight);
    // The same input linked from another output starts straight; undo brings the route back.
    QVERIFY(c->connectPorts("Number_2", "value", "Scale", "x").ok());
    QVERIFY(window.scene()->connectionItem("Scale", QStringLiteral("x"))->reroutePoints().isEmpty());
    c->undoStack()->undo();
    wire = window.scene()->connectionItem("Scale", QStringLiteral("x"));
    QCOMPARE(wire->reroutePoints(), QVector<QPointF>({bent}));
    // Its points follow a rename of either end, and go with a removed node (undo brings them back).
    QVERIFY(c->renameNode("Scale", "times").ok());
    QCOMPARE(c->reroutePoints("times", "x"), QVector<QPointF>({bent}));
    c->undoStack()->undo();
    QVERIFY(c->removeNodes({"Number"}).ok());
    QVERIFY(!c->document().editor().contains("reroutes"));
    c->undoStack()->undo();
    QCOMPARE(c->reroutePoints("Scale", "x"), QVector<QPointF>({bent}));
    wire = window.scene()->connectionItem("Scale", QStringLiteral("x"));
    // The dot's own menu deletes it.
    menu.reset(window.contextMenuAt(view->mapFromScene(bent)));
    QAction* remove = gui_test::findAction(*menu, QStringLiteral("Delete &Reroute Point"));
    QVERIFY(remove);
    remove->trigger();
    QVERIFY(c->reroutePoints("Scale", "x").isEmpty());
    QVERIFY(wire->reroutePoints().isEmpty());
    QVERIFY(wire->childItems().isEmpty());
  }

  // View ▸ Minimap (remembered) shows the whole graph in the canvas's bottom-right corner; a node
  // far out of view is drawn in it, and a click on it centres the view there.
  void minimapOverviewNavigates() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-minimap"), 3600000, false});
    DocumentController* c = window.controller();
    buildChain(*c);
    QVERIFY(c->addNode("Number", {3000, 1500}).ok());
    gui_test::showWindow(window, {1024, 700});
    gui::GraphView* view = window.view();
    view->setZoom(1.0, QPointF(0, 0));
    view->centerOn(QPointF(300, 60));
    gui::Minimap* minimap = view->minimap();
    QVERIFY(!minimap->isVisible());
    QAction* toggle = gui_test::findAction(window, QStringLiteral("&Minimap"));
    QVERIFY(toggle && toggle->isCheckable());
    toggle->trigger();
    QVERIFY(minimap->isVisible());
    QVERIFY(QSettings().value(QStringLiteral("view/minimap")).toBool());
    QVERIFY(view->viewport()->geometry().contains(minimap->geometry()));
    QVERIFY(minimap->geometry().right() > view->viewport()->geometry().center().x());
    const QRectF far = window.scene()->nodeItem("Number_2")->sceneBoundingRect();
    QVERIFY(!view->mapToScene(view->viewport()->rect()).boundingRect().intersects(far));
    const QPointF onMap = minimap->toMinimap(far.center());
    const QImage shot = minimap->grab().toImage();
    int nodePixels = 0;
    for (int y = int(onMap.y()) - 3; y <= int(onMap.y()) + 3; ++y) {
      for (int x = int(onMap.x()) - 3; x <= int(onMap.x()) + 3; ++x) {
        nodePixels += shot.pixelColor(x, y) == QColor(0xa8, 0xab, 0xb3) ? 1 : 0;
      }
    }
    QVERIFY2(nodePixels > 4, "the far node is not drawn on the minimap");
    QTest::mouseClick(minimap, Qt::LeftButton, Qt::NoModifier, onMap.toPoint());
    const QPointF centre = view->mapToScene(view->viewport()->rect().center());
    QVERIFY2(QLineF(centre, far.center()).length() < 40, qPrintable(QStringLiteral("view centred at %1,%2").arg(centre.x()).arg(centre.y())));
    toggle->trigger();
    QVERIFY(!minimap->isVisible());
    QVERIFY(!QSettings().value(QStringLiteral("view/minimap")).toBool());
  }

  void wireDroppedOnCanvasOpensFilteredPalette() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-palette"), 3600000, false});
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("Number", {0, 0}).ok());
    window.resize(1000, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto hit = window.scene()->portAt(window.scene()->nodeItem("Number")->portScenePos("value", true));
    QVERIFY(hit);
    QVERIFY(window.scene()->dropWire(*hit, QPointF(500, 300)).ok());
    gui::NodePalette* palette = window.palette();
    QVERIFY(palette->isVisible());
    const int compatible = palette->visibleCount();
    QVERIFY(compatible > 0);
    QVERIFY(compatible < int(registry_.size()));  // filtered: e.g. Number and Blob have no NUMBER input
    palette->setQuery(QStringLiteral("scale"));
    QCOMPARE(palette->visibleCount(), 1);
    palette->chooseCurrent();
    QVERIFY(!palette->isVisible());
    const engine::Node* scale = c->document().find_node("Scale");
    QVERIFY(scale);
    QCOMPARE(scale->inputs.at("x").node, std::string("Number"));
    QCOMPARE(c->nodePosition("Scale"), QPointF(500, 300));
    QCOMPARE(window.scene()->selectedNodeIds(), std::vector<std::string>{"Scale"});
    QCOMPARE(window.inspector()->nodeId(), std::string("Scale"));
  }

  void upgradeNodeTypesIsOneUndoStep() {
    DocumentController c(registry_);
    const QString old = QStringLiteral(
        "{\"format\": \"vidgraph-workflow\", \"version\": 1, \"nodes\": ["
        "{\"id\": \"v\", \"type\": \"Versioned\", \"type_version\": 1, \"params\": {\"amount\": 3}}]}");
    QVERIFY(c.loadText(old, {}, QStringLiteral("<test>")).ok());
    const std::string before = saved(c.document());
    auto ids = c.upgradeNodeTypes();
    QVERIFY(ids.ok());
    QCOMPARE(ids->size(), std::size_t(1));
    const engine::Node* v = c.document().find_node("v");
    QCOMPARE(v->type_version, 2);
    QCOMPARE(v->params["value"].get<double>(), 3.0);
    QVERIFY(!v->params.contains("amount"));
    c.undoStack()->undo();
    QCOMPARE(QString::fromStdString(saved(c.document())), QString::fromStdString(before));
    const QString versions = gui::versionReport(&registry_);
    QVERIFY(versions.contains(QString::fromLatin1(qVersion())));
#ifdef VIDGRAPH_GUI_HAVE_NODES
    QVERIFY2(versions.contains(QStringLiteral("LibTorch: ")), qPrintable(versions));
    QVERIFY2(versions.contains(QStringLiteral("Attention methods (WanSampler): full")), qPrintable(versions));
#endif  // VIDGRAPH_GUI_HAVE_NODES
  }

#ifdef VIDGRAPH_GUI_HAVE_NODES
  // The editor and vidgraph-run both open a nodes::Session: the same node types, the sampler's
  // attention methods and params the plugin's in both. The suite's registry (test types plus the
  // session's built-in ones) describes each built-in type as the runner does.
  void editorAndRunnerShareTheSessionTypes() {
    const QString runner = QStringLiteral(VIDGRAPH_BINARY_DIR "/bin/vidgraph-run");
    if (!QFileInfo::exists(runner)) QSKIP("bin/vidgraph-run is not built");
    QProcess p;
    p.start(runner, {QStringLiteral("nodes"), QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    const json cli = json::parse(p.readAllStandardOutput().toStdString());
    const json editor = session_.registry().describe();
    QCOMPARE(QString::fromStdString(editor.dump(1)), QString::fromStdString(cli.dump(1)));
    std::map<std::string, json> suite;
    const json described = registry_.describe();
    for (const json& t : described["node_types"]) suite[t["name"].get<std::string>()] = t;
    for (const json& t : cli["node_types"]) {
      const std::string name = t["name"].get<std::string>();
      QVERIFY2(suite.count(name), name.c_str());
      QCOMPARE(QString::fromStdString(suite[name].dump(1)), QString::fromStdString(t.dump(1)));
    }
    const engine::ParamSpec* attention = registry_.find("WanSampler")->find_param("attention");
    QVERIFY(attention);
    QVERIFY2(std::count(attention->choices.begin(), attention->choices.end(), "vsa") == 1,
             "the session loaded no plugin: the sampler offers full attention only");
    QVERIFY(registry_.find("WanSampler")->find_param("sparsity"));
  }
#endif  // VIDGRAPH_GUI_HAVE_NODES

  void viewZoomAndFit() {
    DocumentController c(registry_);
    gui::GraphScene scene(&c);
    gui::GraphView view;
    view.setScene(&scene);
    view.resize(800, 600);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    buildChain(c);
    QVERIFY(c.addNode("Number", {2000, 1500}).ok());
    view.fitToNodes();
    const QRectF visible = view.mapToScene(view.viewport()->rect()).boundingRect();
    QVERIFY(visible.contains(scene.nodesBoundingRect()));
    QVERIFY(view.zoom() >= 0.2 && view.zoom() < 1.0);
    view.setZoom(100.0, QPointF(0, 0));
    QCOMPARE(view.zoom(), 4.0);  // clamped
    view.setZoom(0.001, QPointF(0, 0));
    QCOMPARE(view.zoom(), 0.1);
  }

  // The preview's placeholder shows while there is no clip, K plays and pauses, and opening another
  // document (File > New, open) drops the previous document's clip.
  void previewPlaceholderKeyAndDocumentSwitch() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-player"), 3600000, false});
    gui_test::showWindow(window);
    auto* screen = window.player()->findChild<QLabel*>(QStringLiteral("previewScreen"));
    QVERIFY(screen);
    QVERIFY2(screen->text().contains(QLatin1String("Preview Video")), qPrintable(screen->text()));
    gui::PreviewClip clip;
    clip.fps = 12;
    for (int i = 0; i < 4; ++i) {
      QImage frame(32, 16, QImage::Format_RGB32);
      frame.fill(QColor(40 * i, 80, 120));
      clip.frames << frame;
    }
    auto setClip = [&] { window.player()->setClip(QStringLiteral("p"), clip); };
    setClip();
    window.view()->setFocus();
    QTest::keyClick(&window, Qt::Key_K);
    QVERIFY(window.player()->isPlaying());
    QTest::keyClick(&window, Qt::Key_K);
    QVERIFY(!window.player()->isPlaying());
    QAction* newAction = gui_test::findAction(window, QStringLiteral("&New"));
    QVERIFY(newAction);
    newAction->trigger();
    QCOMPARE(window.player()->frameCount(), 0);
    QVERIFY2(screen->text().contains(QLatin1String("Preview Video")), qPrintable(screen->text()));
    buildChain(*window.controller());
    const QString path = tmp_.filePath(QStringLiteral("player-switch.vgflow"));
    QVERIFY(window.saveTo(path));
    setClip();
    QVERIFY(window.openFile(path));
    QCOMPARE(window.player()->frameCount(), 0);
  }

  // A failed state goes when the node is edited (its cause may be gone), and again after an undo.
  // (States compared as ints: QTest would free the const char* that toString(NodeRunState) returns.)
  void failedStateGoesWhenItsCauseIsEdited() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-failed"), 3600000, false});
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("Fail", {0, 0}).ok());
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(int(window.scene()->nodeItem("Fail")->status().state), int(gui::NodeRunState::Failed));
    QVERIFY(c->setParam("Fail", "message", std::string("other")).ok());
    QCOMPARE(int(window.runController()->nodeStatus("Fail").state), int(gui::NodeRunState::Idle));
    QCOMPARE(int(window.scene()->nodeItem("Fail")->status().state), int(gui::NodeRunState::Idle));
    finished.clear();
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(int(window.scene()->nodeItem("Fail")->status().state), int(gui::NodeRunState::Failed));
    c->undoStack()->undo();
    QCOMPARE(int(window.scene()->nodeItem("Fail")->status().state), int(gui::NodeRunState::Idle));
  }

  // At the level above, an instance shows what its inner nodes do: running with the progress of the
  // one that runs (named), cancelled, done; failed with the inner node's message, until an edit of
  // the instance clears it.
  void instanceShowsItsInnerNodesStatus() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-instance-status"), 3600000, false});
    DocumentController* c = window.controller();
    gui::RunController* run = window.runController();
    QVERIFY(c->addNode("Slow", {0, 0}).ok());
    QVERIFY(c->setParam("Slow", "steps", 2000).ok());
    QVERIFY(c->setParam("Slow", "step_ms", 5).ok());
    auto slow = c->makeSubgraph({"Slow"}, "Waiting");
    QVERIFY(slow.ok());
    const auto shown = [&](const std::string& id) { return window.scene()->nodeItem(id)->status(); };
    QSignalSpy finished(run, &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QTRY_VERIFY_WITH_TIMEOUT(shown(*slow).state == gui::NodeRunState::Running && shown(*slow).value > 0, 5000);
    QCOMPARE(shown(*slow).max, qint64(2000));
    QCOMPARE(shown(*slow).text, QStringLiteral("Slow: step"));
    window.cancelRun();
    QVERIFY(waitFinished(finished, 5000));
    QCOMPARE(int(shown(*slow).state), int(gui::NodeRunState::Cancelled));

    c->newDocument();
    buildChain(*c);
    QVERIFY(c->addNode("Fail", {0, 300}).ok());
    QVERIFY(c->setParam("Fail", "message", std::string("the disk is on fire")).ok());
    auto scale = c->makeSubgraph({"Scale"}, "Doubler");
    auto broken = c->makeSubgraph({"Fail"}, "Broken");
    QVERIFY(scale.ok() && broken.ok());
    const std::string definition = c->document().find_node(*broken)->params["subgraph"].get<std::string>();
    auto expose = vidgraph::engine::make_expose_param(c->document(), definition, "message", {"Fail", "message"});
    QVERIFY(expose.ok());
    QVERIFY(c->apply(std::move(expose.value())).ok());
    finished.clear();
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(int(shown(*scale).state), int(gui::NodeRunState::Done));
    QCOMPARE(int(shown(*broken).state), int(gui::NodeRunState::Failed));
    QVERIFY(shown(*broken).message.startsWith(QStringLiteral("Fail: ")));
    QVERIFY(window.scene()->nodeItem(*broken)->toolTip().contains("the disk is on fire"));
    QVERIFY(c->setParam(*broken, "message", std::string("other")).ok());
    QCOMPARE(int(shown(*broken).state), int(gui::NodeRunState::Idle));
    QCOMPARE(int(shown(*scale).state), int(gui::NodeRunState::Done));
    // Inside the instance, its own nodes show their statuses again.
    finished.clear();
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QVERIFY(c->enterSubgraph(*broken).ok());
    QCOMPARE(int(window.scene()->nodeItem("Fail")->status().state), int(gui::NodeRunState::Failed));
    QVERIFY(window.scene()->nodeItem("Fail")->status().message.contains("other"));
  }

  // The status bar's hint returns after a timed message.
  void statusHintComesBack() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-hint"), 3600000, false});
    const QString hint = window.statusBar()->currentMessage();
    QVERIFY(hint.contains(QLatin1String("add a node")));
    window.statusBar()->showMessage(QStringLiteral("Saved somewhere"), 50);
    QCOMPARE(window.statusBar()->currentMessage(), QStringLiteral("Saved somewhere"));
    QTRY_COMPARE(window.statusBar()->currentMessage(), hint);
  }

  // Integer sliders only for short ranges: steps 1-1000 gets a spin box alone.
  void intSlidersOnlyForShortRanges() {
    std::unique_ptr<gui::ParamEditor> steps(gui::createParamEditor(engine::ParamSpec::integer("steps", 50, 1, 1000), nullptr));
    QVERIFY(steps->findChild<QDoubleSpinBox*>());
    QVERIFY(!steps->findChild<QSlider*>());
    std::unique_ptr<gui::ParamEditor> count(gui::createParamEditor(engine::ParamSpec::integer("count", 3, 1, 10), nullptr));
    QVERIFY(count->findChild<QSlider*>());
  }

  // An open upper bound (sparsity in [0, 1)): the spin box and the slider stop below it, so the
  // editor never commits a value the param refuses.
  void exclusiveMaxStaysBelowTheBound() {
    engine::ParamSpec spec = engine::ParamSpec::real("sparsity", 0.5, 0.0, 1.0);
    spec.max_exclusive = true;
    std::unique_ptr<gui::ParamEditor> editor(gui::createParamEditor(spec, nullptr));
    std::vector<json> commits;
    editor->setCommit([&](json v) { commits.push_back(v); });
    editor->showValue(0.5);
    auto* spin = editor->findChild<QDoubleSpinBox*>();
    auto* slider = editor->findChild<QSlider*>();
    QVERIFY(spin && slider);
    QVERIFY(spin->maximum() < 1.0);
    spin->setValue(1.0);  // what typing 1 gives: clamped to the maximum
    slider->setValue(slider->maximum());
    QVERIFY(!commits.empty());
    for (const json& v : commits) QVERIFY2(spec.check(v).ok(), v.dump().c_str());
    QCOMPARE(commits.back().get<double>(), spin->maximum());
  }

  // Frames are 4k + 1: the spin box steps by 4 from 1 and a typed 24 becomes 25; a file's 24 is
  // shown as it is, marked invalid, and not rewritten.
  void framesSpinBoxStepsByFour() {
    const engine::ParamSpec spec = engine::ParamSpec::integer("frames", 121, 1, 1025).with_step(4);
    std::unique_ptr<gui::ParamEditor> editor(gui::createParamEditor(spec, nullptr));
    std::vector<json> commits;
    editor->setCommit([&](json v) { commits.push_back(v); });
    editor->showValue(121);
    auto* spin = editor->findChild<QDoubleSpinBox*>();
    QVERIFY(spin);
    editor->show();
    QVERIFY(QTest::qWaitForWindowExposed(editor.get()));
    spin->setFocus();
    QTest::keyClick(spin, Qt::Key_Up);
    QCOMPARE(spin->value(), 125.0);
    QCOMPARE(commits.back(), json(125));
    spin->selectAll();
    QTest::keyClicks(spin, QStringLiteral("24"));
    QTest::keyClick(spin, Qt::Key_Return);
    QCOMPARE(spin->value(), 25.0);
    QCOMPARE(commits.back(), json(25));
    for (const json& v : commits) QVERIFY2(spec.check(v).ok(), v.dump().c_str());
    commits.clear();
    editor->showValue(24);
    QCOMPARE(spin->value(), 24.0);
    QVERIFY(editor->isInvalid());
    QVERIFY2(editor->invalidReason().contains(QLatin1String("multiple of 4")), qPrintable(editor->invalidReason()));
    QVERIFY(commits.empty());
  }

#ifdef VIDGRAPH_GUI_HAVE_NODES
  // Wan Sampler's own frames in the inspector: Up from 21 gives 25, a typed 24 is never committed
  // (it snaps to 25), and the document only ever holds 4k + 1.
  void samplerFramesStepInTheInspector() {
    DocumentController c(registry_);
    auto id = c.addNode("WanSampler", {0, 0});
    QVERIFY(id.ok());
    QVERIFY(c.setParam(*id, "frames", 21).ok());
    gui::InspectorPanel inspector(&c);
    inspector.setNode(*id);
    inspector.show();
    QVERIFY(QTest::qWaitForWindowExposed(&inspector));
    auto* spin = inspector.editor("frames")->findChild<QDoubleSpinBox*>();
    QVERIFY(spin);
    QCOMPARE(spin->value(), 21.0);
    QCOMPARE(spin->singleStep(), 4.0);
    std::vector<json> seen;
    connect(&c, &DocumentController::documentChanged, this, [&](const engine::DocumentChange& ch) {
      if (ch.port == "frames") seen.push_back(c.document().find_node(*id)->params["frames"]);
    });
    spin->setFocus();
    spin->selectAll();
    QTest::keyClicks(spin, QStringLiteral("24"));
    QTest::keyClick(spin, Qt::Key_Return);
    QCOMPARE(spin->value(), 25.0);
    QCOMPARE(c.document().find_node(*id)->params["frames"], json(25));
    QVERIFY(!seen.empty());
    for (const json& v : seen) QVERIFY2(v != json(24), "24 reached the document");
    QVERIFY(!inspector.editor("frames")->isInvalid());
    QVERIFY(c.setParam(*id, "frames", 21).ok());
    QCOMPARE(spin->value(), 21.0);
    QTest::keyClick(spin, Qt::Key_Up);
    QCOMPARE(spin->value(), 25.0);
    QCOMPARE(c.document().find_node(*id)->params["frames"], json(25));
  }
#endif  // VIDGRAPH_GUI_HAVE_NODES

  // A canvas without nodes says what to do, drawn in the middle of the view; the first node takes
  // it away (also far from the hint, where only a full repaint would clear it); undo brings it back.
  void emptyCanvasShowsAHint() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-empty-hint"), 3600000, false});
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    gui::GraphView* view = window.view();
    auto brightPixels = [&] {
      QApplication::processEvents();
      const QImage shot = view->viewport()->grab().toImage();
      const QRect r = view->emptyHintRect().intersected(shot.rect());
      int n = 0;
      for (int y = r.top(); y <= r.bottom(); ++y) {
        for (int x = r.left(); x <= r.right(); ++x) n += qGray(shot.pixel(x, y)) > 0x60 ? 1 : 0;
      }
      return n;
    };
    QVERIFY(view->emptyHintShown());
    QVERIFY2(brightPixels() > 200, "no hint text drawn on the empty canvas");
    const QPointF far = view->mapToScene(view->viewport()->rect().topLeft()) - QPointF(2000, 2000);
    QVERIFY(window.controller()->addNode("Number", far).ok());
    QVERIFY(!view->emptyHintShown());
    QCOMPARE(brightPixels(), 0);
    window.controller()->undoStack()->undo();
    QVERIFY(view->emptyHintShown());
    QVERIFY(brightPixels() > 200);
  }

  // The clip of a run that succeeds plays at once in the preview panel.
  void previewAutoplaysAfterARun() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-autoplay"), 3600000, false});
    QVERIFY(window.controller()->addNode("GuiPreview", {0, 0}).ok());
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(!window.player()->isPlaying());
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(finished.front().front().toString(), QStringLiteral("succeeded"));
    QCOMPARE(window.player()->frameCount(), 4);
    QVERIFY(window.player()->isPlaying());
  }

#ifdef VIDGRAPH_GUI_HAVE_NODES
  // File ▸ Open Example lists the workflows shipped in <build>/share/vidgraph/workflows; each opens
  // untitled, with no load warning, and validates.
  void shippedExamplesOpen() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-examples"), 3600000, false});
    const QString shipped = QStringLiteral(VIDGRAPH_BINARY_DIR "/share/vidgraph/workflows");
    QCOMPARE(QFileInfo(window.examplesDir()).canonicalFilePath(), QFileInfo(shipped).canonicalFilePath());
    auto* menu = window.findChild<QMenu*>(QStringLiteral("examplesMenu"));
    QVERIFY(menu);
    Q_EMIT menu->aboutToShow();
    const int expected = int(QDir(shipped).entryList({QStringLiteral("*.vgflow")}, QDir::Files).size());
    QVERIFY(expected >= 5);
    QCOMPARE(int(menu->actions().size()), expected);
    for (QAction* a : menu->actions()) {
      a->trigger();
      DocumentController* c = window.controller();
      QVERIFY2(!c->document().nodes().empty(), qPrintable(a->text()));
      QVERIFY2(c->loadWarnings().isEmpty(), qPrintable(a->text() + ": " + c->loadWarnings().join(' ')));
      QVERIFY(c->filePath().isEmpty() && !c->isModified());
      const auto report = engine::validate_document(c->document(), registry_);
      QVERIFY2(report.ok(), qPrintable(a->text()));
    }
  }
#endif  // VIDGRAPH_GUI_HAVE_NODES

  // Ctrl+B bypasses the selected node (one undo step): it is drawn bypassed, saved as such, a run
  // passes its input through without computing it, and the node menu shows Bypass checked.
  void bypassSelectedNode() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-bypass"), 3600000, false});
    gui_test::showWindow(window, {1024, 700});
    DocumentController* c = window.controller();
    buildChain(*c);
    window.scene()->selectNodes({"Scale"});
    const int undoBefore = c->undoStack()->count();
    QTest::keyClick(&window, Qt::Key_B, Qt::ControlModifier);
    QVERIFY(c->document().find_node("Scale")->bypass);
    QCOMPARE(c->undoStack()->count(), undoBefore + 1);
    QVERIFY(window.scene()->nodeItem("Scale")->isBypassed());
    QVERIFY(saved(c->document()).find("\"bypass\": true") != std::string::npos);
    window.fitView();
    QApplication::processEvents();
    const QPointF onNode = window.scene()->nodeItem("Scale")->sceneBoundingRect().center();
    std::unique_ptr<QMenu> menu(window.contextMenuAt(window.view()->mapFromScene(onNode)));
    QAction* bypass = nullptr;
    for (QAction* a : menu->actions()) {
      if (a->text() == QStringLiteral("&Bypass")) bypass = a;
    }
    QVERIFY(bypass && bypass->isCheckable() && bypass->isChecked());
    menu.reset();
    vidgraph::test::reset_compute_counts();
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(finished.front().front().toString(), QStringLiteral("succeeded"));
    QCOMPARE(vidgraph::test::compute_count("Scale"), 0);
    QCOMPARE(int(window.runController()->nodeStatus("Scale").state), int(gui::NodeRunState::Bypassed));
    c->undoStack()->undo();
    QVERIFY(!c->document().find_node("Scale")->bypass);
    QVERIFY(!window.scene()->nodeItem("Scale")->isBypassed());
  }

  // Ctrl+Shift+C collapses the selected node to its title bar (one undo step, saved in the editor
  // layout, kept through a reload): its wires meet the bar, its ports take no new wire; undo expands.
  void collapseSelectedNode() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-collapse"), 3600000, false});
    gui_test::showWindow(window);
    DocumentController* c = window.controller();
    buildChain(*c);
    gui::NodeItem* item = window.scene()->nodeItem("Scale");
    const qreal fullHeight = item->boundingRect().height();
    const QPointF inputBefore = item->portScenePos(QStringLiteral("x"), false);
    window.scene()->selectNodes({"Scale"});
    QTest::keyClick(&window, Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(c->isCollapsed("Scale"));
    QVERIFY(item->isCollapsed());
    QVERIFY(item->boundingRect().height() < fullHeight / 2);
    const QPointF inputNow = item->portScenePos(QStringLiteral("x"), false);
    QVERIFY(inputNow.y() < inputBefore.y());
    QVERIFY(inputNow.y() < item->sceneBoundingRect().bottom());
    QVERIFY(!item->portAt(inputNow));
    gui::ConnectionItem* wire = window.scene()->connectionItem("Scale", QStringLiteral("x"));
    QVERIFY(wire);
    const QPointF wireEnd = wire->mapToScene(wire->path().pointAtPercent(1.0));
    QVERIFY2(QLineF(wireEnd, inputNow).length() < 1.0, "the wire does not end at the collapsed node's bar");
    const std::string text = saved(c->document());
    QVERIFY(text.find("\"collapsed\": true") != std::string::npos);
    QVERIFY(c->loadText(QString::fromStdString(text), {}, QStringLiteral("collapsed")).ok());
    QVERIFY(window.scene()->nodeItem("Scale")->isCollapsed());
    c->undoStack()->clear();
    QVERIFY(c->setCollapsed({"Scale"}, false).ok());
    QVERIFY(!window.scene()->nodeItem("Scale")->isCollapsed());
    c->undoStack()->undo();
    QVERIFY(window.scene()->nodeItem("Scale")->isCollapsed());
  }

  // A second Preview node identical to the first is served from the cache; it still gets its
  // thumbnail, and a re-run served wholly from the cache still fills the player.
  void cachedPreviewNodeShowsItsVideo() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-cached-preview"), 3600000, false});
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("GuiPreview", {0, 0}).ok());
    QVERIFY(c->addNode("GuiPreview", {300, 0}).ok());
    QCOMPARE(c->document().nodes().size(), std::size_t(2));
    const std::string first = c->document().nodes()[0].id, second = c->document().nodes()[1].id;
    gui::RunController* run = window.runController();
    QSignalSpy finished(run, &gui::RunController::runFinished);
    QSignalSpy previews(run, &gui::RunController::previewReceived);
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(int(run->nodeStatus(second).state), int(gui::NodeRunState::Cached));
    QCOMPARE(previews.count(), 2);
    QVERIFY(window.scene()->nodeItem(first)->hasThumbnail());
    QVERIFY(window.scene()->nodeItem(second)->hasThumbnail());
    window.player()->setClip({}, {});
    finished.clear();
    previews.clear();
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
    QCOMPARE(int(run->nodeStatus(first).state), int(gui::NodeRunState::Cached));
    QCOMPARE(previews.count(), 2);
    QCOMPARE(window.player()->frameCount(), 4);
  }

  // Right-click menus through the canvas: a right click (no drag) on a node, a wire or the canvas
  // opens the matching popup; each action is one undo step.
  void contextMenus() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-context"), 3600000, false});
    gui_test::showWindow(window, {1024, 700});
    DocumentController* c = window.controller();
    buildChain(*c);
    window.fitView();
    QApplication::processEvents();
    auto rightClick = [&](QPointF scenePos) -> QMenu* {
      QTest::mouseClick(window.view()->viewport(), Qt::RightButton, Qt::NoModifier, window.view()->mapFromScene(scenePos));
      for (int i = 0; i < 200 && !qobject_cast<QMenu*>(QApplication::activePopupWidget()); ++i) QTest::qWait(10);
      return qobject_cast<QMenu*>(QApplication::activePopupWidget());
    };
    auto choose = [](QMenu* menu, const QString& text) {
      for (QAction* a : menu->actions()) {
        if (a->text() != text) continue;
        menu->close();
        a->trigger();
        return true;
      }
      menu->close();
      return false;
    };
    auto linkOf = [&](const std::string& node, const std::string& input) {
      const auto& inputs = c->document().find_node(node)->inputs;
      auto it = inputs.find(input);
      return it == inputs.end() ? std::string("-") : it->second.node + "." + it->second.output;
    };
    // On a node: it becomes the selection; Disconnect All cuts its links in and out.
    gui::NodeItem* scale = window.scene()->nodeItem("Scale");
    QMenu* menu = rightClick(scale->mapToScene(QPointF(100, 13)));
    QVERIFY(menu);
    QCOMPARE(window.scene()->selectedNodeIds(), std::vector<std::string>{"Scale"});
    QStringList texts;
    for (QAction* a : menu->actions()) texts << a->text();
    for (const char* t : {"Run to &Here", "&Duplicate", "Dis&connect All", "De&lete"}) {
      QVERIFY2(texts.contains(QString::fromUtf8(t)), qPrintable(texts.join(QLatin1Char('|'))));
    }
    QVERIFY(choose(menu, QStringLiteral("Dis&connect All")));
    QCOMPARE(linkOf("Scale", "x"), std::string("-"));
    QCOMPARE(linkOf("Sink", "value"), std::string("-"));
    c->undoStack()->undo();
    QCOMPARE(linkOf("Scale", "x"), std::string("Number.value"));
    QCOMPARE(linkOf("Sink", "value"), std::string("Scale.out"));
    // On a wire: Insert Node puts the chosen type on the link, one undo step.
    auto wireMiddle = [&] {
      gui::ConnectionItem* wire = window.scene()->connectionItem("Scale", QStringLiteral("x"));
      return wire->mapToScene(wire->path().pointAtPercent(0.5));
    };
    QApplication::processEvents();
    menu = rightClick(wireMiddle());
    QVERIFY(choose(menu, QStringLiteral("&Insert Node…")));
    QTRY_VERIFY(window.palette()->isVisible());
    window.palette()->setQuery(QStringLiteral("Scale"));
    window.palette()->chooseCurrent();
    QCOMPARE(c->document().nodes().size(), std::size_t(4));
    QCOMPARE(linkOf("Scale", "x"), std::string("Scale_2.out"));
    QCOMPARE(linkOf("Scale_2", "x"), std::string("Number.value"));
    c->undoStack()->undo();
    QCOMPARE(c->document().nodes().size(), std::size_t(3));
    QCOMPARE(linkOf("Scale", "x"), std::string("Number.value"));
    QApplication::processEvents();
    menu = rightClick(wireMiddle());
    QVERIFY(choose(menu, QStringLiteral("&Delete Link")));
    QCOMPARE(linkOf("Scale", "x"), std::string("-"));
    // On the canvas: Add Node places the chosen type where the click was; Paste pastes there.
    const QPointF empty = scale->mapToScene(QPointF(0, 300));
    menu = rightClick(empty);
    QVERIFY(choose(menu, QStringLiteral("&Add Node…")));
    QTRY_VERIFY(window.palette()->isVisible());
    window.palette()->setQuery(QStringLiteral("Number"));
    window.palette()->chooseCurrent();
    QVERIFY(c->document().find_node("Number_2"));
    QVERIFY(QLineF(c->nodePosition("Number_2"), empty).length() < 2.0);
    window.scene()->selectNodes({"Sink"});
    window.copySelection();
    const QPointF there = empty + QPointF(0, 250);
    menu = rightClick(there);
    QVERIFY(choose(menu, QStringLiteral("&Paste")));
    QVERIFY(c->document().find_node("Sink_2"));
    QVERIFY(QLineF(c->nodePosition("Sink_2"), there).length() < 2.0);
  }

  // Key params are drawn on the node (seed, the prompt's first words, file names) and follow edits;
  // the node menu's Show in Folder opens the folder of its file param (resolved as a run would).
  void nodesShowKeyParamsAndTheirFolder() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-summary"), 3600000, false});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("Kinds", {0, 0}).ok());
    gui::NodeItem* item = window.scene()->nodeItem("Kinds");
    QCOMPARE(item->summary(), QStringList({QStringLiteral("seed 42"), QStringLiteral("“a cat”"), QStringLiteral("file: in.png")}));
    const qreal height = item->boundingRect().height();
    QVERIFY(c->setParam("Kinds", "prompt", std::string("a very long prompt about a red fox")).ok());
    QCOMPARE(item->summary().at(1), QStringLiteral("“a very long prompt about a r…”"));
    QVERIFY(c->setParam("Kinds", "seed", 7).ok());
    QCOMPARE(item->summary().front(), QStringLiteral("seed 7"));
    QCOMPARE(item->boundingRect().height(), height);
    c->undoStack()->undo();
    QCOMPARE(item->summary().front(), QStringLiteral("seed 42"));
#ifdef VIDGRAPH_GUI_HAVE_NODES
    QVERIFY(c->addNode("WanSampler", {300, 0}).ok());
    QVERIFY2(window.scene()->nodeItem("WanSampler")->summary().join(QLatin1Char(' ')).contains(QLatin1String("frames 121")),
             qPrintable(window.scene()->nodeItem("WanSampler")->summary().join(QLatin1Char('|'))));
#endif  // VIDGRAPH_GUI_HAVE_NODES
    const QString path = tmp_.filePath(QStringLiteral("kinds.vgflow"));
    QVERIFY(window.saveTo(path));
    UrlCatcher catcher;
    QDesktopServices::setUrlHandler(QStringLiteral("file"), &catcher, "open");
    window.fitView();
    QApplication::processEvents();
    std::unique_ptr<QMenu> menu(window.contextMenuAt(window.view()->mapFromScene(item->mapToScene(QPointF(100, 13)))));
    QAction* show = nullptr;
    for (QAction* a : menu->actions()) {
      if (a->text() == QLatin1String("Show in &Folder")) show = a;
    }
    QVERIFY(show);
    show->trigger();
    QDesktopServices::unsetUrlHandler(QStringLiteral("file"));
    QCOMPARE(catcher.urls.size(), 1);
    QCOMPARE(catcher.urls.front().toLocalFile(), QFileInfo(path).absolutePath());
  }

  // Hues hashed from names are fixed values (FNV-1a), not a per-process or per-machine hash.
  void nodeColoursAreStable_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("name");
    QTest::addColumn<QColor>("expected");
    QTest::newRow("category image") << "category" << "image" << QColor::fromHsv(218, 90, 110);
    QTest::newRow("category video/export") << "category" << "video/export" << QColor::fromHsv(4, 90, 110);
    QTest::newRow("category sampling") << "category" << "sampling" << QColor::fromHsv(32, 90, 110);
    QTest::newRow("port NUMBER") << "port" << "NUMBER" << QColor::fromHsv(320, 150, 230);
    QTest::newRow("port MASK") << "port" << "MASK" << QColor::fromHsv(217, 150, 230);
  }

  void nodeColoursAreStable() {
    QFETCH(QString, kind);
    QFETCH(QString, name);
    QFETCH(QColor, expected);
    const QColor got = kind == QLatin1String("port") ? gui::portTypeColor(name) : gui::categoryColor(name);
    QCOMPARE(got, expected);
  }

  // At 1024x700, Ctrl+0 on the shipped demo workflow keeps every node title drawn: a grab of the
  // whole main window has title-white text pixels in each node's title bar (the bars themselves are
  // darker category colours). The same measure reads 0 on every node below the level-of-detail
  // cut-off, so it sees hidden titles. The fitted grab is kept as an artefact.
  void fitKeepsNodeTitlesAt1024x700() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-fit"), 3600000, false});
    gui_test::showWindow(window, {1024, 700});
#ifdef VIDGRAPH_GUI_HAVE_NODES
    QVERIFY(window.openFile(QStringLiteral(VIDGRAPH_SOURCE_DIR "/resources/workflows/demo.vgflow")));
#else
    for (int i = 0; i < 8; ++i) QVERIFY(window.controller()->addNode("Number", {i * 330.0, (i % 3) * 260.0}).ok());
#endif  // VIDGRAPH_GUI_HAVE_NODES
    QCOMPARE(window.size(), QSize(1024, 700));
    window.view()->setZoom(1.0, QPointF(0, 0));
    QTest::keyClick(&window, Qt::Key_0, Qt::ControlModifier);
    QApplication::processEvents();
    const qreal fitZoom = window.view()->zoom();
    qInfo("fit zoom at 1024x700: %.3f", fitZoom);
    QVERIFY(fitZoom < 1.0);  // the shortcut fitted the view
    // White pixels in each node's title bar, in a grab of the whole window.
    auto titlePixels = [&] {
      QApplication::processEvents();
      const QImage shot = window.grab().toImage();
      const qreal dpr = shot.devicePixelRatio();
      std::map<QString, int> white;
      for (QGraphicsItem* item : window.scene()->items()) {
        if (item->type() != gui::NodeItem::Type) continue;
        const QRect inView = window.view()->mapFromScene(item->mapRectToScene(QRectF(4, 2, 202, 22))).boundingRect();
        const QRect bar(window.view()->viewport()->mapTo(&window, inView.topLeft()), inView.size());
        int& n = white[QString::fromStdString(static_cast<gui::NodeItem*>(item)->nodeId())];
        for (int y = bar.top(); y <= bar.bottom(); ++y) {
          for (int x = bar.left(); x <= bar.right(); ++x) {
            const QPoint p(int(x * dpr), int(y * dpr));
            if (!shot.rect().contains(p)) continue;
            const QColor c = shot.pixelColor(p);
            n += c.red() > 200 && c.green() > 200 && c.blue() > 200 ? 1 : 0;
          }
        }
      }
      return std::make_pair(white, shot);
    };
    const auto [fitted, shot] = titlePixels();
    QVERIFY(fitted.size() >= 5);
    for (const auto& [title, n] : fitted) QVERIFY2(n > 20, qPrintable(QStringLiteral("no title drawn on %1 (%2 px)").arg(title).arg(n)));
    const QString artefact = QStringLiteral(VIDGRAPH_BINARY_DIR "/tests/artifacts/vidgraph-fit-1024x700.png");
    QVERIFY(QDir().mkpath(QFileInfo(artefact).absolutePath()));
    QVERIFY(shot.save(artefact));
    QVERIFY(!gui::NodeItem::drawsTitleAt(0.15));
    window.view()->setZoom(0.15, window.scene()->nodesBoundingRect().center());
    for (const auto& [title, n] : titlePixels().first) QVERIFY2(n == 0, qPrintable(title));
  }

  void screenshotOfMainWindow() {
    if (screenshotOfRun_) {
      QVERIFY(QFile::exists(kScreenshot));  // written after the demo run, with node states and preview
      return;
    }
    gui::MainWindow window(registry_, {tmp_.filePath("rec-shot"), 3600000, false});
    const QString demo = QStringLiteral(VIDGRAPH_SOURCE_DIR "/resources/workflows/demo.vgflow");
#ifdef VIDGRAPH_GUI_HAVE_NODES
    QVERIFY(window.openFile(demo));
#else
    buildChain(*window.controller());
    QVERIFY(window.controller()->addNode("GuiPreview", {600, 260}).ok());
    QVERIFY(window.controller()->connectPorts("Scale", "out", "GuiPreview", "x").ok());
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(waitFinished(finished, 10000));
#endif  // VIDGRAPH_GUI_HAVE_NODES
    window.scene()->selectNodes({window.controller()->document().nodes().front().id});
    saveScreenshot(window);
  }
};

QTEST_MAIN(tst_Gui)
#include "tst_gui.moc"
