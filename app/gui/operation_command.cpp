// OperationCommand (see operation_command.h).
#include "gui/operation_command.h"

#include "gui/gui_log.h"

namespace vidgraph::gui {

OperationCommand::OperationCommand(engine::GraphDocument& doc, engine::OperationPtr redo,
                                   engine::OperationPtr undo)
    : doc_(doc), redo_(std::move(redo)), undo_(std::move(undo)) {
  setText(QString::fromStdString(redo_->description()));
}

void OperationCommand::redo() {
  if (skipFirstRedo_) {  // pushed after the controller applied it: see the header
    skipFirstRedo_ = false;
    return;
  }
  auto inverse = redo_->apply(doc_);
  if (!inverse.ok()) {
    lastError_ = QString::fromStdString(inverse.error().to_string());
    guiLogger()->error("redo of '{}' failed: {}", redo_->description(), inverse.error().to_string());
    setObsolete(true);
    return;
  }
  undo_ = std::move(inverse.value());
}

void OperationCommand::undo() {
  auto inverse = undo_->apply(doc_);
  if (!inverse.ok()) {
    lastError_ = QString::fromStdString(inverse.error().to_string());
    guiLogger()->error("undo of '{}' failed: {}", redo_->description(), inverse.error().to_string());
    setObsolete(true);
    return;
  }
  // The inverse of the undo re-does the (possibly merged) edit; keep it so redo matches exactly.
  redo_ = std::move(inverse.value());
}

int OperationCommand::id() const {
  return redo_->merge_key().empty() ? -1 : kMergeableId;
}

bool OperationCommand::mergeWith(const QUndoCommand* other) {
  const auto* later = dynamic_cast<const OperationCommand*>(other);
  if (!later || later->redo_->merge_key() != redo_->merge_key()) return false;
  return redo_->merge_with(*later->redo_);
}

}  // namespace vidgraph::gui
