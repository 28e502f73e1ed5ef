// Tests of the Qt node editor (app/gui), file side: open/save round trips, autosave and recovery,
// recent files and drag-and-drop, and the window's dialogs driven through the real MainWindow on the
// offscreen platform: the unsaved-changes prompt (close, drop, File > New, Open Recent answered with
// Cancel, Discard or Save; the save-as file dialog of an untitled document) and the restore offer
// of autosaved work left by a crash (Yes, No, Discard; also at start-up with a file argument, and a
// kept recovery not re-offered as a fresh crash); files with problems (a dangling link, bad params)
// opened with the nodes marked; a video named as such; the documented shortcuts; File ▸ Open Example
// and the Open dialog's first folder; an image dropped as a Load Image node; the workflow back out of
// an exported MP4 or PNG sequence, and the confirmation before such a shared workflow writes outside
// the output folder. Shared fixtures in gui_test_fixture.h.
#include <algorithm>
#include <chrono>
#include <fstream>

#include <QtCore/QDir>
#include <QtCore/QDirIterator>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QMimeData>
#include <QtCore/QRegularExpression>
#include <QtCore/QSettings>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtCore/QUrl>
#include <QtGui/QAction>
#include <QtGui/QDragEnterEvent>
#include <QtGui/QDropEvent>
#include <QtTest/QtTest>
#include <QtWidgets/QApplication>
#include <QtWidgets/QDoubleSpinBox>
#include <QtWidgets/QMenu>
#include <QtWidgets/QMessageBox>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QStatusBar>
#include <QtWidgets/QTreeWidget>

#include "../comfy/comfy_fixtures.h"
#include "engine/run_history.h"
#include "engine/workflow_file.h"
#include "gui/autosave.h"
#include "gui/document_controller.h"
#include "engine/subgraph.h"
#include "gui/graph_scene.h"
#include "gui/graph_view.h"
#include "gui/history_panel.h"
#include "gui/inspector_editors.h"
#include "gui/inspector_panel.h"
#include "gui/log_panel.h"
#include "gui/node_item.h"
#include "gui/main_window.h"
#include "gui/preview_player.h"
#include "gui/run_controller.h"
#include "gui_dialog_answerer.h"
#include "gui_test_fixture.h"
#if defined(VIDGRAPH_GUI_HAVE_NODES) && defined(VIDGRAPH_HAVE_MEDIA)
#include "nodes/media/video_export.h"
#endif

using namespace vidgraph;
using gui::DocumentController;
using gui_test::buildChain;
using gui_test::DialogAnswerer;
using gui_test::saved;

Q_DECLARE_METATYPE(QMessageBox::StandardButton)

namespace {

QByteArray readAll(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

QAction* findAction(QWidget& window, const std::function<bool(const QString&)>& matches) {
  for (QAction* a : window.findChildren<QAction*>()) {
    if (matches(a->text())) return a;
  }
  return nullptr;
}

// Drops `path` on the window as a file manager would (drag enter, then drop).
void dropFile(QWidget& window, const QString& path) {
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(path)});
  QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &enter);
  QVERIFY(enter.isAccepted());
  QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(&window, &drop);
}

}  // namespace

class tst_GuiFiles : public QObject {
  Q_OBJECT

 private:
#ifdef VIDGRAPH_GUI_HAVE_NODES
  nodes::Session session_;  // before registry_: see gui_test::initGuiSuite
#endif  // VIDGRAPH_GUI_HAVE_NODES
  engine::Registry registry_;
  QTemporaryDir tmp_;

  // The window of the unsaved-changes tests, shown: "other.vgflow" (the chain) saved first, then
  // "work.vgflow" (factor 2), so Open Recent lists both; the document is work.vgflow, clean.
  struct FileWindow {
    QTemporaryDir dir;
    QString work, other;
    std::unique_ptr<gui::MainWindow> window;
  };
  void openFileWindow(FileWindow& f) {
    QVERIFY(f.dir.isValid());
    f.work = QFileInfo(f.dir.filePath(QStringLiteral("work.vgflow"))).absoluteFilePath();
    f.other = QFileInfo(f.dir.filePath(QStringLiteral("other.vgflow"))).absoluteFilePath();
    f.window = std::make_unique<gui::MainWindow>(
        registry_, gui::MainWindowOptions{f.dir.filePath(QStringLiteral("recovery")), 3600000, false});
    f.window->show();
    QVERIFY(QTest::qWaitForWindowExposed(f.window.get()));
    DocumentController* c = f.window->controller();
    buildChain(*c);
    QVERIFY(f.window->saveTo(f.other));
    QVERIFY(c->setParam("Scale", "factor", 2.0).ok());
    QVERIFY(f.window->saveTo(f.work));
    QVERIFY(!c->isModified());
  }

  // Triggers `action` ("close", "drop", "new", "recent") and returns whether the window went on
  // with it (closed, or now shows the other file / a new empty document).
  bool trigger(FileWindow& f, const QString& action) {
    gui::MainWindow& w = *f.window;
    if (action == QLatin1String("close")) {
      const bool accepted = w.close();
      return accepted && !w.isVisible();
    }
    if (action == QLatin1String("drop")) dropFile(w, f.other);
    if (action == QLatin1String("new")) {
      QAction* a = findAction(w, [](const QString& t) { return t == QLatin1String("&New"); });
      if (!a) return false;
      a->trigger();
      return w.controller()->filePath().isEmpty() && w.controller()->document().nodes().empty();
    }
    if (action == QLatin1String("recent")) {
      QAction* a = findAction(w, [](const QString& t) { return t.startsWith(QLatin1String("other.vgflow")); });
      if (!a) return false;
      a->trigger();
    }
    return w.controller()->filePath() == f.other && saved(w.controller()->document()) == readAll(f.other).toStdString();
  }

 private Q_SLOTS:
  void initTestCase() {
    gui_test::initGuiSuite(registry_, QStringLiteral("tst_gui_files"));
#ifdef VIDGRAPH_GUI_HAVE_NODES
    nodes::register_builtin_nodes(registry_, session_.builtin_options());
#endif  // VIDGRAPH_GUI_HAVE_NODES
    QVERIFY(tmp_.isValid());
  }

