// Runs a program to its end for the tests: its exit code (-1 when it crashed, did not start or did
// not end in time, in which case it is killed), its stdout and its stderr as text.
#pragma once

#include <QtCore/QProcess>
#include <QtCore/QString>
#include <QtCore/QStringList>

namespace test_common {

struct ProcessOutcome {
  int exit_code = -1;
  QString out, err;
};

// Waits for a started `process` (one that has already ended is read as it is).
inline ProcessOutcome finish_process(QProcess& process, int timeout_ms = 240000) {
  ProcessOutcome r;
  if (process.state() != QProcess::NotRunning && !process.waitForFinished(timeout_ms)) {
    process.kill();
    process.waitForFinished();
    r.err = QStringLiteral("%1 did not finish in %2 s").arg(process.program()).arg(timeout_ms / 1000);
    return r;
  }
  if (process.error() == QProcess::FailedToStart) {
    r.err = QStringLiteral("%1 did not start: %2").arg(process.program(), process.errorString());
    return r;
  }
  r.exit_code = process.exitStatus() == QProcess::NormalExit ? process.exitCode() : -1;
  r.out = QString::fromUtf8(process.readAllStandardOutput());
  r.err = QString::fromUtf8(process.readAllStandardError());
  return r;
}

// `working_dir` empty: the test's own.
inline ProcessOutcome run_process(const QString& program, const QStringList& args, int timeout_ms = 240000,
                                  const QString& working_dir = {}) {
  QProcess process;
  if (!working_dir.isEmpty()) process.setWorkingDirectory(working_dir);
  process.start(program, args);
  process.waitForStarted();
  return finish_process(process, timeout_ms);
}

}  // namespace test_common
