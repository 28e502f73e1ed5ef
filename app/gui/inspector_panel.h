// InspectorPanel: the selected node's id (renamable), type, description and one editor per declared
// param (see inspector_editors.h). Edits go through the DocumentController (one undo step each;
// a slider drag or typing in a prompt merges into one step); document changes (undo, redo, another
// view) update the editors without committing.
#pragma once

#include <map>
#include <string>

#include <QtWidgets/QWidget>

#include "engine/document.h"
#include "engine/run_options.h"

class QFormLayout;
class QLabel;
class QLineEdit;

namespace vidgraph::gui {

class DocumentController;
class ParamEditor;

class InspectorPanel : public QWidget {
  Q_OBJECT

 public:
  // runDefaults: what every run starts from (MainWindowOptions::runDefaults); the model-file lists
  // resolve paths and find the default extra_model_paths.yaml as a run would.
  explicit InspectorPanel(DocumentController* controller, engine::RunOptions runDefaults = {},
                          QWidget* parent = nullptr);

  // Shows `nodeId` ("" = nothing selected).
  void setNode(const std::string& nodeId);
  const std::string& nodeId() const { return nodeId_; }
  ParamEditor* editor(const std::string& param) const;

 Q_SIGNALS:
  void message(const QString& text);

 private:
  void rebuild();
  void onDocumentChanged(const engine::DocumentChange& change);

  DocumentController* controller_;
  engine::RunOptions runDefaults_;
  std::string nodeId_;
  QWidget* body_ = nullptr;
  QLineEdit* idEdit_ = nullptr;
  std::map<std::string, ParamEditor*> editors_;
};

}  // namespace vidgraph::gui