  // Every shortcut app/gui/README.md lists ("Ctrl+N/O/S, ... Ctrl+. (Shift+F5) cancel.") is on an
  // action of the main window.
  void documentedShortcutsExist() {
    QFile readme(QStringLiteral(VIDGRAPH_SOURCE_DIR "/app/gui/README.md"));
    QVERIFY(readme.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(readme.readAll()).simplified();
    const qsizetype from = text.indexOf(QLatin1String("Shortcuts:"));
    const qsizetype to = text.indexOf(QLatin1String("Pan with"), from);
    QVERIFY(from >= 0 && to > from);
    QStringList sequences;
    const QRegularExpression modsAndKeys(QStringLiteral("^((?:Ctrl\\+|Shift\\+|Alt\\+)*)(.+)$"));
    for (QString item : text.mid(from + 10, to - from - 10).split(QLatin1Char(','))) {
      item = item.trimmed();
      if (item.endsWith(QLatin1Char('.')) && item.size() > 1 && item.contains(QLatin1Char(' '))) item.chop(1);
      const QStringList words = item.split(QLatin1Char(' '));
      const QRegularExpressionMatch m = modsAndKeys.match(words.front());
      QVERIFY2(m.hasMatch(), qPrintable(item));
      for (const QString& key : m.captured(2).split(QLatin1Char('/'))) sequences << m.captured(1) + key;
      for (const QString& w : words.mid(1)) {
        if (w.startsWith(QLatin1Char('(')) && w.endsWith(QLatin1Char(')'))) sequences << w.mid(1, w.size() - 2);
      }
    }
    QVERIFY2(sequences.size() >= 20, qPrintable(sequences.join(QLatin1Char(' '))));
    gui::MainWindow window(registry_, {tmp_.filePath(QStringLiteral("rec-keys")), 3600000, false});
    const QList<QAction*> actions = window.findChildren<QAction*>();
    for (const QString& s : sequences) {
      const QKeySequence wanted = QKeySequence::fromString(s, QKeySequence::PortableText);
      QVERIFY2(!wanted.isEmpty(), qPrintable(s));
      const bool found = std::any_of(actions.begin(), actions.end(),
                                     [&](QAction* a) { return a->shortcuts().contains(wanted); });
      QVERIFY2(found, qPrintable(QStringLiteral("no action has the documented shortcut %1").arg(s)));
    }
  }

  // Ctrl+Shift+S, sent to the window, opens the save-as dialog (it did nothing where
  // QKeySequence::SaveAs is empty).
  void saveAsShortcutOpensTheDialog() {
    QTemporaryDir dir;
    gui::MainWindow window(registry_, {dir.filePath(QStringLiteral("recovery")), 3600000, false});
    gui_test::showWindow(window);
    buildChain(*window.controller());
    const QString target = dir.filePath(QStringLiteral("keyed.vgflow"));
    DialogAnswerer answerer({}, target);
    QTest::keyClick(&window, Qt::Key_S, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY(QFile::exists(target));
    QCOMPARE(answerer.seen().size(), 1);
    QCOMPARE(answerer.seen().front().kind, QStringLiteral("file"));
    QCOMPARE(window.controller()->filePath(), QFileInfo(target).absoluteFilePath());
  }

  void openSaveRoundTrip_data() {
    QTest::addColumn<QString>("path");
    QDirIterator it(QStringLiteral(VIDGRAPH_SOURCE_DIR "/resources/workflows"), {QStringLiteral("*.vgflow")},
                    QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
      const QString p = it.next();
      QTest::newRow(qPrintable(QFileInfo(p).fileName())) << p;
    }
    // A file written here, so the round trip is tested even before workflows ship.
    DocumentController c(registry_);
    buildChain(c);
    const QString own = tmp_.filePath(QStringLiteral("chain.vgflow"));
    QVERIFY(c.save(own).ok());
    QTest::newRow("chain.vgflow (test)") << own;
  }

  void openSaveRoundTrip() {
    QFETCH(QString, path);
    DocumentController c(registry_);
    auto opened = c.open(path);
    QVERIFY2(opened.ok(), opened.ok() ? "" : opened.error().to_string().c_str());
    QVERIFY(!c.isModified());
    QCOMPARE(c.filePath(), QFileInfo(path).absoluteFilePath());
    const QString out = tmp_.filePath(QStringLiteral("roundtrip-") + QFileInfo(path).fileName());
    QVERIFY(c.save(out).ok());
    QFile original(path), copy(out);
    QVERIFY(original.open(QIODevice::ReadOnly) && copy.open(QIODevice::ReadOnly));
    const QByteArray canonical = QByteArray::fromStdString(
        engine::save_workflow_string(engine::load_workflow_file(path.toStdString()).value().document));
    QCOMPARE(copy.readAll(), canonical);
    DocumentController again(registry_);
    QVERIFY(again.open(out).ok());
    QCOMPARE(saved(again.document()), saved(c.document()));
  }

  // Saving a workflow opened through a symlink writes through it: the link stays a link and the
  // file it points to (in another folder) gets the edit; no stray temporary is left beside either.
  void saveWritesThroughASymlink() {
    QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("real")));
    const QString real = dir.filePath(QStringLiteral("real/work.vgflow"));
    const QString link = dir.filePath(QStringLiteral("link.vgflow"));
    {
      DocumentController c(registry_);
      buildChain(c);
      QVERIFY(c.save(real).ok());
    }
    QVERIFY(QFile::link(QStringLiteral("real/work.vgflow"), link));  // relative, as `ln -s` makes it
    gui::MainWindow window(registry_, {dir.filePath(QStringLiteral("recovery")), 3600000, false});
    QVERIFY(window.openFile(link));
    QVERIFY(window.controller()->setParam("Scale", "factor", 4.5).ok());
    QAction* save = findAction(window, [](const QString& t) { return t == QLatin1String("&Save"); });
    QVERIFY(save);
    save->trigger();
    QVERIFY(!window.controller()->isModified());
    QVERIFY(QFileInfo(link).isSymLink());
    QCOMPARE(readAll(real).toStdString(), saved(window.controller()->document()));
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden | QDir::System).size(), 1);  // the link
    QCOMPARE(QDir(dir.filePath(QStringLiteral("real"))).entryList(QDir::Files | QDir::Hidden).size(), 1);
  }

  void autosaveAndRecovery() {
    const QString dir = tmp_.filePath(QStringLiteral("recovery"));
    const QString original = tmp_.filePath(QStringLiteral("work.vgflow"));
    std::string expected;
    {
      DocumentController c(registry_);
      gui::Autosave autosave(&c, dir, 3600000);
      QVERIFY(!autosave.autosaveNow());  // nothing to save yet
      buildChain(c);
      QVERIFY(c.save(original).ok());
      QVERIFY(!QFile::exists(autosave.recoveryPath()));
      QVERIFY(c.setParam("Scale", "factor", 9.0).ok());
      QVERIFY(autosave.autosaveNow());
      QVERIFY(QFile::exists(autosave.recoveryPath()));
      expected = saved(c.document());
      // Simulated crash: the controller and autosave go away without discard().
    }
    const auto entries = gui::Autosave::findRecoveries(dir);
    QCOMPARE(entries.size(), 1);
    QCOMPARE(entries.front().originalPath, QFileInfo(original).absoluteFilePath());
    DocumentController restored(registry_);
    QString error;
    QVERIFY2(gui::Autosave::restore(&restored, entries.front(), &error), qPrintable(error));
    QCOMPARE(saved(restored.document()), expected);
    QVERIFY(restored.isModified());
    QCOMPARE(restored.filePath(), QFileInfo(original).absoluteFilePath());
    QVERIFY(gui::Autosave::findRecoveries(dir).isEmpty());
    // A clean save removes the session's recovery file.
    gui::Autosave session(&restored, dir, 3600000);
    QVERIFY(restored.setParam("Scale", "factor", 4.0).ok());
    QVERIFY(session.autosaveNow());
    QVERIFY(restored.save(original).ok());
    QVERIFY(!QFile::exists(session.recoveryPath()));
  }

  void windowFilesRecentAndDrop() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-files"), 3600000, false});
    buildChain(*window.controller());
    QVERIFY(window.isWindowModified() || window.controller()->isModified());
    const QString path = tmp_.filePath(QStringLiteral("window.vgflow"));
    QVERIFY(window.saveTo(path));
    QVERIFY(!window.controller()->isModified());
    QCOMPARE(window.recentFiles().front(), QFileInfo(path).absoluteFilePath());
    QVERIFY(window.windowTitle().startsWith(QStringLiteral("window.vgflow")));
    QVERIFY(!window.openFile(tmp_.filePath(QStringLiteral("missing.vgflow"))));  // error, no crash
    // Dropping a .vgflow file opens it.
    gui::MainWindow other(registry_, {tmp_.filePath("rec-files2"), 3600000, false});
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(path)});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&other, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&other, &drop);
    QCOMPARE(other.controller()->filePath(), QFileInfo(path).absoluteFilePath());
    QCOMPARE(saved(other.controller()->document()), saved(window.controller()->document()));
    QCOMPARE(other.scene()->nodeItemCount(), std::size_t(3));
  }

  // Dropping a file while a node of the current document is selected: the old items go (no crash
  // from selection listeners looking them up), nothing stays selected (the new document has a node
  // of the same id), the inspector is empty, and no pixel of the old nodes is left on the canvas.
  void dropOpenLeavesNoGhost() {
    gui::MainWindow window(registry_, {tmp_.filePath("rec-ghost"), 3600000, false});
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    buildChain(*window.controller());
    const QString a = tmp_.filePath(QStringLiteral("ghost-a.vgflow"));
    QVERIFY(window.saveTo(a));
    DocumentController other(registry_);
    QVERIFY(other.addNode("Number", {2000, 900}).ok());
    const QString b = tmp_.filePath(QStringLiteral("ghost-b.vgflow"));
    QVERIFY(other.save(b).ok());
    QVERIFY(window.openFile(a));
    window.scene()->selectNodes({"Number", "Scale"});
    QCOMPARE(window.inspector()->nodeId(), std::string("Number"));
    const QRectF oldScale = window.scene()->nodeItem("Scale")->sceneBoundingRect();
    dropFile(window, b);
    QCOMPARE(window.controller()->filePath(), QFileInfo(b).absoluteFilePath());
    QCOMPARE(window.scene()->nodeItemCount(), std::size_t(1));
    QCOMPARE(window.scene()->connectionItemCount(), std::size_t(0));
    QVERIFY(window.scene()->selectedNodeIds().empty());
    QVERIFY(window.scene()->selectedItems().isEmpty());
    QCOMPARE(window.inspector()->nodeId(), std::string());
    int nodeItems = 0;
    for (QGraphicsItem* item : window.scene()->items()) nodeItems += item->type() == gui::NodeItem::Type ? 1 : 0;
    QCOMPARE(nodeItems, 1);
    // Where Scale was drawn, the canvas shows only background now.
    window.view()->centerOn(oldScale.center());
    QApplication::processEvents();
    const QImage shot = window.view()->viewport()->grab().toImage();
    const QRect where = window.view()->mapFromScene(oldScale).boundingRect();
    const QColor body(0x2b, 0x2d, 0x33);
    int bodyPixels = 0;
    for (int y = where.top(); y <= where.bottom(); y += 2) {
      for (int x = where.left(); x <= where.right(); x += 2) {
        const QPoint p(int(x * shot.devicePixelRatio()), int(y * shot.devicePixelRatio()));
        if (shot.rect().contains(p) && shot.pixelColor(p) == body) ++bodyPixels;
      }
    }
    QCOMPARE(bodyPixels, 0);
  }

  // ---- files with problems open, with the problems marked

  // One dangling link: the file opens (dropped on the window), the link is dropped and listed once
  // in the log, the node shows an error until the input is connected again.
  void danglingLinkOpensMarked() {
    const QString path = tmp_.filePath(QStringLiteral("dangling.vgflow"));
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"({"format":"vidgraph-workflow","version":1,"nodes":[
        {"id":"Number","type":"Number"},
        {"id":"Scale","type":"Scale","inputs":{"x":{"node":"gone","output":"value"}}},
        {"id":"Sink","type":"Sink","inputs":{"value":{"node":"Scale","output":"out"}}}]})");
    }
    gui::MainWindow window(registry_, {tmp_.filePath("rec-dangling"), 3600000, false});
    dropFile(window, path);
    DocumentController* c = window.controller();
    QCOMPARE(c->filePath(), QFileInfo(path).absoluteFilePath());
    QCOMPARE(window.scene()->nodeItemCount(), std::size_t(3));
    QVERIFY(!c->document().find_node("Scale")->inputs.count("x"));
    QCOMPARE(c->document().find_node("Sink")->inputs.at("value").node, std::string("Scale"));
    gui::NodeItem* scale = window.scene()->nodeItem("Scale");
    QVERIFY(scale);
    QCOMPARE(scale->problems().size(), 1);
    QVERIFY2(scale->problems().front().contains(QLatin1String("input 'x'")), qPrintable(scale->problems().front()));
    QVERIFY(window.scene()->nodeItem("Number")->problems().isEmpty());
    const QStringList lines = window.logPanel()->toPlainText().split(QLatin1Char('\n'));
    QStringList about;
    for (const QString& l : lines) {
      if (l.contains(QLatin1String("'gone'"))) about << l;
    }
    QCOMPARE(about.size(), 1);
    QCOMPARE(about.front().count(QLatin1String("node 'Scale'")), 1);  // said once, not repeated
    QCOMPARE(about.front().count(QLatin1String("dangling.vgflow")), 1);
    QVERIFY(window.statusBar()->currentMessage().contains(QLatin1String("1 problem")));
    // The user fixes it: connect the input; the error goes; undo brings it back.
    QVERIFY(c->connectPorts("Number", "value", "Scale", "x").ok());
    QVERIFY(scale->problems().isEmpty());
    c->undoStack()->undo();
    QCOMPARE(window.scene()->nodeItem("Scale")->problems().size(), 1);
  }

  // Bad params are reported on open, one line each, and the inspector shows them as invalid.
  void badParamsReportedAndShownInvalid() {
    const QString path = tmp_.filePath(QStringLiteral("badparams.vgflow"));
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(R"({"format":"vidgraph-workflow","version":1,"nodes":[
        {"id":"slow","type":"Slow","params":{"steps":"eight"}},
        {"id":"s","type":"Scale","params":{"factor":1000}}]})");
    }
    gui::MainWindow window(registry_, {tmp_.filePath("rec-badparams"), 3600000, false});
    QVERIFY(window.openFile(path));
    DocumentController* c = window.controller();
    QCOMPARE(c->loadWarnings().size(), 2);
    const QStringList lines = window.logPanel()->toPlainText().split(QLatin1Char('\n'));
    int steps = 0, factor = 0;
    for (const QString& l : lines) {
      QVERIFY2(l.count(QLatin1String("param '")) <= 1, qPrintable(l));  // listed apart, not run together
      steps += l.contains(QLatin1String("param 'steps'")) && l.contains(QLatin1String("node 'slow'")) ? 1 : 0;
      factor += l.contains(QLatin1String("param 'factor'")) && l.contains(QLatin1String("node 's'")) ? 1 : 0;
    }
    QCOMPARE(steps, 1);
    QCOMPARE(factor, 1);
    QVERIFY(window.statusBar()->currentMessage().contains(QLatin1String("2 problems")));
    QCOMPARE(window.scene()->nodeItem("slow")->problems().size(), 1);
    window.scene()->selectNodes({"slow"});
    gui::ParamEditor* e = window.inspector()->editor("steps");
    QVERIFY(e);
    QVERIFY(e->isInvalid());
    auto* spin = e->findChild<QDoubleSpinBox*>();
    QVERIFY(spin);
    QVERIFY2(spin->text().contains(QLatin1String("invalid")) && spin->text().contains(QLatin1String("eight")),
             qPrintable(spin->text()));
    QVERIFY(c->setParam("slow", "steps", 8).ok());  // fixed: no longer invalid, no longer an error
    QVERIFY(!e->isInvalid());
    QCOMPARE(spin->value(), 8.0);
    QVERIFY(window.scene()->nodeItem("slow")->problems().isEmpty());
  }

  // Opening a video says what it is, not "not valid UTF-8".
  void openingAVideoSaysWhatItIs() {
    const QString path = tmp_.filePath(QStringLiteral("clip.mp4"));
    {
      QFile f(path);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray("\0\0\0\x20" "ftypisom\0\0\x02\0isomiso2avc1mp41\xff\xfe\0\x01", 36));
    }
    gui::MainWindow window(registry_, {tmp_.filePath("rec-mp4"), 3600000, false});
    QVERIFY(!window.openFile(path));
    const QString log = window.logPanel()->toPlainText();
    QVERIFY2(log.contains(QLatin1String("an MP4 video, not a Vidgraph workflow")), qPrintable(log));
    QVERIFY2(!log.contains(QLatin1String("UTF-8")), qPrintable(log));
  }

  // A ComfyUI workflow opens as an import: untitled and unsaved (Save asks where), its report in the
  // log, the ComfyUI file never written.
  void openingAComfyWorkflowImportsIt() {
    const QString path = tmp_.filePath(QStringLiteral("video_wan2_2_5B_ti2v_api.json"));
    const std::string text = comfy_test::ti2v_5b_api().dump(2);
    std::ofstream(path.toStdString()) << text;
    gui::MainWindow window(registry_, {tmp_.filePath("rec-comfy"), 3600000, false});
    QVERIFY(window.openFile(path));
    const gui::DocumentController* c = window.controller();
    QCOMPARE(c->importedFrom(), path);
    QVERIFY(c->filePath().isEmpty());
    QVERIFY(c->isModified());
    QVERIFY(c->document().find_node("sampler") != nullptr);
    const QString log = window.logPanel()->toPlainText();
    QVERIFY2(log.contains(QLatin1String("ComfyUI node 3 (KSampler)")), qPrintable(log));
    std::ifstream in(path.toStdString(), std::ios::binary);
    QCOMPARE(std::string(std::istreambuf_iterator<char>(in), {}), text);
    QCOMPARE(c->sharedSource(), path);  // downloaded: runs write only inside the output folder
  }

  // A ComfyUI workflow with its sampling in a subgraph opens with the instance, which opens in turn
  // to the nodes its inner ComfyUI nodes became.
  void openingAComfySubgraphShowsItsInstance() {
    const QString path = tmp_.filePath(QStringLiteral("video_wan2_2_5B_ti2v_subgraph.json"));
    const nlohmann::json file = comfy_test::wrap_in_subgraph(comfy_test::ti2v_5b_ui(), {6, 7, 3}, 90,
                                                             "0e9d8c7b-6a5f-4e3d-2c1b-0a9f8e7d6c5b", "Sampling");
    std::ofstream(path.toStdString()) << file.dump(2);
    gui::MainWindow window(registry_, {tmp_.filePath("rec-comfy-sub"), 3600000, false});
    QVERIFY(window.openFile(path));
    gui::DocumentController* c = window.controller();
    const engine::Node* instance = c->document().find_node("Sampling");
    QVERIFY(instance && instance->type == engine::kSubgraphType);
    QVERIFY(window.scene()->nodeItem("Sampling"));
    QCOMPARE(window.scene()->nodeItem("Sampling")->title(), QStringLiteral("Sampling"));
    QVERIFY(c->enterSubgraph("Sampling").ok());
    QVERIFY(window.scene()->nodeItem("sampler") && window.scene()->nodeItem("prompt") && window.scene()->nodeItem("encode"));
    QCOMPARE(c->breadcrumb(), QStringList({QStringLiteral("Untitled"), QStringLiteral("Sampling")}));
    QVERIFY(c->leaveSubgraph().ok());
    QCOMPARE(c->undoStack()->count(), 0);  // looking inside changed nothing
  }

  // A workflow from a shared file stays shared through a crash: the recovery carries its origin,
  // and a recovery whose sidecar is gone restores as shared too.
  void autosaveKeepsTheSharedOrigin() {
    const QString dir = tmp_.filePath(QStringLiteral("recovery-shared"));
    const QString source = tmp_.filePath(QStringLiteral("from-a-stranger.mp4"));
    const QString orphan = dir + QStringLiteral("/recovery-999999998-1.vgflow");  // no process, no sidecar
    gui::DocumentController c(registry_);
    gui::Autosave autosave(&c, dir, 3600000);
    buildChain(c);
    c.setSharedSource(source);
    QVERIFY(autosave.autosaveNow());
    QVERIFY(QFile::copy(autosave.recoveryPath(), orphan));
    const auto entries = gui::Autosave::findRecoveries(dir);
    QCOMPARE(entries.size(), 2);
    for (const gui::RecoveryEntry& e : entries) {
      gui::DocumentController restored(registry_);
      QString error;
      QVERIFY2(gui::Autosave::restore(&restored, e, &error), qPrintable(error));
      QCOMPARE(restored.sharedSource(), e.recoveryPath == orphan ? orphan : source);
    }
  }

  // ---- the unsaved-changes prompt, through the real window and its real QMessageBox

  void unsavedChangesPrompt_data() {
    QTest::addColumn<QString>("action");
    QTest::addColumn<QMessageBox::StandardButton>("answer");
    for (const char* action : {"close", "drop", "new", "recent"}) {
      QTest::newRow(qPrintable(QStringLiteral("%1, cancel").arg(action))) << action << QMessageBox::Cancel;
      QTest::newRow(qPrintable(QStringLiteral("%1, discard").arg(action))) << action << QMessageBox::Discard;
      QTest::newRow(qPrintable(QStringLiteral("%1, save").arg(action))) << action << QMessageBox::Save;
    }
  }

  void unsavedChangesPrompt() {
    QFETCH(QString, action);
    QFETCH(QMessageBox::StandardButton, answer);
    FileWindow f;
    openFileWindow(f);
    if (QTest::currentTestFailed()) return;
    DocumentController* c = f.window->controller();
    const QByteArray onDisk = readAll(f.work);
    QVERIFY(c->setParam("Scale", "factor", 9.0).ok());
    QVERIFY(c->isModified());
    const std::string edited = saved(c->document());
    QVERIFY(edited != onDisk.toStdString());
    QVERIFY(f.window->autosave()->autosaveNow());
    const QString recovery = f.window->autosave()->recoveryPath();
    QVERIFY(QFile::exists(recovery));

    DialogAnswerer answerer({answer});
    const bool proceeded = trigger(f, action);

    QCOMPARE(answerer.seen().size(), 1);  // exactly one prompt, and no other dialog
    QCOMPARE(answerer.seen().front().title, QStringLiteral("Unsaved changes"));
    QVERIFY2(answerer.seen().front().text.contains(QStringLiteral("work.vgflow")), qPrintable(answerer.seen().front().text));
    QVERIFY(answerer.seen().front().answered);
    if (answer == QMessageBox::Cancel) {
      QVERIFY(!proceeded);
      QVERIFY(f.window->isVisible());
      QVERIFY(c->isModified());
      QVERIFY(f.window->isWindowModified());
      QCOMPARE(c->filePath(), f.work);
      QCOMPARE(QString::fromStdString(saved(c->document())), QString::fromStdString(edited));
      QCOMPARE(readAll(f.work), onDisk);
      QVERIFY(QFile::exists(recovery));  // the edits are still unsaved: their recovery stays
      return;
    }
    QVERIFY(proceeded);
    QVERIFY(!QFile::exists(recovery));
    if (answer == QMessageBox::Discard) {
      QCOMPARE(readAll(f.work), onDisk);
      return;
    }
    QCOMPARE(QString::fromUtf8(readAll(f.work)), QString::fromStdString(edited));  // Save wrote the edits
    auto reloaded = engine::load_workflow_file(f.work.toStdString());
    QVERIFY(reloaded.ok());
    QCOMPARE(reloaded.value().document.find_node("Scale")->params["factor"].get<double>(), 9.0);
  }

  void noPromptWithoutUnsavedEdits_data() {
    QTest::addColumn<QString>("action");
    for (const char* action : {"close", "drop", "new", "recent"}) QTest::newRow(action) << action;
  }

  void noPromptWithoutUnsavedEdits() {
    QFETCH(QString, action);
    FileWindow f;
    openFileWindow(f);
    if (QTest::currentTestFailed()) return;
    const QByteArray onDisk = readAll(f.work);
    DialogAnswerer answerer({QMessageBox::Cancel});  // would stop the action if a prompt came
    QVERIFY(trigger(f, action));
    QCOMPARE(answerer.seen().size(), 0);
    QCOMPARE(readAll(f.work), onDisk);
  }

  // Save on an untitled document goes through the save-as file dialog; cancelling it cancels the
  // close.
  void saveUntitledAsksForAFileName_data() {
    QTest::addColumn<bool>("giveName");
    QTest::newRow("file name given") << true;
    QTest::newRow("file dialog cancelled") << false;
  }

  void saveUntitledAsksForAFileName() {
    QFETCH(bool, giveName);
    QTemporaryDir dir;
    QSettings().remove(QStringLiteral("recentFiles"));
    const QString path = QFileInfo(dir.filePath(QStringLiteral("untitled-saved.vgflow"))).absoluteFilePath();
    gui::MainWindow window(registry_, {dir.filePath(QStringLiteral("recovery")), 3600000, false});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    buildChain(*window.controller());
    QVERIFY(window.controller()->filePath().isEmpty());
    const std::string edited = saved(window.controller()->document());
    DialogAnswerer answerer({QMessageBox::Save}, giveName ? path : QString());
    const bool closed = window.close();
    QCOMPARE(answerer.seen().size(), 2);
    QCOMPARE(answerer.seen().at(0).kind, QStringLiteral("message"));
    QVERIFY(answerer.seen().at(0).text.contains(QStringLiteral("Untitled")));
    QCOMPARE(answerer.seen().at(1).kind, QStringLiteral("file"));
    // An untitled document with no recent files starts in Documents (or home), not the working folder.
    const QString documents = QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
    QCOMPARE(answerer.seen().at(1).text, QFileInfo(documents).isDir() ? documents : QDir::homePath());
    if (!giveName) {
      QVERIFY(!closed);
      QVERIFY(window.isVisible());
      QVERIFY(window.controller()->isModified());
      QVERIFY(!QFile::exists(path));
      return;
    }
    QVERIFY(closed);
    QVERIFY(!window.isVisible());
    QCOMPARE(window.controller()->filePath(), path);
    QCOMPARE(QString::fromUtf8(readAll(path)), QString::fromStdString(edited));
  }

  // ---- the restore offer at start (main() calls startUp(), which offers it before opening any file)

  void restoreOffer_data() {
    QTest::addColumn<QMessageBox::StandardButton>("answer");
    QTest::newRow("yes: restore") << QMessageBox::Yes;
    QTest::newRow("no: keep for later") << QMessageBox::No;
    QTest::newRow("discard: delete it") << QMessageBox::Discard;
  }

  void restoreOffer() {
    QFETCH(QMessageBox::StandardButton, answer);
    QTemporaryDir dir;
    const QString recoveryDir = dir.filePath(QStringLiteral("recovery"));
    const QString original = QFileInfo(dir.filePath(QStringLiteral("crashed.vgflow"))).absoluteFilePath();
    std::string expected;
    QString recovery;
    {  // A session that crashes: edits autosaved, then gone without a normal close (no discard()).
      DocumentController c(registry_);
      gui::Autosave autosave(&c, recoveryDir, 3600000);
      buildChain(c);
      QVERIFY(c.save(original).ok());
      QVERIFY(c.setParam("Scale", "factor", 9.0).ok());
      QVERIFY(autosave.autosaveNow());
      expected = saved(c.document());
      recovery = autosave.recoveryPath();
    }
    QVERIFY(QFile::exists(recovery));
    const QByteArray originalOnDisk = readAll(original);

    gui::MainWindow window(registry_, {recoveryDir, 3600000, false});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    DialogAnswerer answerer({answer});
    const bool restored = window.offerRecovery();
    QCOMPARE(answerer.seen().size(), 1);
    QCOMPARE(answerer.seen().front().title, QStringLiteral("Restore unsaved work?"));
    QVERIFY2(answerer.seen().front().text.contains(original), qPrintable(answerer.seen().front().text));
    QCOMPARE(readAll(original), originalOnDisk);  // restoring never writes the original file
    DocumentController* c = window.controller();
    if (answer == QMessageBox::Yes) {
      QVERIFY(restored);
      QCOMPARE(c->document().nodes().size(), std::size_t(3));
      QCOMPARE(c->document().find_node("Scale")->params["factor"].get<double>(), 9.0);
      QCOMPARE(c->document().find_node("Scale")->inputs.at("x").node, std::string("Number"));
      QCOMPARE(c->document().find_node("Sink")->inputs.at("value").node, std::string("Scale"));
      QCOMPARE(QString::fromStdString(saved(c->document())), QString::fromStdString(expected));
      QCOMPARE(window.scene()->nodeItemCount(), std::size_t(3));
      QVERIFY(c->isModified());
      QVERIFY(window.isWindowModified());
      QCOMPARE(c->filePath(), original);
      QVERIFY(!QFile::exists(recovery));  // restored: the window's own autosave takes over
      return;
    }
    QVERIFY(!restored);
    QVERIFY(c->document().nodes().empty());
    QVERIFY(!c->isModified());
    if (answer == QMessageBox::Discard) {
      QVERIFY(!QFile::exists(recovery));
      QVERIFY(gui::Autosave::findRecoveries(recoveryDir).isEmpty());
      return;
    }
    QVERIFY(QFile::exists(recovery));  // No keeps it: the next start offers it again
    answerer.answerNext(QMessageBox::Yes);
    QVERIFY(window.offerRecovery());
    QCOMPARE(answerer.seen().size(), 2);
    QCOMPARE(QString::fromStdString(saved(c->document())), QString::fromStdString(expected));
  }

  // A crash's recovery is offered at start-up also when a file is given on the command line; kept
  // with "No", it is offered again after a clean exit, but not as a fresh "did not close normally".
  void recoveryOfferedWithAFileArgumentAndNotStaleLater() {
    QTemporaryDir dir;
    const QString recoveryDir = dir.filePath(QStringLiteral("recovery"));
    const QString crashed = QFileInfo(dir.filePath(QStringLiteral("crashed.vgflow"))).absoluteFilePath();
    const QString other = QFileInfo(dir.filePath(QStringLiteral("other.vgflow"))).absoluteFilePath();
    QString recovery;
    {  // A session that crashes (no discard()).
      DocumentController c(registry_);
      gui::Autosave autosave(&c, recoveryDir, 3600000);
      buildChain(c);
      QVERIFY(c.save(other).ok());
      QVERIFY(c.save(crashed).ok());
      QVERIFY(c.setParam("Scale", "factor", 9.0).ok());
      QVERIFY(autosave.autosaveNow());
      recovery = autosave.recoveryPath();
    }
    {  // `vidgraph other.vgflow`: the offer comes first; "No" keeps it and the file opens.
      gui::MainWindow window(registry_, {recoveryDir, 3600000, false});
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      DialogAnswerer answerer({QMessageBox::No});
      window.startUp({other});
      QCOMPARE(answerer.seen().size(), 1);
      QVERIFY2(answerer.seen().front().text.contains(QLatin1String("did not close normally")),
               qPrintable(answerer.seen().front().text));
      QCOMPARE(window.controller()->filePath(), other);
      QVERIFY(QFile::exists(recovery));
      QVERIFY(window.close());  // a clean exit
    }
    {  // The next start offers the kept work again, worded as kept, not as a new crash; Yes restores.
      gui::MainWindow window(registry_, {recoveryDir, 3600000, false});
      window.show();
      QVERIFY(QTest::qWaitForWindowExposed(&window));
      DialogAnswerer answerer({QMessageBox::Yes});
      window.startUp({other});
      QCOMPARE(answerer.seen().size(), 1);
      const QString text = answerer.seen().front().text;
      QVERIFY2(!text.contains(QLatin1String("did not close normally")), qPrintable(text));
      QVERIFY2(text.contains(QLatin1String("kept")), qPrintable(text));
      QCOMPARE(window.controller()->filePath(), crashed);  // the restored work stays in the window
      QCOMPARE(window.controller()->document().find_node("Scale")->params["factor"].get<double>(), 9.0);
      QVERIFY(!QFile::exists(recovery));
    }
  }

  void noRestoreOfferWithoutRecoveries() {
    QTemporaryDir dir;
    const QString recoveryDir = dir.filePath(QStringLiteral("recovery"));
    {  // A session that ends normally leaves nothing behind.
      DocumentController c(registry_);
      gui::Autosave autosave(&c, recoveryDir, 3600000);
      buildChain(c);
      QVERIFY(autosave.autosaveNow());
      autosave.discard();
    }
    gui::MainWindow window(registry_, {recoveryDir, 3600000, false});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    DialogAnswerer answerer({QMessageBox::Yes});
    QVERIFY(!window.offerRecovery());
    QCOMPARE(answerer.seen().size(), 0);
    QVERIFY(window.controller()->document().nodes().empty());
  }
  // ---- examples and the Open dialog

  // File ▸ Open Example lists the folder's workflows by name; choosing one opens it untitled and
  // unmodified (Save asks where), the file itself untouched; with unsaved edits the prompt comes first.
  void examplesMenuOpensAnUntitledCopy() {
    QTemporaryDir dir;
    const QString examples = dir.filePath(QStringLiteral("workflows"));
    QVERIFY(QDir().mkpath(examples));
    {
      DocumentController c(registry_);
      buildChain(c);
      QVERIFY(c.save(examples + QStringLiteral("/number-chain.vgflow")).ok());
      QVERIFY(c.setParam("Scale", "factor", 3.0).ok());
      QVERIFY(c.save(examples + QStringLiteral("/tripled.vgflow")).ok());
    }
    const QByteArray onDisk = readAll(examples + QStringLiteral("/number-chain.vgflow"));
    gui::MainWindowOptions options{dir.filePath(QStringLiteral("recovery")), 3600000, false};
    options.examplesDir = examples;
    gui::MainWindow window(registry_, options);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    auto* menu = window.findChild<QMenu*>(QStringLiteral("examplesMenu"));
    QVERIFY(menu);
    Q_EMIT menu->aboutToShow();
    QStringList titles;
    for (QAction* a : menu->actions()) titles << a->text();
    QCOMPARE(titles, (QStringList{QStringLiteral("number chain"), QStringLiteral("tripled")}));
    menu->actions().front()->trigger();
    DocumentController* c = window.controller();
    QCOMPARE(c->document().nodes().size(), std::size_t(3));
    QVERIFY(c->filePath().isEmpty());
    QVERIFY(!c->isModified());
    QCOMPARE(saved(c->document()), onDisk.toStdString());
    QVERIFY(c->setParam("Scale", "factor", 5.0).ok());
    {
      DialogAnswerer answerer({QMessageBox::Cancel});
      menu->actions().at(1)->trigger();
      QCOMPARE(answerer.messageBoxes(), 1);
    }
    QCOMPARE(c->document().find_node("Scale")->params["factor"].get<double>(), 5.0);  // Cancel kept the edit
    QCOMPARE(readAll(examples + QStringLiteral("/number-chain.vgflow")), onDisk);
  }

  // The session's settings reach the window: its engine's cache budget, and the examples menu reads
  // the session's resources folder.
  // Each editor run is a line of the output folder's history. The History panel lists the runs
  // newest first with their files, compares two runs' settings, and opens a run's workflow with the
  // values it ran with (after asking about unsaved edits); Run again runs it: a third line, the
  // first run's file written again.
  void historyPanelListsComparesAndReopensRuns() {
    QTemporaryDir dir;
    gui::MainWindowOptions options{dir.filePath(QStringLiteral("recovery")), 3600000, false};
    options.runDefaults.output_dir = dir.filePath(QStringLiteral("out")).toStdString();
    gui::MainWindow window(registry_, options);
    DocumentController* c = window.controller();
    QVERIFY(c->addNode("WriteText", {0, 0}).ok());
    QVERIFY(c->setParam("WriteText", "text", "first").ok());
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(gui_test::waitFinished(finished, 10000));
    QVERIFY(c->setParam("WriteText", "text", "second").ok());
    QVERIFY(c->setParam("WriteText", "file", "{output}/two.txt").ok());
    finished.clear();
    QVERIFY(window.runWorkflow());
    QVERIFY(gui_test::waitFinished(finished, 10000));

    gui::HistoryPanel* panel = window.historyPanel();
    QCOMPARE(panel->runCount(), 2);
    QTreeWidget* list = panel->list();
    QCOMPARE(list->topLevelItem(0)->text(0), QStringLiteral("2"));
    QCOMPARE(list->topLevelItem(0)->text(2), QStringLiteral("succeeded"));
    QCOMPARE(list->topLevelItem(0)->text(4), QStringLiteral("two.txt"));
    QCOMPARE(list->topLevelItem(1)->text(4), QStringLiteral("out.txt"));
    list->topLevelItem(0)->setSelected(true);
    list->topLevelItem(1)->setSelected(true);
    QCOMPARE(panel->compareSelected(), QStringLiteral("Run 1 → run 2:\nWriteText.file: \"{output}/out.txt\" -> "
                                                      "\"{output}/two.txt\"\nWriteText.text: \"first\" -> \"second\""));

    list->clearSelection();
    list->topLevelItem(1)->setSelected(true);  // run 1
    QPushButton* rerun = nullptr;
    for (auto* b : panel->findChildren<QPushButton*>()) {
      if (b->text() == QStringLiteral("Run again")) rerun = b;
    }
    QVERIFY(rerun && rerun->isEnabled());
    const QString out1 = dir.filePath(QStringLiteral("out/out.txt"));
    QVERIFY(QFile::remove(out1));  // WriteText never replaces a file
    finished.clear();
    {
      DialogAnswerer answerer({QMessageBox::Discard});  // the edits of run 2 are not saved
      QTest::mouseClick(rerun, Qt::LeftButton);
      QCOMPARE(answerer.seen().size(), 1);
    }
    const engine::Node* node = c->document().find_node("WriteText");
    QVERIFY(node != nullptr);
    QCOMPARE(node->params["text"], nlohmann::json("first"));
    QVERIFY(gui_test::waitFinished(finished, 10000));
    QCOMPARE(panel->runCount(), 3);
    QCOMPARE(list->topLevelItem(0)->text(2), QStringLiteral("succeeded"));
    QCOMPARE(list->topLevelItem(0)->text(4), QStringLiteral("out.txt"));
    QFile again(out1);
    QVERIFY(again.open(QIODevice::ReadOnly));
    QCOMPARE(again.readAll(), QByteArray("first"));
  }

  // A workflow of nested subgraphs opens in the editor (the instance as a node of its own) and runs:
  // the engine expands it, so its inner nodes write their files.
  void subgraphWorkflowOpensAndRuns() {
    QTemporaryDir dir;
    gui::MainWindowOptions options{dir.filePath(QStringLiteral("recovery")), 3600000, false};
    options.runDefaults.output_dir = dir.filePath(QStringLiteral("out")).toStdString();
    gui::MainWindow window(registry_, options);
    QVERIFY(window.openFile(QStringLiteral(VIDGRAPH_SOURCE_DIR "/tests/cli/data/subgraph.vgflow")));
    QVERIFY(window.controller()->document().find_node("notes") != nullptr);
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(gui_test::waitFinished(finished, 10000));
    QFile note(dir.filePath(QStringLiteral("out/note.txt")));
    QVERIFY(note.open(QIODevice::ReadOnly));
    QCOMPARE(note.readAll(), QByteArray("one"));
    QVERIFY(QFile::exists(dir.filePath(QStringLiteral("out/second.txt"))));
  }

  void sessionSettingsReachTheWindow() {
    QTemporaryDir dir;
    const QString resources = dir.filePath(QStringLiteral("resources"));
    QVERIFY(QDir().mkpath(resources + QStringLiteral("/workflows")));
    {
      DocumentController c(registry_);
      buildChain(c);
      QVERIFY(c.save(resources + QStringLiteral("/workflows/from-resources.vgflow")).ok());
    }
    gui::MainWindowOptions options{dir.filePath(QStringLiteral("recovery")), 3600000, false};
    options.engine.cache_budget_bytes = std::size_t(3) << 20;
    options.runDefaults.resources_dir = resources.toStdString();
    gui::MainWindow window(registry_, options);
    QCOMPARE(window.runController()->engine().cache().stats().budget, std::size_t(3) << 20);
    auto* menu = window.findChild<QMenu*>(QStringLiteral("examplesMenu"));
    QVERIFY(menu);
    Q_EMIT menu->aboutToShow();
    QCOMPARE(menu->actions().size(), 1);
    QCOMPARE(menu->actions().front()->text(), QStringLiteral("from resources"));
  }

  // The Open dialog starts in the examples folder while no file was opened or saved yet, then in the
  // folder of the most recent file.
  void openDialogStartsInTheExamplesFolder() {
    QSettings().remove(QStringLiteral("recentFiles"));
    QTemporaryDir dir;
    const QString examples = QFileInfo(dir.filePath(QStringLiteral("workflows"))).absoluteFilePath();
    const QString mine = QFileInfo(dir.filePath(QStringLiteral("mine"))).absoluteFilePath();
    QVERIFY(QDir().mkpath(examples) && QDir().mkpath(mine));
    gui::MainWindowOptions options{dir.filePath(QStringLiteral("recovery")), 3600000, false};
    options.examplesDir = examples;
    gui::MainWindow window(registry_, options);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QAction* open = findAction(window, [](const QString& t) { return t == QStringLiteral("&Open…"); });
    QVERIFY(open);
    {
      DialogAnswerer answerer({});
      open->trigger();
      QCOMPARE(answerer.seen().size(), 1);
      QCOMPARE(answerer.seen().front().kind, QStringLiteral("file"));
      QCOMPARE(answerer.seen().front().text, examples);
    }
    buildChain(*window.controller());
    QVERIFY(window.saveTo(mine + QStringLiteral("/work.vgflow")));
    {
      DialogAnswerer answerer({});
      open->trigger();
      QCOMPARE(answerer.seen().size(), 1);
      QCOMPARE(answerer.seen().front().text, mine);
    }
  }
