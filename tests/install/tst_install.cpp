// Install test: `cmake --install` into a staging prefix, then the installed programs run from there
// with the build tree out of reach (the staged tree is copied to a fresh folder and the build tree's
// plugin and resource folders are never named). Also the Debian package's contents and the desktop
// metadata validators.
#include <QtCore/QDir>
#include <QtCore/QDirIterator>
#include <QtCore/QFileInfo>
#include <QtCore/QProcess>
#include <QtCore/QStandardPaths>
#include <QtCore/QTemporaryDir>
#include <QtTest/QtTest>

namespace {

struct ProcessResult {
  int exit_code = -1;
  QString output;
};

ProcessResult run_process(const QString& program, const QStringList& args, int timeout_ms = 300000,
                          const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess process;
  process.setProcessEnvironment(env);
  process.setProcessChannelMode(QProcess::MergedChannels);
  process.start(program, args);
  ProcessResult result;
  if (!process.waitForStarted(10000)) {
    result.output = QStringLiteral("could not start %1").arg(program);
    return result;
  }
  process.waitForFinished(timeout_ms);
  result.output = QString::fromUtf8(process.readAll());
  result.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  return result;
}

// An environment with no plugin or resource overrides, so only the installed layout is used.
QProcessEnvironment clean_environment() {
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.remove(QStringLiteral("VIDGRAPH_PLUGIN_PATH"));
  return env;
}

}  // namespace

class tst_Install : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir staging_;
  QString prefix_;

 private Q_SLOTS:
  void initTestCase();
  void installedTreeHasTheLayout();
  void installedRunnerListsNodes();
  void installedRunnerRunsTheDemo();
  void desktopMetadataValidates();
  void debianPackageHoldsTheFiles();
};

void tst_Install::initTestCase() {
  QVERIFY(staging_.isValid());
  const QString stage = staging_.filePath(QStringLiteral("stage"));
  const ProcessResult install = run_process(
      QStringLiteral("cmake"),
      {QStringLiteral("--install"), QStringLiteral(VIDGRAPH_BINARY_DIR), QStringLiteral("--prefix"), stage});
  QVERIFY2(install.exit_code == 0, qPrintable(install.output));
  // Move the staged tree so that no path recorded at install time can lead back to it either.
  prefix_ = staging_.filePath(QStringLiteral("moved-prefix"));
  QVERIFY(QDir().rename(stage, prefix_));
}

void tst_Install::installedTreeHasTheLayout() {
  const QStringList expected = {
      QStringLiteral("bin/vidgraph-run"),
      QStringLiteral("bin/vidgraph-attention"),
      QStringLiteral("lib/vidgraph/plugins/libvidgraph_attention.so"),
      QStringLiteral("share/vidgraph/workflows/demo.vgflow"),
      QStringLiteral("share/applications/io.vidgraph.Vidgraph.desktop"),
      QStringLiteral("share/metainfo/io.vidgraph.Vidgraph.metainfo.xml"),
      QStringLiteral("share/icons/hicolor/scalable/apps/io.vidgraph.Vidgraph.svg"),
  };
  for (const QString& path : expected)
    QVERIFY2(QFileInfo::exists(prefix_ + QLatin1Char('/') + path), qPrintable(path + " is not installed"));
#ifdef VIDGRAPH_HAVE_GUI
  QVERIFY(QFileInfo::exists(prefix_ + QStringLiteral("/bin/vidgraph")));
#endif
}

void tst_Install::installedRunnerListsNodes() {
  const ProcessResult nodes = run_process(prefix_ + QStringLiteral("/bin/vidgraph-run"),
                                          {QStringLiteral("nodes")}, 60000, clean_environment());
  QVERIFY2(nodes.exit_code == 0, qPrintable(nodes.output));
  for (const char* type : {"LoadImage", "WanSampler", "ExportVideo"})
    QVERIFY2(nodes.output.contains(QLatin1String(type)), qPrintable(nodes.output));
  const ProcessResult version = run_process(prefix_ + QStringLiteral("/bin/vidgraph-run"),
                                            {QStringLiteral("--version")}, 60000, clean_environment());
  QVERIFY2(version.exit_code == 0, qPrintable(version.output));
  // The build dependencies bring OpenBLAS, which Debian then selects over the reference BLAS.
  QVERIFY2(version.output.contains(QStringLiteral("BLAS: OpenBLAS")), qPrintable(version.output));
  // The loaded plugin is the installed one.
  QVERIFY2(version.output.contains(QStringLiteral("vidgraph_attention")) ||
               version.output.contains(QStringLiteral("attention")),
           qPrintable(version.output));
}

