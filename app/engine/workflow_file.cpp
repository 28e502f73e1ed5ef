// Workflow JSON ↔ GraphDocument: migration chain, node parsing, canonical serialisation
// (see workflow_file.h; file I/O and byte-level checks live in workflow_io.cpp).
#include "workflow_file.h"

#include <set>

namespace vidgraph::engine {

using nlohmann::json;

namespace {

const std::set<std::string> kNodeKeys = {"id", "type", "type_version", "params", "inputs", "bypass"};
const std::set<std::string> kTopKeys = {"format", "version", "nodes", "editor"};

std::string describe_node(std::size_t index, const json& j) {
  if (j.is_object() && j.contains("id") && j["id"].is_string()) return "node '" + j["id"].get<std::string>() + "'";
  return "node #" + std::to_string(index + 1);
}

}  // namespace

Result<Node> node_from_json(const json& j, const std::string& source, std::size_t index) {
  const std::string where = source + ": " + describe_node(index, j);
  const std::string id = j.is_object() && j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : "";
  auto fail = [&](const std::string& what) { return Error{id, where + ": " + what}; };
  if (!j.is_object()) return fail("must be a JSON object");
  if (id.empty()) return fail("needs an \"id\" string");
  if (!j.contains("type") || !j["type"].is_string() || j["type"].get<std::string>().empty()) {
    return fail("needs a \"type\" string naming its node type");
  }
  Node n;
  n.id = id;
  n.type = j["type"].get<std::string>();
  if (j.contains("type_version")) {
    const json& v = j["type_version"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1000000) {
      return fail("\"type_version\" must be a non-negative integer");
    }
    n.type_version = v.get<int>();
  }
  if (j.contains("params")) {
    if (!j["params"].is_object()) return fail("\"params\" must be a JSON object");
    n.params = j["params"];
  }
  if (j.contains("inputs")) {
    if (!j["inputs"].is_object()) return fail("\"inputs\" must be a JSON object of {\"node\", \"output\"} links");
    for (const auto& [port, link] : j["inputs"].items()) {
      if (!link.is_object() || !link.contains("node") || !link["node"].is_string() || !link.contains("output") ||
          !link["output"].is_string()) {
        return fail("input '" + port + "' must be {\"node\": \"<id>\", \"output\": \"<port>\"}");
      }
      n.inputs[port] = InputLink{link["node"].get<std::string>(), link["output"].get<std::string>()};
    }
  }
  if (j.contains("bypass")) {
    if (!j["bypass"].is_boolean()) return fail("\"bypass\" must be true or false");
    n.bypass = j["bypass"].get<bool>();
  }
  for (const auto& [key, value] : j.items()) {
    if (!kNodeKeys.count(key)) n.extra[key] = value;
  }
  return n;
}

json node_to_json(const Node& n) {
  json j = n.extra;
  j["id"] = n.id;
  j["type"] = n.type;
  j["type_version"] = n.type_version;
  j["params"] = n.params;
  json inputs = json::object();
  for (const auto& [port, link] : n.inputs) inputs[port] = json{{"node", link.node}, {"output", link.output}};
  j["inputs"] = inputs;
  if (n.bypass) j["bypass"] = true;  // absent = runs, so older files and readers stay unchanged
  return j;
}

namespace {

Status migrate(json& root, int from, const MigrationChain& chain, const std::string& source) {
  for (int v = from; v < chain.current_version; ++v) {
    auto step = chain.steps.find(v);
    if (step == chain.steps.end()) {
      return make_error(source + ": no migration from workflow format version " + std::to_string(v) +
                        "; this file cannot be read by this build");
    }
    if (auto s = step->second(root); !s) {
      return make_error(source + ": migrating from format version " + std::to_string(v) + " failed: " +
                        s.error().message);
    }
    root["version"] = v + 1;
  }
  return {};
}

Result<int> read_header(const json& root, const MigrationChain& chain, const std::string& source) {
  if (!root.is_object()) return make_error(source + ": a workflow file must be a JSON object");
  if (!root.contains("format") || root["format"] != kWorkflowFormatId) {
    return make_error(source + ": not a Vidgraph workflow (\"format\" must be \"" + std::string(kWorkflowFormatId) +
                      "\")");
  }
  if (!root.contains("version") || !root["version"].is_number_integer()) {
    return make_error(source + ": \"version\" must be an integer");
  }
  const std::int64_t version = root["version"].get<std::int64_t>();
  if (version > chain.current_version) {
    return make_error(source + ": saved by a newer Vidgraph (workflow format version " + std::to_string(version) +
                      "; this build reads up to " + std::to_string(chain.current_version) + "); update Vidgraph");
  }
  if (version < chain.oldest_version) {
    return make_error(source + ": workflow format version " + std::to_string(version) +
                      " is too old for this build (oldest readable: " + std::to_string(chain.oldest_version) + ")");
  }
  return static_cast<int>(version);
}

Result<LoadedWorkflow> parse_workflow_json(json root, const LoadOptions& options, const std::string& source);

void drop_dangling_links(std::vector<Node>& nodes, LoadedWorkflow& loaded, const std::string& source) {
  std::set<std::string> ids;
  for (const Node& n : nodes) ids.insert(n.id);
  for (Node& n : nodes) {
    for (auto it = n.inputs.begin(); it != n.inputs.end();) {
      if (ids.count(it->second.node)) {
        ++it;
        continue;
      }
      loaded.warnings.push_back(source + ": node '" + n.id + "': input '" + it->first + "' was linked to node '" +
                                it->second.node + "', which does not exist; the link was dropped, reconnect the input");
      loaded.broken_links.push_back(BrokenLink{n.id, it->first, it->second});
      it = n.inputs.erase(it);
    }
  }
}

}  // namespace

const MigrationChain& default_migrations() {
  // Version 1 is the first released format: no steps yet. Add steps[N] = migrate vN → vN+1 here,
  // each in its own function with a fixture file under tests/workflow/.
  static const MigrationChain chain;
  return chain;
}

namespace {

Result<LoadedWorkflow> parse_workflow_json(json root, const LoadOptions& options, const std::string& source) {
  const MigrationChain& chain = options.migrations ? *options.migrations : default_migrations();
  auto version = read_header(root, chain, source);
  if (!version.ok()) return version.error();
  LoadedWorkflow loaded;
  loaded.file_version = version.value();
  if (auto s = migrate(root, loaded.file_version, chain, source); !s) return s.error();
  if (loaded.file_version != chain.current_version) {
    loaded.warnings.push_back(source + ": migrated from workflow format version " +
                              std::to_string(loaded.file_version) + " to " + std::to_string(chain.current_version) +
                              "; saving writes the new version");
  }
  if (!root.contains("nodes") || !root["nodes"].is_array()) {
    return make_error(source + ": \"nodes\" must be a JSON array");
  }
  std::vector<Node> nodes;
  const json& arr = root["nodes"];
  for (std::size_t i = 0; i < arr.size(); ++i) {
    auto n = node_from_json(arr[i], source, i);
    if (!n.ok()) return n.error();
    nodes.push_back(std::move(n.value()));
  }
  if (options.drop_dangling_links) drop_dangling_links(nodes, loaded, source);
  json editor = json::object();
  if (root.contains("editor")) {
    if (!root["editor"].is_object()) return make_error(source + ": \"editor\" must be a JSON object");
    editor = root["editor"];
  }
  json extra = json::object();
  for (const auto& [key, value] : root.items()) {
    if (!kTopKeys.count(key)) extra[key] = value;
  }
  // Ids may be subgraph paths: a run's expanded workflow, as the run history keeps it, loads and runs.
  auto doc = GraphDocument::build(std::move(nodes), std::move(editor), std::move(extra), options.registry,
                                  /*node_paths=*/true);
  // The node is named once, in the message (an Error with a node id would name it again).
  if (!doc.ok()) return make_error(source + ": " + doc.error().to_string());
  loaded.document = std::move(doc.value());
  return loaded;
}

std::string clean_parse_message(const std::string& what) {
  // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." → "line 1, column 2: ..."
  std::string msg = what;
  const auto bracket = msg.find("] ");
  if (bracket != std::string::npos) msg = msg.substr(bracket + 2);
  const std::string prefix = "parse error at ";
  if (msg.compare(0, prefix.size(), prefix) == 0) msg = msg.substr(prefix.size());
  return msg;
}

}  // namespace

Result<LoadedWorkflow> load_workflow_string(std::string_view text, const LoadOptions& options,
                                            const std::string& source) {
  if (text.size() > kMaxWorkflowBytes) {
    return make_error(source + ": " + std::to_string(text.size() / (1024 * 1024)) +
                      " MB is larger than the " + std::to_string(kMaxWorkflowBytes / (1024 * 1024)) +
                      " MB a workflow may have; is this really a workflow file?");
  }
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 BOM
  if (const std::string kind = describe_non_workflow(text); !kind.empty()) {
    return make_error(source + ": this is " + kind + ", not a Vidgraph workflow (a .vgflow JSON file); open a "
                      "workflow instead");
  }
  if (auto s = check_utf8(text); !s) return make_error(source + ": " + s.error().message);
  if (auto s = check_json_depth(text); !s) return make_error(source + ": " + s.error().message);
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return make_error(source + ": not valid JSON (" + clean_parse_message(e.what()) + ")");
  }
  return parse_workflow_json(std::move(root), options, source);
}

json workflow_to_json(const GraphDocument& doc) {
  json root = doc.extra();
  root["format"] = kWorkflowFormatId;
  root["version"] = kWorkflowFormatVersion;
  json nodes = json::array();
  for (const Node& n : doc.nodes()) nodes.push_back(node_to_json(n));
  root["nodes"] = std::move(nodes);
  root["editor"] = doc.editor();
  return root;
}

std::string save_workflow_string(const GraphDocument& doc) {
  // dump() rejects invalid UTF-8 in strings with an exception; replace instead so saving never fails.
  return workflow_to_json(doc).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Status save_workflow_file(const GraphDocument& doc, const std::string& path) {
  return write_file_atomic(path, save_workflow_string(doc));
}

}  // namespace vidgraph::engine
