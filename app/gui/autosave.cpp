// Autosave (see autosave.h).
#include "gui/autosave.h"

#include <atomic>

#include <QtCore/QCoreApplication>
#include <QtCore/QDir>
#include <QtCore/QFile>
#include <QtCore/QFileInfo>
#include <QtCore/QJsonDocument>
#include <QtCore/QJsonObject>
#include <QtCore/QStandardPaths>

#include "engine/workflow_file.h"
#include "gui/document_controller.h"
#include "gui/gui_log.h"

namespace vidgraph::gui {

namespace {

std::atomic<int> nextSession{1};

QString sidecarPath(const QString& recoveryPath) { return recoveryPath + QStringLiteral(".json"); }

// Another live process owns the file (its window is open). Files named with our own pid are from a
// crashed earlier process that had the same pid, or from this process's closed documents.
bool ownedByOtherProcess(qint64 pid) {
  if (pid == QCoreApplication::applicationPid()) return false;
  return QFileInfo::exists(QStringLiteral("/proc/%1").arg(pid));
}

}  // namespace

Autosave::Autosave(DocumentController* controller, QString dir, int intervalMs, QObject* parent)
    : QObject(parent), controller_(controller), dir_(dir.isEmpty() ? defaultRecoveryDir() : std::move(dir)) {
  path_ = QDir(dir_).filePath(QStringLiteral("recovery-%1-%2.vgflow")
                                  .arg(QCoreApplication::applicationPid())
                                  .arg(nextSession.fetch_add(1)));
  connect(controller_, &DocumentController::documentChanged, this, [this] { pending_ = true; });
  connect(controller_, &DocumentController::modifiedChanged, this, [this](bool modified) {
    pending_ = modified;
    if (!modified) removeRecovery(path_);
  });
  connect(&timer_, &QTimer::timeout, this, [this] { autosaveNow(); });
  timer_.start(intervalMs);
}

Autosave::~Autosave() = default;

QString Autosave::defaultRecoveryDir() {
  return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(QStringLiteral("recovery"));
}

bool Autosave::autosaveNow() {
  if (!pending_ || !controller_->isModified()) return false;
  if (!QDir().mkpath(dir_)) {
    guiLogger()->warn("autosave: cannot create the recovery folder {}", dir_.toStdString());
    return false;
  }
  auto workflow = controller_->workflow();  // with the edits of an open subgraph
  auto status = workflow.ok() ? engine::save_workflow_file(*workflow, path_.toStdString()) : engine::Status(workflow.error());
  if (!status.ok()) {
    guiLogger()->warn("autosave failed: {}", status.error().to_string());
    return false;
  }
  QJsonObject meta{{QStringLiteral("original"), controller_->filePath()},
                   {QStringLiteral("shared_source"), controller_->sharedSource()},
                   {QStringLiteral("saved_at"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
  const QByteArray bytes = QJsonDocument(meta).toJson();
  auto written = engine::write_file_atomic(sidecarPath(path_).toStdString(), std::string_view(bytes.constData(), bytes.size()));
  if (!written.ok()) guiLogger()->warn("autosave: {}", written.error().to_string());
  pending_ = false;
  return true;
}

void Autosave::discard() {
  pending_ = false;
  removeRecovery(path_);
}

void Autosave::removeRecovery(const QString& recoveryPath) {
  QFile::remove(recoveryPath);
  QFile::remove(sidecarPath(recoveryPath));
}

void Autosave::markDeclined(const QString& recoveryPath) {
  QJsonObject meta;
  {
    QFile f(sidecarPath(recoveryPath));
    if (f.open(QIODevice::ReadOnly)) meta = QJsonDocument::fromJson(f.readAll()).object();
  }
  meta.insert(QStringLiteral("declined"), true);
  const QByteArray bytes = QJsonDocument(meta).toJson();
  auto written = engine::write_file_atomic(sidecarPath(recoveryPath).toStdString(),
                                           std::string_view(bytes.constData(), bytes.size()));
  if (!written.ok()) guiLogger()->warn("recovery: {}", written.error().to_string());
}

QList<RecoveryEntry> Autosave::findRecoveries(const QString& dir) {
  QList<RecoveryEntry> out;
  const QDir d(dir);
  for (const QFileInfo& f : d.entryInfoList({QStringLiteral("recovery-*.vgflow")}, QDir::Files, QDir::Time)) {
    const QStringList parts = f.completeBaseName().split(QLatin1Char('-'));
    if (parts.size() >= 2 && ownedByOtherProcess(parts[1].toLongLong())) continue;
    RecoveryEntry e{f.absoluteFilePath(), {}, f.lastModified()};
    e.sharedSource = e.recoveryPath;  // without its sidecar, nothing says the workflow was the user's own
    QFile meta(sidecarPath(e.recoveryPath));
    if (meta.open(QIODevice::ReadOnly)) {
      const QJsonObject o = QJsonDocument::fromJson(meta.readAll()).object();
      e.originalPath = o.value(QStringLiteral("original")).toString();
      e.sharedSource = o.value(QStringLiteral("shared_source")).toString();
      const QDateTime t = QDateTime::fromString(o.value(QStringLiteral("saved_at")).toString(), Qt::ISODate);
      if (t.isValid()) e.savedAt = t;
      e.declined = o.value(QStringLiteral("declined")).toBool();
    }
    out << e;
  }
  return out;
}

bool Autosave::restore(DocumentController* controller, const RecoveryEntry& entry, QString* error) {
  QFile f(entry.recoveryPath);
  if (!f.open(QIODevice::ReadOnly)) {
    if (error) *error = QStringLiteral("cannot read the recovery file %1: %2").arg(entry.recoveryPath, f.errorString());
    return false;
  }
  auto status = controller->loadText(QString::fromUtf8(f.readAll()), entry.originalPath, entry.recoveryPath);
  if (!status.ok()) {
    if (error) *error = QString::fromStdString(status.error().to_string());
    return false;
  }
  controller->setSharedSource(entry.sharedSource);
  removeRecovery(entry.recoveryPath);
  return true;
}

}  // namespace vidgraph::gui
