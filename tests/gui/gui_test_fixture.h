// Shared fixtures of the GUI suites (tst_gui: editor, scene, runs; tst_gui_files: files, autosave,
// recovery and the window's dialogs): the test registry, the number → scale → sink chain, a
// document's saved text, and waiting for a run to finish.
//
// Contract: header-only, used by one test executable at a time; the helpers use QVERIFY, so a
// caller checks QTest::currentTestFailed() when it must stop after a failed helper.
#pragma once

#include <cstdint>
#include <string>

#include <QtCore/QCoreApplication>
#include <QtCore/QStandardPaths>
#include <QtTest/QSignalSpy>
#include <QtTest/QtTest>
#include <QtGui/QAction>
#include <QtWidgets/QApplication>

#include "engine/document.h"
#include "engine/node_context.h"
#include "engine/registry.h"
#include "engine/workflow_file.h"
#include "engine_test_nodes.h"
#include "gui/document_controller.h"
#include "gui/main_window.h"
#include "gui/theme.h"
#include "nodes/value_types.h"

#ifdef VIDGRAPH_GUI_HAVE_NODES
#include "nodes/register_nodes.h"
#include "nodes/session.h"
#endif  // VIDGRAPH_GUI_HAVE_NODES

namespace vidgraph::gui_test {

// A test node that posts a 4-frame VIDEO preview (a nodes::Video), as Preview Video does.
inline engine::NodeType guiPreviewType() {
  engine::NodeType t;
  t.name = "GuiPreview";
  t.category = "test";
  t.description = "Posts a small gradient video as a preview.";
  t.inputs = {{"x", "NUMBER", true, "ignored"}};
  t.outputs = {{"video", "VIDEO", false, "the clip"}};
  t.compute = [](engine::NodeContext& ctx) -> engine::Result<engine::ValueMap> {
    nodes::Video v;
    v.fps = 12;
    v.frames.count = 4;
    v.frames.width = 32;
    v.frames.height = 16;
    v.frames.rgb.resize(v.frames.frame_bytes() * 4);
    for (std::size_t i = 0; i < v.frames.rgb.size(); ++i) v.frames.rgb[i] = static_cast<std::uint8_t>(i * 7);
    engine::Value value = engine::make_value("VIDEO", v, v.frames.rgb.size());
    ctx.emit_preview(value);
    return engine::ValueMap{{"video", value}};
  };
  return t;
}

inline std::string saved(const engine::GraphDocument& doc) { return engine::save_workflow_string(doc); }

inline bool waitFinished(QSignalSpy& spy, int ms) { return spy.count() > 0 || spy.wait(ms); }

// number → scale → sink, with positions.
inline void buildChain(gui::DocumentController& c) {
  QVERIFY(c.addNode("Number", {0, 0}).ok());
  QVERIFY(c.addNode("Scale", {300, 0}).ok());
  QVERIFY(c.addNode("Sink", {600, 0}).ok());
  QVERIFY(c.connectPorts("Number", "value", "Scale", "x").ok());
  QVERIFY(c.connectPorts("Scale", "out", "Sink", "value").ok());
}

// Shows `window` (at `size` when given) and waits until it is exposed and active, so shortcuts and
// mouse events reach it.
inline void showWindow(QWidget& window, QSize size = {}) {
  if (size.isValid()) window.resize(size);
  window.show();
  QVERIFY(QTest::qWaitForWindowExposed(&window));
  window.activateWindow();
  QVERIFY(QTest::qWaitForWindowActive(&window));
}

// The window's action whose text is `text` (with its & mnemonic), or null.
inline QAction* findAction(QWidget& window, const QString& text) {
  for (QAction* a : window.findChildren<QAction*>()) {
    if (a->text() == text) return a;
  }
  return nullptr;
}

// A left-button drag on `widget` from `from` to `to`, through a midpoint (as a hand does).
inline void dragMouse(QWidget* widget, QPoint from, QPoint to, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  QTest::mousePress(widget, Qt::LeftButton, modifiers, from);
  QTest::mouseMove(widget, (from + to) / 2);
  QTest::mouseMove(widget, to);
  QTest::mouseRelease(widget, Qt::LeftButton, modifiers, to);
}

// initTestCase of both suites: settings and data folders in test mode under the suite's own name,
// the engine's test node types plus GuiPreview, the theme. A suite linked with the nodes adds the
// built-in types of its own nodes::Session member (declared before its registry, so the session,
// and the plugin with it, ends after the node types that call it and before the process exits, as
// in main.cpp; a plugin unloaded during exit()'s static teardown races other libraries' teardown).
inline void initGuiSuite(engine::Registry& registry, const QString& applicationName) {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName(QStringLiteral("VidgraphTest"));
  QCoreApplication::setApplicationName(applicationName);
  test::register_engine_test_nodes(registry);
  QVERIFY(registry.add(guiPreviewType()).ok());
  gui::applyTheme(*qApp);
}

}  // namespace vidgraph::gui_test
