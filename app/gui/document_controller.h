// DocumentController: the one document of a window (an engine::GraphDocument), its undo stack and
// its file. Every user edit goes through here as an engine Operation wrapped 1:1 in an
// OperationCommand; views observe the document through documentChanged().
//
// Contract:
//   - edits return engine::Status; a refused edit changes nothing, pushes nothing, and its error says
//     why (the view shows it);
//   - documentChanged() is emitted synchronously for every engine DocumentChange (edits, undo, redo,
//     load), on the GUI thread; ChangeKind::Reset means "rebuild everything";
//   - isModified() follows the undo stacks' clean state; open/save/newDocument reset it;
//   - inside a subgraph (enterSubgraph) the document is that definition's inner graph, with its
//     own undo stack; the workflow (workflow()) folds every open level's edits in;
//   - saves are atomic (engine::save_workflow_file: temp file, fsync, rename).
// The registry must outlive the controller.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <QtCore/QObject>
#include <QtCore/QPointF>
#include <QtCore/QRectF>
#include <QtCore/QSizeF>
#include <QtCore/QString>
#include <QtCore/QStringList>
#include <QtCore/QVector>
#include <QtGui/QUndoGroup>
#include <QtGui/QUndoStack>

#include "engine/document.h"
#include "engine/operations.h"
#include "engine/registry.h"
#include "engine/subgraph.h"

namespace vidgraph::comfy {
struct ComfyImport;
}

namespace vidgraph::gui {

// A link to make together with a new node (a wire dropped on empty canvas, then a type chosen).
struct PendingLink {
  std::string node;     // the existing node the wire came from
  std::string port;     // its port
  bool fromOutput = true;  // the existing port is an output (the new node gets the input side)
  std::string newPort;  // the new node's port
};

// A titled rectangle behind nodes (the editor layout's "groups": [{"title": …, "rect": [x, y, w, h]}]).
// `index` is its place in that list (entries a file holds in another shape are kept, not shown).
struct NodeGroup {
  int index = -1;
  QString title;
  QRectF rect;
};

class DocumentController : public QObject {
  Q_OBJECT

 public:
  explicit DocumentController(const engine::Registry& registry, QObject* parent = nullptr);
  ~DocumentController() override;

  const engine::Registry& registry() const { return registry_; }
  // The type `node` shows as: its registered type, or a subgraph instance's (its definition's
  // name, exposed ports and params: engine/subgraph.h); none for an unknown type or a broken instance.
  std::optional<engine::NodeType> displayType(const engine::Node& node) const;
  // What the canvas shows: the workflow, or inside a subgraph its definition's inner graph.
  const engine::GraphDocument& document() const { return doc_; }
  // The stack of the level shown; the group switches Undo / Redo between levels.
  QUndoStack* undoStack() { return undoGroup_.activeStack(); }
  QUndoGroup* undoGroup() { return &undoGroup_; }

  // ---- subgraph levels (a breadcrumb: the workflow, then each instance entered)
  // Shows the inner graph of instance `id`'s definition (nested: from inside another). Its edits
  // have their own undo stack; leaving writes them into the definition as one undo step above.
  engine::Status enterSubgraph(const std::string& id);
  // Back to `depth` (0 = the workflow; -1 = one level up), folding in each level left.
  engine::Status leaveSubgraph(int depth = -1);
  int depth() const { return static_cast<int>(levels_.size()); }
  // The workflow's name, then each entered subgraph's name.
  QStringList breadcrumb() const;
  // The instance path of the level shown ("outer/inner"; "" at the workflow): what its nodes are
  // called in a run.
  std::string levelPath() const;
  // The workflow with every open level's edits folded in: what Save, autosave and runs use.
  engine::Result<engine::GraphDocument> workflow() const;
  // The params the definition shown exposes (empty at the workflow); exposing and unexposing one
  // are undo steps of this level, which instances then set.
  std::map<std::string, engine::InnerParam> exposedParams() const;
  engine::Status exposeParam(const std::string& node, const std::string& param, const std::string& name);
  engine::Status unexposeParam(const std::string& name);