#ifdef VIDGRAPH_GUI_HAVE_NODES
  // An image dropped on the canvas becomes a Load Image node with its path, where it was dropped,
  // in one undo step; a file of another kind is refused at drag-enter.
  void droppedImageMakesALoadImageNode() {
    const QString image = QStringLiteral(VIDGRAPH_SOURCE_DIR "/resources/samples/landscape.png");
    QVERIFY(QFile::exists(image));
    gui::MainWindow window(registry_, {tmp_.filePath("rec-image-drop"), 3600000, false});
    window.resize(1024, 700);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QWidget* viewport = window.view()->viewport();
    const QPoint inView = viewport->rect().center();
    const QPointF expected = window.view()->mapToScene(inView);
    const QPoint inWindow = viewport->mapTo(&window, inView);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(image)});
    QDragEnterEvent enter(inWindow, Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&window, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(inWindow), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&window, &drop);
    DocumentController* c = window.controller();
    QCOMPARE(c->document().nodes().size(), std::size_t(1));
    const engine::Node& node = c->document().nodes().front();
    QCOMPARE(node.type, std::string("LoadImage"));
    QCOMPARE(node.params["path"].get<std::string>(), image.toStdString());
    QVERIFY(QLineF(c->nodePosition(node.id), expected).length() < 1.0);
    QCOMPARE(c->undoStack()->count(), 1);
    QCOMPARE(window.scene()->selectedNodeIds(), std::vector<std::string>{node.id});
    QMimeData text;
    text.setUrls({QUrl::fromLocalFile(tmp_.filePath(QStringLiteral("notes.txt")))});
    QDragEnterEvent refused(inWindow, Qt::CopyAction, &text, Qt::LeftButton, Qt::NoModifier);
    refused.setAccepted(false);
    QApplication::sendEvent(&window, &refused);
    QVERIFY(!refused.isAccepted());
  }
