// OperationCommand: one QUndoCommand per user action, wrapping one engine Operation 1:1.
//
// Contract: the DocumentController applies the operation first (so a refused edit never reaches the
// stack and its reason can be shown), then pushes this command holding {redo = the operation,
// undo = its inverse}. QUndoStack::push() calls redo() at once; that first call is skipped on purpose
// because the edit is already applied (the engine builds the inverse only by applying). Later redo()/
// undo() calls apply the stored operation and keep the inverse they return for the opposite
// direction. Param drags and node moves merge: commands whose operations share a non-empty merge_key
// coalesce into one step whose undo restores the value from before the first edit.
#pragma once

#include <QtGui/QUndoCommand>

#include "engine/document.h"
#include "engine/operations.h"

namespace vidgraph::gui {

class OperationCommand : public QUndoCommand {
 public:
  static constexpr int kMergeableId = 0x56470001;

  // `redo` was already applied to `doc` and returned `undo`.
  OperationCommand(engine::GraphDocument& doc, engine::OperationPtr redo, engine::OperationPtr undo);

  void redo() override;
  void undo() override;
  int id() const override;
  bool mergeWith(const QUndoCommand* other) override;

  const engine::Operation& redoOperation() const { return *redo_; }
  // The last undo/redo that failed (the document changed under the stack); empty when none.
  const QString& lastError() const { return lastError_; }

 private:
  engine::GraphDocument& doc_;
  engine::OperationPtr redo_;
  engine::OperationPtr undo_;
  bool skipFirstRedo_ = true;
  QString lastError_;
};

}  // namespace vidgraph::gui
