// Autosave: writes the window's unsaved document to a recovery file in a recovery folder, every
// `interval` while it has changes the last autosave did not capture; after a crash, the next start
// finds those files and offers to restore them.
//
// Contract:
//   - recovery files are "<dir>/recovery-<pid>-<n>.vgflow" (the workflow, written atomically through
//     the engine) plus "<same>.json" ({"original": the document's path or "", "shared_source": the
//     shared file it came from or "", "saved_at": ISO time, "declined": true once the user chose to
//     keep it without restoring}); a recovery without a readable sidecar restores as shared;
//   - the file is removed when the document becomes clean (saved, new, opened) and on a normal close
//     (discard()), so files left in the folder belong to sessions that did not end normally;
//   - findRecoveries() skips files of other processes still running (another instance's windows).
#pragma once

#include <QtCore/QDateTime>
#include <QtCore/QList>
#include <QtCore/QObject>
#include <QtCore/QString>
#include <QtCore/QTimer>

namespace vidgraph::gui {

class DocumentController;

struct RecoveryEntry {
  QString recoveryPath;  // the .vgflow recovery file
  QString originalPath;  // the document's file when it crashed ("" = untitled)
  QDateTime savedAt;
  bool declined = false;  // offered before and kept ("No"): later offers do not call it a fresh crash
  QString sharedSource;   // DocumentController::sharedSource() when it was saved (restored with it)
};

class Autosave : public QObject {
  Q_OBJECT

 public:
  // `dir` empty = defaultRecoveryDir().
  Autosave(DocumentController* controller, QString dir = {}, int intervalMs = 30000, QObject* parent = nullptr);
  ~Autosave() override;

  static QString defaultRecoveryDir();
  static QList<RecoveryEntry> findRecoveries(const QString& dir);
  // Loads a recovery into the controller (marked modified, path = the original) and deletes it.
  static bool restore(DocumentController* controller, const RecoveryEntry& entry, QString* error);
  static void removeRecovery(const QString& recoveryPath);
  // Records in the sidecar that the user kept this recovery without restoring it.
  static void markDeclined(const QString& recoveryPath);

  const QString& recoveryPath() const { return path_; }
  // Writes the recovery file now if the document has unsaved, not yet autosaved changes.
  bool autosaveNow();
  // Removes this session's recovery file (normal close or the user discarded the changes).
  void discard();

 private:
  DocumentController* controller_;
  QString dir_;
  QString path_;
  QTimer timer_;
  bool pending_ = false;
};

}  // namespace vidgraph::gui