#endif  // VIDGRAPH_GUI_HAVE_NODES
#if defined(VIDGRAPH_GUI_HAVE_NODES) && defined(VIDGRAPH_HAVE_MEDIA)
  // An MP4 and a PNG-sequence folder that Vidgraph exported carry their workflow: dropping either
  // (or opening it) restores the graph as an untitled, unmodified document; an MP4 without one is
  // refused with a sentence saying so, and the document stays.
  void outputsGiveTheirWorkflowBack() {
    QTemporaryDir dir;
    DocumentController source(registry_);
    buildChain(source);
    QVERIFY(source.setParam("Scale", "factor", 7.0).ok());
    const std::string workflow = saved(source.document());
    nodes::Frames frames{2, 32, 32, std::vector<std::uint8_t>(2 * 32 * 32 * 3, 90)};
    auto exportTo = [&](const QString& name, nodes::media::VideoFormat format, const std::string& embedded) {
      nodes::media::ExportOptions options;
      options.path = dir.filePath(name).toStdString();
      options.format = format;
      options.workflow_json = embedded;
      std::string error;
      if (!nodes::media::export_video(frames, options, &error)) qWarning("export: %s", error.c_str());
      return dir.filePath(name);
    };
    const QString mp4 = exportTo(QStringLiteral("made.mp4"), nodes::media::VideoFormat::Mp4, workflow);
    const QString sequence = exportTo(QStringLiteral("made-frames"), nodes::media::VideoFormat::PngSequence, workflow);
    const QString bare = exportTo(QStringLiteral("bare.mp4"), nodes::media::VideoFormat::Mp4, {});
    for (const QString& output : {mp4, sequence}) {
      gui::MainWindow window(registry_, {dir.filePath(QStringLiteral("recovery")), 3600000, false});
      dropFile(window, output);
      DocumentController* c = window.controller();
      QCOMPARE(saved(c->document()), workflow);
      QVERIFY(c->filePath().isEmpty());
      QVERIFY(!c->isModified());
      QCOMPARE(window.scene()->nodeItemCount(), std::size_t(3));
    }
    gui::MainWindow window(registry_, {dir.filePath(QStringLiteral("recovery")), 3600000, false});
    QVERIFY(window.openFile(mp4));
    QCOMPARE(window.controller()->document().find_node("Scale")->params["factor"].get<double>(), 7.0);
    QVERIFY(!window.openFile(bare));
    const QString log = window.logPanel()->toPlainText();
    QVERIFY2(log.contains(QLatin1String("holds no Vidgraph workflow")), qPrintable(log));
    QCOMPARE(window.controller()->document().nodes().size(), std::size_t(3));  // kept
  }

  // The preview panel's Export… (its file dialog answered) embeds the workflow of the run that made
  // the clip, as Export Video does: an edit after the run is not in it; opening the file gives the
  // run's graph back.
  void previewExportEmbedsTheRunsWorkflow() {
    QTemporaryDir dir;
    const QString mp4 = dir.filePath(QStringLiteral("preview.mp4"));
    gui::MainWindow window(registry_, {dir.filePath(QStringLiteral("recovery")), 3600000, false});
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    DocumentController* c = window.controller();
    buildChain(*c);
    QVERIFY(c->addNode("GuiPreview", {600, 300}).ok());
    QVERIFY(c->connectPorts("Scale", "out", "GuiPreview", "x").ok());
    const std::string ran = saved(c->document());
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    QVERIFY(window.runWorkflow());
    QVERIFY(gui_test::waitFinished(finished, 10000));
    QCOMPARE(window.player()->frameCount(), 4);
    QVERIFY(c->setParam("Scale", "factor", 9.0).ok());  // after the run: not what made the clip
    QPushButton* exportButton = nullptr;
    for (auto* b : window.player()->findChildren<QPushButton*>()) {
      if (b->text() == QStringLiteral("Export…")) exportButton = b;
    }
    QVERIFY(exportButton && exportButton->isEnabled());
    {
      DialogAnswerer answerer({}, mp4);
      QTest::mouseClick(exportButton, Qt::LeftButton);
      QCOMPARE(answerer.seen().size(), 1);
    }
    QVERIFY2(QFileInfo(mp4).size() > 0, qPrintable(window.statusBar()->currentMessage()));
    gui::MainWindow back(registry_, {dir.filePath(QStringLiteral("recovery-back")), 3600000, false});
    QVERIFY(back.openFile(mp4));
    QCOMPARE(saved(back.controller()->document()), ran);
    QCOMPARE(back.scene()->nodeItemCount(), std::size_t(4));
  }

  // Compare videos with two runs selected: their videos side by side in the preview player, the
  // older run on the left, over their common frames (an MP4 of 3 frames and a PNG sequence of 2).
  void historyComparesTwoRunsVideos() {
    QTemporaryDir dir;
    gui::MainWindowOptions options{dir.filePath(QStringLiteral("recovery")), 3600000, false};
    options.runDefaults.output_dir = dir.filePath(QStringLiteral("out")).toStdString();
    QVERIFY(QDir().mkpath(dir.filePath(QStringLiteral("out"))));
    auto write_run = [&](const QString& name, nodes::media::VideoFormat format, int count, std::uint8_t grey) {
      nodes::Frames frames{count, 32, 16, std::vector<std::uint8_t>(std::size_t(count) * 32 * 16 * 3, grey)};
      nodes::media::ExportOptions export_options;
      export_options.path = dir.filePath(QStringLiteral("out/") + name).toStdString();
      export_options.format = format;
      std::string error;
      QVERIFY2(nodes::media::export_video(frames, export_options, &error), error.c_str());
      engine::RunResult result;
      result.files.push_back({"export", export_options.path});
      QVERIFY(engine::append_run_history(options.runDefaults.output_dir,
                                         engine::run_history_entry(result, "{}", "", std::chrono::system_clock::now())));
    };
    write_run(QStringLiteral("a.mp4"), nodes::media::VideoFormat::Mp4, 3, 40);
    write_run(QStringLiteral("b-frames"), nodes::media::VideoFormat::PngSequence, 2, 200);
    gui::MainWindow window(registry_, options);
    gui::HistoryPanel* panel = window.historyPanel();
    QCOMPARE(panel->runCount(), 2);
    // Each run shows its video's first frame: run 2's light PNG sequence on top, run 1's dark MP4 below.
    const QImage light = panel->list()->topLevelItem(0)->icon(0).pixmap(QSize(64, 36)).toImage();
    const QImage dark = panel->list()->topLevelItem(1)->icon(0).pixmap(QSize(64, 36)).toImage();
    QVERIFY(!light.isNull() && !dark.isNull());
    QVERIFY(qGray(light.pixel(light.width() / 2, light.height() / 2)) > 160);
    QVERIFY(qGray(dark.pixel(dark.width() / 2, dark.height() / 2)) < 80);
    panel->list()->topLevelItem(0)->setSelected(true);
    panel->list()->topLevelItem(1)->setSelected(true);
    QPushButton* compare = nullptr;
    for (auto* b : panel->findChildren<QPushButton*>()) {
      if (b->text() == QStringLiteral("Compare videos")) compare = b;
    }
    QVERIFY(compare && compare->isEnabled());
    QTest::mouseClick(compare, Qt::LeftButton);
    QCOMPARE(window.player()->frameCount(), 2);
    const QImage frame = window.player()->clip().frames.front();
    QCOMPARE(frame.size(), QSize(64, 16));
    QVERIFY(qGray(frame.pixel(8, 8)) < 80);    // run 1's dark frame on the left
    QVERIFY(qGray(frame.pixel(40, 8)) > 160);  // run 2's light one on the right
  }

  // A workflow opened from a shared file (here a PNG sequence's metadata.json) that writes outside
  // the output folder runs only after the user says Yes to a box naming the path (default No).
  void sharedWorkflowAsksBeforeWritingOutside() {
    QTemporaryDir dir;
    const QString target = dir.filePath(QStringLiteral("elsewhere/stranger.txt"));
    const nlohmann::json workflow{
        {"format", "vidgraph-workflow"},
        {"version", 1},
        {"nodes", nlohmann::json::array({{{"id", "w"}, {"type", "WriteText"},
                                          {"params", {{"file", target.toStdString()}, {"text", "hi"}}}}})}};
    const QString sequence = dir.filePath(QStringLiteral("shared-frames"));
    QVERIFY(QDir().mkpath(sequence));
    std::ofstream(sequence.toStdString() + "/metadata.json")
        << nlohmann::json{{"format", "vidgraph-png-sequence"}, {"workflow", workflow.dump()}}.dump();
    gui::MainWindow window(registry_, {dir.filePath(QStringLiteral("recovery")), 3600000, false});
    QVERIFY(window.openFile(sequence));
    {
      DialogAnswerer answerer({QMessageBox::No});
      QVERIFY(!window.runWorkflow());
      QCOMPARE(answerer.seen().size(), 1);
      QVERIFY2(answerer.seen()[0].text.contains(target), qPrintable(answerer.seen()[0].text));
    }
    QVERIFY(!QFile::exists(target));
    QSignalSpy finished(window.runController(), &gui::RunController::runFinished);
    {
      DialogAnswerer answerer({QMessageBox::Yes});
      QVERIFY(window.runWorkflow());
      QCOMPARE(answerer.seen().size(), 1);
    }
    QVERIFY(gui_test::waitFinished(finished, 10000));
    QVERIFY2(QFile::exists(target), qPrintable(window.logPanel()->toPlainText()));
  }
#endif
};

QTEST_MAIN(tst_GuiFiles)
#include "tst_gui_files.moc"