  // ---- edits (each is one undo step)
  // Applies `op` and pushes it; on failure nothing changes and the error is returned.
  engine::Status apply(engine::OperationPtr op);
  // Puts the nodes into a new subgraph (one instance in their place); returns the instance's id.
  engine::Result<std::string> makeSubgraph(const std::vector<std::string>& ids, const std::string& name);
  // Replaces a subgraph instance by its inner nodes.
  engine::Status unpackSubgraph(const std::string& id);
  // Adds a node of `type` (registered name) with default params at `pos`; returns its new id.
  // With `link`, the node and its link are added as one undo step.
  // `params` are set on the new node over the defaults (a dropped image's path).
  engine::Result<std::string> addNode(const std::string& type, QPointF pos,
                                      const std::optional<PendingLink>& link = std::nullopt,
                                      const nlohmann::json& params = nlohmann::json::object());
  engine::Status connectPorts(const std::string& fromNode, const std::string& output,
                              const std::string& toNode, const std::string& input);
  engine::Status disconnectInput(const std::string& toNode, const std::string& input);
  engine::Status removeNodes(const std::vector<std::string>& ids);
  // Removes every link into and out of `ids`, as one step.
  engine::Status disconnectNodes(const std::vector<std::string>& ids);
  // Puts a new node of `type` on the link into toNode.toInput, as one step: the link's source feeds
  // the new node's `newInput`, the new node's first output of a fitting type feeds toNode.toInput.
  engine::Result<std::string> insertNode(const std::string& type, QPointF pos, const std::string& toNode,
                                         const std::string& toInput, const std::string& newInput);
  // Moves nodes to new positions as one step (one step per call: separate drags never merge).
  engine::Status moveNodes(const std::map<std::string, QPointF>& positions);
  // Sets one param; consecutive edits of the same param merge into one undo step.
  engine::Status setParam(const std::string& nodeId, const std::string& param, nlohmann::json value);
  // Collapses (or expands) `ids` to their title bars, as one step: the editor layout's "collapsed".
  engine::Status setCollapsed(const std::vector<std::string>& ids, bool collapsed);
  bool isCollapsed(const std::string& id) const;
  // Sets a node's size on the canvas (the editor layout's "size": [w, h]), as one step.
  engine::Status resizeNode(const std::string& id, QSizeF size);
  // The size a node was given, if any (absent or malformed = the default size).
  std::optional<QSizeF> nodeSize(const std::string& id) const;
  // Groups (each edit one step; a group's nodes are never changed by the group's edits but a move).
  std::vector<NodeGroup> groups() const;
  engine::Status addGroup(const QString& title, const QRectF& rect);
  engine::Status renameGroup(int index, const QString& title);
  // Deletes the group; its nodes stay.
  engine::Status removeGroup(int index);
  // Moves the group by `delta` and the nodes `members` to their new positions, as one step.
  engine::Status moveGroup(int index, QPointF delta, const std::map<std::string, QPointF>& members);
  // Reroute points of the link into toNode.input (scene positions, output side first); empty when
  // it has none. Editor layout only: runs never see them.
  QVector<QPointF> reroutePoints(const std::string& toNode, const std::string& input) const;
  // Replaces them (empty = a straight wire again), as one step.
  engine::Status setReroutePoints(const std::string& toNode, const std::string& input, const QVector<QPointF>& points);
  // Adds one at `pos`, where it lengthens the route from `start` (the output) to `end` least.
  engine::Status addReroutePoint(const std::string& toNode, const std::string& input, QPointF pos, QPointF start,
                                 QPointF end);
  // Sets the bypass flag of `ids` (see engine/bypass.h), as one step.
  engine::Status setBypass(const std::vector<std::string>& ids, bool bypass);
  engine::Status renameNode(const std::string& oldId, const std::string& newId);
  // Runs the upgrade hook of every node saved by an older type version, as one undo step; returns
  // the upgraded ids (empty when none needed it).
  engine::Result<std::vector<std::string>> upgradeNodeTypes();
  // Copies `ids` with fresh ids, offset by `offset`; returns the new ids.
  engine::Result<std::vector<std::string>> duplicateNodes(const std::vector<std::string>& ids, QPointF offset);
  // Pastes workflow JSON (see clipboard_json.h), with its reroutes and groups, as one step; returns
  // the new ids.
  engine::Result<std::vector<std::string>> pasteJson(const QString& json, QPointF offset);
  // The nodes as workflow JSON for the clipboard (links to nodes outside `ids` are dropped), with
  // the reroute points of links among them and the groups at indices `groups`.
  QString copyJson(const std::vector<std::string>& ids, const std::vector<int>& groups = {}) const;

  // Position of a node from the editor layout, or `fallback` when it has none.
  QPointF nodePosition(const std::string& id, QPointF fallback = QPointF()) const;

