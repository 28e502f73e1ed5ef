// Param editors of the inspector, one per engine::ParamKind: a spin box (with a slider when the
// range is bounded, and for Int spans at most 256 values) for Int and Float, a check box for Bool, a line for String, a
// multi-line box for Text (prompts), a combo box for Enum (e.g. the attention methods the loaded
// plugin offers), a line with a randomise button for Seed, and a line with a picker button for
// FilePath and FolderPath (for a model file, an editable drop-down of the files found instead of
// the line).
//
// Contract: an editor calls its commit function with a JSON value of the param's JSON type on every
// user change (a slider drag commits many times; the controller merges them into one undo step).
// setValue() shows a value without committing; showValue() also marks a value that fails the param's
// check (a file's "steps": "eight") as invalid: red frame, the reason in the tooltip, and a number
// box that reads "invalid: …" instead of a made-up number.
#pragma once

#include <functional>

#include <QtCore/QStringList>
#include <QtWidgets/QWidget>

#include <nlohmann/json.hpp>

#include "engine/node_type.h"

namespace vidgraph::gui {

class ParamEditor : public QWidget {
 public:
  using Commit = std::function<void(nlohmann::json value)>;

  ParamEditor(engine::ParamSpec spec, QWidget* parent) : QWidget(parent), spec_(std::move(spec)) {}
  const engine::ParamSpec& spec() const { return spec_; }
  void setCommit(Commit commit) { commit_ = std::move(commit); }
  // Shows `value` (null = the default) without committing it.
  virtual void setValue(const nlohmann::json& value) = 0;
  // setValue(), then marks the editor invalid when `value` fails spec().check().
  void showValue(const nlohmann::json& value) {
    setValue(value);
    QString why;
    if (!value.is_null()) {
      if (auto status = spec_.check(value); !status) why = QString::fromStdString(status.error().message);
    }
    setInvalid(why);
  }
  bool isInvalid() const { return !invalidReason_.isEmpty(); }
  const QString& invalidReason() const { return invalidReason_; }

 protected:
  void commit(nlohmann::json value) {
    if (commit_ && !updating_) commit_(std::move(value));
  }
  // Guard for setValue(): widget signals fired while showing a value must not commit.
  bool updating_ = false;

 private:
  void setInvalid(const QString& why) {
    invalidReason_ = why;
    setStyleSheet(why.isEmpty() ? QString()
                                : QStringLiteral("QAbstractSpinBox, QLineEdit, QComboBox, QPlainTextEdit, QCheckBox "
                                                 "{ border: 1px solid #ef5350; }"));
    setToolTip(why.isEmpty() ? QString::fromStdString(spec_.description)
                             : QStringLiteral("Invalid value in the file: %1").arg(why));
  }

  QString invalidReason_;
  engine::ParamSpec spec_;
  Commit commit_;
};

ParamEditor* createParamEditor(const engine::ParamSpec& spec, QWidget* parent);

// Files of one kind of model and role, under a title ("Wan2.2-T2V-A14B (high-noise expert)").
struct FileChoiceGroup {
  QString title;
  QStringList paths;
};
// Item data role of a drop-down's group titles (true): they are shown, not chosen.
inline constexpr int kGroupTitleRole = Qt::UserRole + 1;

// A FilePath editor whose drop-down offers the model files found for it (nodes/model_choices.h):
// an editable combo box (a QComboBox child) with each group under its title, plus the picker
// button. `choices` lists them; it is asked again each time the drop-down opens, so files added to
// the folders meanwhile appear.
ParamEditor* createModelFileEditor(const engine::ParamSpec& spec, std::function<QList<FileChoiceGroup>()> choices,
                                   QWidget* parent);

}  // namespace vidgraph::gui
