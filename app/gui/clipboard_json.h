// Copy/paste payload: a selection of nodes as a standalone workflow JSON document (the .vgflow
// format), so it pastes into any window, any running instance, or a text file.
//
// Contract: links whose source is outside the selection are dropped on copy (the payload is always
// a valid workflow on its own); editor layouts of the copied nodes travel in "editor.nodes", the
// reroute points of links between them in "editor.reroutes", and the groups asked for in
// "editor.groups". Parsing accepts any workflow text (a whole .vgflow file pastes too).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <QtCore/QString>

#include <nlohmann/json.hpp>

#include "engine/document.h"
#include "engine/operations.h"
#include "engine/result.h"

namespace vidgraph::gui {

// MIME type used next to text/plain on the clipboard.
inline constexpr const char* kWorkflowMimeType = "application/x-vidgraph-workflow";

struct ClipboardNodes {
  std::vector<engine::Node> nodes;
  nlohmann::json layouts = nlohmann::json::object();  // node id → editor layout
  nlohmann::json reroutes = nlohmann::json::array();  // editor "reroutes" entries of copied links
  nlohmann::json groups = nlohmann::json::array();    // editor "groups" entries
};

// The nodes `ids` with the links among them, and the groups at `groups` (indices into the
// document's editor "groups").
QString nodesToWorkflowJson(const engine::GraphDocument& doc, const std::vector<std::string>& ids,
                            const std::vector<int>& groups = {});
engine::Result<ClipboardNodes> parseWorkflowJson(const QString& text);

// The edits that add the clip's reroutes (their nodes renamed by `ids`, make_paste's, and their
// points moved by the offset) and groups (moved by the offset) to `doc`'s editor state: part of
// the paste's one step. None for what is absent, or when the document's entry is not a list (it is
// kept as it is).
std::vector<engine::OperationPtr> pasteEditorEntries(const engine::GraphDocument& doc, const ClipboardNodes& clip,
                                                     const std::map<std::string, std::string>& ids, double dx,
                                                     double dy);

}  // namespace vidgraph::gui
