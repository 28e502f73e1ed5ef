// Importing ComfyUI workflow files (UI or API JSON, recognised by content) as Vidgraph documents,
// headless (no Qt, no LibTorch): the way in for vidgraph-run and, later, the editor.
//
// Contract: the document holds the same semantic graph a .vgflow would (node types LoadWanModel,
// LoadLoRA, Prompt, EncodeText, LoadImage, WanSampler, VAEDecode, ExportVideo, and "ComfyUI:<class>"
// unknown nodes for unmapped classes an output needs; ComfyUI subgraph instances as Subgraph
// instances, comfy_subgraphs.h), editor positions from the UI file, each
// node's ComfyUI id in its "comfyui_node" key, and a top-level "comfyui" entry (the source format,
// notes and nodes no output needed). Only graphs of Wan video workflows are imported; another model
// family is refused with a sentence. Nothing is written: the source file is only read.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "interop/comfy_graph.h"
#include "interop/comfy_report.h"
#include "engine/document.h"
#include "engine/result.h"

namespace vidgraph::engine {
class Registry;
}

namespace vidgraph::comfy {

struct ComfyImport {
  engine::GraphDocument document;
  ImportReport report;
};

// True for a UI-format or API-format ComfyUI workflow (comfy_format_of).
bool is_comfy_workflow(const nlohmann::json& root);

// Converts parsed JSON; `source` names the file in errors; `registry` is set on the document.
engine::Result<ComfyImport> import_comfy_json(const nlohmann::json& root, const std::string& source,
                                              const engine::Registry* registry = nullptr);
// Parses and converts text (size limit and UTF-8 as for .vgflow files).
engine::Result<ComfyImport> import_comfy_string(std::string_view text, const std::string& source,
                                                const engine::Registry* registry = nullptr);
// The same, or std::nullopt when `text` is not a ComfyUI workflow (not JSON, or other JSON): the
// caller then reads the same text as a Vidgraph workflow and reports that reader's error.
std::optional<engine::Result<ComfyImport>> import_if_comfy(std::string_view text, const std::string& source,
                                                           const engine::Registry* registry = nullptr);

}  // namespace vidgraph::comfy