void tst_Install::installedRunnerRunsTheDemo() {
  const QString out = staging_.filePath(QStringLiteral("demo-out"));
  const ProcessResult run = run_process(
      prefix_ + QStringLiteral("/bin/vidgraph-run"),
      {QStringLiteral("run"), prefix_ + QStringLiteral("/share/vidgraph/workflows/demo.vgflow"),
       QStringLiteral("--output-dir"), out},
      600000, clean_environment());
  QVERIFY2(run.exit_code == 0, qPrintable(run.output));
  QDirIterator it(out, {QStringLiteral("*.mp4")}, QDir::Files, QDirIterator::Subdirectories);
  QVERIFY2(it.hasNext(), "the demo wrote no MP4 from the installed tree");
  QVERIFY(QFileInfo(it.next()).size() > 0);
}

void tst_Install::desktopMetadataValidates() {
  const QString validator = QStandardPaths::findExecutable(QStringLiteral("desktop-file-validate"));
  const QString appstream = QStandardPaths::findExecutable(QStringLiteral("appstreamcli"));
  if (validator.isEmpty() || appstream.isEmpty())
    QSKIP("desktop-file-utils or appstream is not installed (both are in packaging/debian-build-deps.txt).");
  const ProcessResult desktop = run_process(
      validator, {prefix_ + QStringLiteral("/share/applications/io.vidgraph.Vidgraph.desktop")});
  QVERIFY2(desktop.exit_code == 0, qPrintable(desktop.output));
  const ProcessResult metainfo = run_process(
      appstream, {QStringLiteral("validate"), QStringLiteral("--no-net"),
                  prefix_ + QStringLiteral("/share/metainfo/io.vidgraph.Vidgraph.metainfo.xml")});
  QVERIFY2(metainfo.exit_code == 0, qPrintable(metainfo.output));
}

void tst_Install::debianPackageHoldsTheFiles() {
  const QString out = staging_.filePath(QStringLiteral("deb"));
  const ProcessResult pack = run_process(
      QStringLiteral("cpack"), {QStringLiteral("--config"),
                                QStringLiteral(VIDGRAPH_BINARY_DIR "/CPackConfig.cmake"),
                                QStringLiteral("-B"), out},
      900000);
  QVERIFY2(pack.exit_code == 0, qPrintable(pack.output));
  const QStringList debs = QDir(out).entryList({QStringLiteral("*.deb")}, QDir::Files);
  QCOMPARE(debs.size(), 1);
  const QString deb = out + QLatin1Char('/') + debs.first();
  const ProcessResult contents = run_process(QStringLiteral("dpkg-deb"), {QStringLiteral("--contents"), deb});
  QVERIFY2(contents.exit_code == 0, qPrintable(contents.output));
  for (const char* path : {"./usr/bin/vidgraph-run", "./usr/lib/vidgraph/plugins/libvidgraph_attention.so",
                           "./usr/share/vidgraph/workflows/demo.vgflow",
                           "./usr/share/applications/io.vidgraph.Vidgraph.desktop",
                           "./usr/share/metainfo/io.vidgraph.Vidgraph.metainfo.xml"})
    QVERIFY2(contents.output.contains(QLatin1String(path)), path);
  const ProcessResult fields = run_process(QStringLiteral("dpkg-deb"), {QStringLiteral("--field"), deb,
                                                                         QStringLiteral("Depends")});
  QVERIFY2(fields.output.contains(QStringLiteral("libtorch")), qPrintable(fields.output));
  QVERIFY2(fields.output.contains(QStringLiteral("libavcodec")), qPrintable(fields.output));
}

QTEST_GUILESS_MAIN(tst_Install)
#include "tst_install.moc"
