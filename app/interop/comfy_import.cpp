// Implements comfy_import.h: read (comfy_graph.h), convert (comfy_converter.h), build the document.
#include "interop/comfy_import.h"


#include "interop/comfy_converter.h"
#include "interop/comfy_subgraphs.h"
#include "engine/workflow_file.h"

namespace vidgraph::comfy {

using nlohmann::json;

namespace {

engine::Result<ComfyGraph> read_graph(const json& root, const std::string& source) {
  switch (comfy_format_of(root)) {
    case ComfyFormat::Ui: return read_ui_graph(root, source);
    case ComfyFormat::Api: return read_api_graph(root, source);
    case ComfyFormat::None: break;
  }
  return engine::make_error(source + ": not a ComfyUI workflow (neither its UI format, with \"nodes\" and \"links\", "
                            "nor its API format, with \"class_type\" and \"inputs\" per node)");
}

engine::Result<ComfyImport> import_checked(const json& root, const std::string& source,
                                           const engine::Registry* registry) {
  auto graph = read_graph(root, source);
  if (!graph.ok()) return graph.error();
  ComfyImport out;
  out.report.format = graph->format;
  out.report.notes = graph->notes;
  Converter converter(*graph, out.report);
  if (auto s = converter.run(); !s) return engine::make_error(source + ": " + s.error().message);
  json extra = converter.extra();
  extra["format"] = graph->format == ComfyFormat::Ui ? "ui" : "api";
  auto doc = engine::GraphDocument::build(converter.nodes(), converter.editor(), json{{"comfyui", extra}}, registry);
  if (!doc.ok()) return engine::make_error(source + ": the imported graph is inconsistent (" + doc.error().to_string() +
                                           "); please report this workflow");
  if (auto s = group_subgraphs(doc.value(), *graph, converter.carried(), out.report); !s) {
    return engine::make_error(source + ": its subgraphs could not be rebuilt (" + s.error().message +
                              "); please report this workflow");
  }
  out.document = std::move(doc.value());
  return out;
}

// A workflow file's text as JSON, with the limits of .vgflow files (size, UTF-8, nesting depth).
engine::Result<json> parse_workflow_json(std::string_view text, const std::string& source) {
  if (text.size() > engine::kMaxWorkflowBytes) {
    return engine::make_error(source + ": larger than the " + std::to_string(engine::kMaxWorkflowBytes >> 20) +
                              " MB a workflow may have");
  }
  if (auto s = engine::check_utf8(text); !s) return engine::make_error(source + ": " + s.error().message);
  if (auto s = engine::check_json_depth(text); !s) return engine::make_error(source + ": " + s.error().message);
  json root = json::parse(text.begin(), text.end(), nullptr, false);
  if (root.is_discarded()) return engine::make_error(source + ": not valid JSON");
  return root;
}

// nlohmann's "[json.exception.type_error.302] type must be string, but is array" without its tag.
std::string json_problem(const json::exception& e) {
  const std::string what = e.what();
  const auto end = what.find("] ");
  return what.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? what.substr(end + 2) : what;
}

}  // namespace

bool is_comfy_workflow(const json& root) { return comfy_format_of(root) != ComfyFormat::None; }

// The readers take what a well-formed ComfyUI file holds for granted field by field; a file whose
// fields have other types (hand-edited, truncated, hostile) ends here as one error naming the file.
engine::Result<ComfyImport> import_comfy_json(const json& root, const std::string& source,
                                              const engine::Registry* registry) {
  try {
    return import_checked(root, source, registry);
  } catch (const json::exception& e) {
    return engine::make_error(source + ": a field of this ComfyUI workflow has a value ComfyUI never writes (" +
                              json_problem(e) + "); open and save it again in ComfyUI, or fix the file by hand.");
  }
}

engine::Result<ComfyImport> import_comfy_string(std::string_view text, const std::string& source,
                                                const engine::Registry* registry) {
  auto root = parse_workflow_json(text, source);
  if (!root.ok()) return root.error();
  return import_comfy_json(*root, source, registry);
}

std::optional<engine::Result<ComfyImport>> import_if_comfy(std::string_view text, const std::string& source,
                                                           const engine::Registry* registry) {
  auto root = parse_workflow_json(text, source);
  if (!root.ok() || !is_comfy_workflow(*root)) return std::nullopt;
  return import_comfy_json(*root, source, registry);
}

}  // namespace vidgraph::comfy