  // ---- files
  void newDocument();
  // A Vidgraph workflow, or a ComfyUI workflow (UI or API JSON, told by content), which is imported
  // (see importedFrom()). The file is read once.
  engine::Status open(const QString& path);
  // Opens `path` as open() does, as an untitled and unmodified document, so Save asks where to
  // write (a shipped example is never overwritten).
  engine::Status openAsUntitled(const QString& path);
  // Opens workflow text read out of `source` (the workflow a video embeds), untitled and unmodified.
  engine::Status openEmbedded(const QString& text, const QString& source);
  // Replaces the document with workflow text (e.g. a recovery file); `path` becomes the file path
  // ("" = untitled) and the document is marked modified.
  engine::Status loadText(const QString& text, const QString& path, const QString& source);
  engine::Status save(const QString& path);
  const QString& filePath() const { return filePath_; }
  QString displayName() const;  // file name, or "Untitled"
  bool isModified() const;
  // Warnings of the last open (migrations, unknown node types, dropped dangling links, invalid
  // params), one problem per entry.
  const QStringList& loadWarnings() const { return loadWarnings_; }
  // The ComfyUI workflow the document was imported from by the last open ("" when it was not):
  // such a document is untitled and modified, so Save asks where and the ComfyUI file is never
  // written; loadWarnings() then holds the import report (approximations, unsupported nodes, notes).
  const QString& importedFrom() const { return importedFrom_; }
  // The file someone may have shared that the document came from ("" when the user's own): a video
  // or PNG sequence it was embedded in, or the ComfyUI workflow it was imported from. While set,
  // runs write only inside the output folder unless the user confirms each place (MainWindow).
  // Opening or a new document clears it; autosave carries it into the recovery and back.
  const QString& sharedSource() const { return sharedSource_; }
  void setSharedSource(const QString& source) { sharedSource_ = source; }
  // What is wrong with a node now, one sentence each: inputs whose link was dropped on open (until
  // they are connected again) and params the file gave an invalid value (until they are fixed).
  QStringList nodeProblems(const std::string& id) const;

 Q_SIGNALS:
  void documentChanged(const vidgraph::engine::DocumentChange& change);
  void filePathChanged(const QString& path);
  void modifiedChanged(bool modified);
  // A subgraph level was entered or left (the breadcrumb changed).
  void levelChanged();

 private:
  void replaceDocument(engine::GraphDocument doc, const QString& path);
  // Reads `path` (or `text`, naming `path` in messages) into the document, titled `documentPath`.
  engine::Status load(const QString& path, const QString& documentPath, const std::optional<QString>& text = std::nullopt);
  // Takes an imported ComfyUI workflow as the document: untitled, modified, its report as warnings.
  engine::Status adoptImport(comfy::ComfyImport imported, const QString& source);
  engine::Result<std::vector<std::string>> applyAndCollectNew(engine::OperationPtr op);
  // `op` (a removal of `ids`, or the rename of ids[0] to `renamedTo`) together with the reroute
  // entries that name those nodes: dropped, or renamed. `op` alone when no entry names them.
  engine::OperationPtr withReroutesFollowing(engine::OperationPtr op, const std::vector<std::string>& ids,
                                             const std::string& renamedTo) const;
  // An open subgraph level: the definition shown, the level above as it was, this level's stack.
  struct Level {
    std::string definition;
    std::string instance;
    engine::GraphDocument above;
    std::unique_ptr<QUndoStack> stack;
  };
  // The definitions of `inner` (the level shown) with `level`'s definition rebuilt from its nodes
  // and layout; exposures of nodes that are gone are dropped and named in `dropped`.
  static nlohmann::json foldedDefinitions(const engine::GraphDocument& inner, const Level& level,
                                          std::vector<std::string>* dropped);
  void dropLevels();  // open or new document: inner levels go without folding

  const engine::Registry& registry_;
  engine::GraphDocument doc_;
  QUndoStack undoStack_;  // the workflow's
  QUndoGroup undoGroup_;
  std::vector<Level> levels_;
  QString filePath_;
  QStringList loadWarnings_;
  QString importedFrom_;
  QString sharedSource_;
  std::map<std::string, std::vector<std::string>> droppedInputs_;  // node → inputs whose link was dropped
  int subscription_ = 0;
};

}  // namespace vidgraph::gui

Q_DECLARE_METATYPE(vidgraph::engine::DocumentChange)
