// Copy/paste payload: a selection of nodes as a standalone workflow JSON document (the .vgflow
// format), so it pastes into any window, any running instance, or a text file.
//
// Contract: links whose source is outside the selection are dropped on copy (the payload is always
// a valid workflow on its own); editor layouts of the copied nodes travel in "editor.nodes".
// Parsing accepts any workflow text (a whole .vgflow file pastes too).
#pragma once

#include <string>
#include <vector>

#include <QtCore/QString>

#include <nlohmann/json.hpp>

#include "engine/document.h"
#include "engine/result.h"

namespace vidgraph::gui {

// MIME type used next to text/plain on the clipboard.
inline constexpr const char* kWorkflowMimeType = "application/x-vidgraph-workflow";

struct ClipboardNodes {
  std::vector<engine::Node> nodes;
  nlohmann::json layouts = nlohmann::json::object();  // node id → editor layout
};

QString nodesToWorkflowJson(const engine::GraphDocument& doc, const std::vector<std::string>& ids);
engine::Result<ClipboardNodes> parseWorkflowJson(const QString& text);

}  // namespace vidgraph::gui
