// DialogAnswerer: answers the modal dialogs a MainWindow opens while a test drives it (the
// unsaved-changes and restore QMessageBoxes, the save-as QFileDialog), so the tests go through the
// real dialogs of the real window on the offscreen platform.
//
// Contract: while it lives, a 10 ms timer looks for the active modal widget. A QMessageBox gets the
// next queued answer (its standard button is clicked); a QFileDialog gets the queued file name
// (selected and accepted; rejected when none is queued). Every dialog seen is recorded (title, and
// the text or the file dialog's folder) so a test can assert that a dialog was (or was not) shown.
// A QInputDialog gets the next queued text (answerText), or is rejected when none is queued.
// A dialog arriving after the queue is empty is recorded and rejected, so a test never hangs; so is
// one still open 2 s after it was answered (a file dialog is given its name once more first).
#pragma once

#include <QtCore/QElapsedTimer>
#include <QtCore/QList>
#include <QtCore/QPointer>
#include <QtCore/QString>
#include <QtCore/QTimer>
#include <QtWidgets/QAbstractButton>
#include <QtWidgets/QApplication>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QInputDialog>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QMessageBox>

namespace vidgraph::gui_test {

class DialogAnswerer {
 public:
  struct Seen {
    QString kind;  // "message", "file" or "input"
    QString title;
    QString text;  // a message box's text; a file dialog's starting folder; an input's first text
    bool answered = false;  // false: it came after the queued answers ran out (rejected)
  };

  explicit DialogAnswerer(QList<QMessageBox::StandardButton> answers, QString saveFileName = {})
      : answers_(std::move(answers)), saveFileName_(std::move(saveFileName)) {
    QObject::connect(&timer_, &QTimer::timeout, [this] { poll(); });
    timer_.start(10);
  }

  // Queues one more answer (a later dialog of the same test).
  void answerNext(QMessageBox::StandardButton answer) { answers_ << answer; }
  // Queues the text the next input dialog is given and accepted with.
  void answerText(const QString& text) { texts_ << text; }
  const QList<Seen>& seen() const { return seen_; }
  int messageBoxes() const {
    int n = 0;
    for (const Seen& s : seen_) n += s.kind == QLatin1String("message") ? 1 : 0;
    return n;
  }

 private:
  QWidget* activeDialog() const {
    if (QWidget* w = QApplication::activeModalWidget()) return w;
    for (QWidget* w : QApplication::topLevelWidgets()) {
      if (w->isVisible() && (qobject_cast<QMessageBox*>(w) || qobject_cast<QFileDialog*>(w) || qobject_cast<QInputDialog*>(w))) {
        return w;
      }
    }
    return nullptr;
  }

  void poll() {
    QWidget* w = activeDialog();
    if (!w) return;
    if (w == last_ && w->isVisible()) {  // the last one is still closing, or did not take its answer
      if (answeredAt_.elapsed() > 2000) unstick(w);
      return;
    }
    last_ = w;
    answeredAt_.start();
    retried_ = false;
    if (auto* box = qobject_cast<QMessageBox*>(w)) {
      Seen s{QStringLiteral("message"), box->windowTitle(), box->text(), !answers_.isEmpty()};
      seen_ << s;
      QAbstractButton* button = s.answered ? box->button(answers_.takeFirst()) : nullptr;
      if (button) button->click();
      else box->reject();
      return;
    }
    if (auto* input = qobject_cast<QInputDialog*>(w)) {
      seen_ << Seen{QStringLiteral("input"), input->windowTitle(), input->textValue(), !texts_.isEmpty()};
      if (texts_.isEmpty()) {
        input->reject();
        return;
      }
      input->setTextValue(texts_.takeFirst());
      input->accept();
      return;
    }
    if (auto* dialog = qobject_cast<QFileDialog*>(w)) {
      seen_ << Seen{QStringLiteral("file"), dialog->windowTitle(), dialog->directory().absolutePath(),
                    !saveFileName_.isEmpty()};
      if (saveFileName_.isEmpty()) {
        dialog->reject();
        return;
      }
      acceptFile(dialog, saveFileName_);
      lastFileName_ = saveFileName_;
      saveFileName_.clear();
    }
  }

  // selectFile() leaves the name field alone once it has the focus (which the dialog gives it when
  // its window activates, so sooner or later depending on load): type the name into it as well.
  static void acceptFile(QFileDialog* dialog, const QString& name) {
    dialog->selectFile(name);
    if (auto* edit = dialog->findChild<QLineEdit*>(QStringLiteral("fileNameEdit"))) edit->setText(name);
    static_cast<QDialog*>(dialog)->accept();  // QFileDialog::accept is protected; the virtual is not
  }

  void unstick(QWidget* w) {
    auto* dialog = qobject_cast<QFileDialog*>(w);
    if (dialog && !retried_ && !lastFileName_.isEmpty()) {
      qWarning("DialogAnswerer: the file dialog is still open 2 s after it was answered; answering again.");
      retried_ = true;
      answeredAt_.start();
      acceptFile(dialog, lastFileName_);
      return;
    }
    qWarning("DialogAnswerer: '%s' is still open 2 s after it was answered; rejecting it.", qPrintable(w->windowTitle()));
    answeredAt_.start();
    if (auto* d = qobject_cast<QDialog*>(w)) d->reject();
  }

  QList<QMessageBox::StandardButton> answers_;
  QString saveFileName_, lastFileName_;
  QStringList texts_;
  QList<Seen> seen_;
  QPointer<QWidget> last_;
  QElapsedTimer answeredAt_;
  bool retried_ = false;
  QTimer timer_;
};

}  // namespace vidgraph::gui_test
