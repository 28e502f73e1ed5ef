// DocumentController: subgraph levels (see document_controller.h). A level shows a definition's
// inner graph as the document, carrying the workflow's definitions so nested instances show and
// open; leaving folds its nodes and layout back into the definition, as one step of the level above.
#include <set>

#include "engine/subgraph_edits.h"
#include "engine/workflow_file.h"
#include "gui/document_controller.h"
#include "gui/gui_log.h"

namespace vidgraph::gui {

using nlohmann::json;

namespace {

json definitions_of(const engine::GraphDocument& doc) {
  const json& extra = doc.extra();
  const auto it = extra.find(engine::kSubgraphsKey);
  return it != extra.end() && it->is_object() ? *it : json::object();
}

// Drops the exposures of `d` whose inner node is not in `ids`; names them in `dropped`.
void drop_gone_exposures(json& d, const std::set<std::string>& ids, std::vector<std::string>* dropped) {
  auto gone = [&](const json& ref) { return !ref.is_object() || !ids.count(ref.value("node", std::string())); };
  for (const char* key : {"outputs", "params"}) {
    if (!d.contains(key) || !d[key].is_object()) continue;
    std::vector<std::string> names;
    for (const auto& [name, ref] : d[key].items()) {
      if (gone(ref)) names.push_back(name);
    }
    for (const std::string& name : names) {
      d[key].erase(name);
      if (dropped) dropped->push_back(std::string(key == std::string("params") ? "param" : "output") + " '" + name + "'");
    }
  }
  if (!d.contains("inputs") || !d["inputs"].is_object()) return;
  std::vector<std::string> empty;
  for (auto& [name, consumers] : d["inputs"].items()) {
    json kept = json::array();
    for (const json& c : consumers.is_array() ? consumers : json::array()) {
      if (!gone(c)) kept.push_back(c);
    }
    consumers = kept;
    if (kept.empty()) empty.push_back(name);
  }
  for (const std::string& name : empty) {
    d["inputs"].erase(name);
    if (dropped) dropped->push_back("input '" + name + "'");
  }
}

// The step that writes `inner` (a level's document) into `above`: every definition that changed,
// and, on the instances of the edited definition, the values and links of exposures that are gone.
// Null when nothing changed.
engine::OperationPtr fold_operation(const engine::GraphDocument& above, const json& definitions,
                                    const std::string& definition) {
  const json before = definitions_of(above);
  std::vector<engine::OperationPtr> parts;
  for (const auto& [id, d] : definitions.items()) {
    if (!before.contains(id) || before[id] != d) parts.push_back(engine::make_set_subgraph(id, d));
  }
  if (parts.empty()) return nullptr;
  const json& d = definitions[definition];
  auto exposes = [&](const char* key, const std::string& name) {
    return d.contains(key) && d[key].is_object() && d[key].contains(name);
  };
  for (const engine::Node& n : above.nodes()) {
    if (n.type == engine::kSubgraphType && engine::instance_subgraph(n) == definition) {
      for (const auto& [param, value] : n.params.items()) {
        if (param != engine::kSubgraphParam && !exposes("params", param)) parts.push_back(engine::make_set_param(n.id, param, nullptr));
      }
      for (const auto& [input, link] : n.inputs) {
        if (!exposes("inputs", input)) parts.push_back(engine::make_disconnect(n.id, input));
      }
    }
    for (const auto& [input, link] : n.inputs) {
      const engine::Node* from = above.find_node(link.node);
      if (from && from->type == engine::kSubgraphType && engine::instance_subgraph(*from) == definition &&
          !exposes("outputs", link.output)) {
        parts.push_back(engine::make_disconnect(n.id, input));
      }
    }
  }
  return engine::make_composite("Edit subgraph '" + d.value("name", definition) + "'", std::move(parts));
}

}  // namespace

json DocumentController::foldedDefinitions(const engine::GraphDocument& inner, const Level& level,
                                           std::vector<std::string>* dropped) {
  json definitions = definitions_of(inner);
  json& d = definitions[level.definition];
  json nodes = json::array();
  std::set<std::string> ids;
  for (const engine::Node& n : inner.nodes()) {
    nodes.push_back(engine::node_to_json(n));
    ids.insert(n.id);
  }
  d["nodes"] = std::move(nodes);
  d["editor"] = inner.editor();
  drop_gone_exposures(d, ids, dropped);
  return definitions;
}

engine::Status DocumentController::enterSubgraph(const std::string& id) {
  const engine::Node* instance = doc_.find_node(id);
  if (!instance || instance->type != engine::kSubgraphType) {
    return engine::make_error("'" + id + "' is not a subgraph instance, so there is nothing to open.");
  }
  auto definition = engine::find_subgraph(doc_, engine::instance_subgraph(*instance));
  if (!definition.ok()) return definition.error();
  auto inner = engine::GraphDocument::build(definition->nodes, definition->editor, doc_.extra(), &registry_);
  if (!inner.ok()) return inner.error();
  Level level;
  level.definition = definition->id;
  level.instance = id;
  level.stack = std::make_unique<QUndoStack>();
  connect(level.stack.get(), &QUndoStack::cleanChanged, this, [this] { Q_EMIT modifiedChanged(isModified()); });
  undoGroup_.addStack(level.stack.get());
  level.above = std::move(doc_);  // the observers stay with doc_
  levels_.push_back(std::move(level));
  undoGroup_.setActiveStack(levels_.back().stack.get());
  doc_ = std::move(inner.value());  // Reset: the canvas shows the inner graph
  Q_EMIT levelChanged();
  return {};
}

engine::Status DocumentController::leaveSubgraph(int depth) {
  if (depth < 0) depth = this->depth() - 1;
  if (depth < 0 || depth >= this->depth()) return {};
  while (this->depth() > depth) {
    Level& level = levels_.back();
    std::vector<std::string> dropped;
    const json definitions = foldedDefinitions(doc_, level, &dropped);
    engine::OperationPtr fold = fold_operation(level.above, definitions, level.definition);
    if (fold) {  // tried on a copy first: a refused fold keeps the level open, nothing lost
      engine::GraphDocument trial = level.above;
      if (auto tried = fold->apply(trial); !tried.ok()) return tried.error();
    }
    const bool savedInside = level.stack->isClean();
    Level left = std::move(level);
    levels_.pop_back();
    QUndoStack* above = levels_.empty() ? &undoStack_ : levels_.back().stack.get();
    undoGroup_.setActiveStack(above);
    doc_ = std::move(left.above);  // Reset: the canvas shows the level above
    if (fold) {
      const bool aboveClean = above->isClean();
      if (auto status = apply(std::move(fold)); !status.ok()) return status;
      if (aboveClean && savedInside) above->setClean();  // saved with these edits already
    }
    for (const std::string& what : dropped) {
      guiLogger()->warn("Subgraph '{}' no longer exposes its {}: the node it named was deleted.", left.definition, what);
    }
  }
  Q_EMIT levelChanged();
  return {};
}

QStringList DocumentController::breadcrumb() const {
  QStringList crumbs{displayName()};
  for (std::size_t i = 0; i < levels_.size(); ++i) {
    const engine::GraphDocument& above = levels_[i].above;
    const json d = definitions_of(above).value(levels_[i].definition, json::object());
    crumbs << QString::fromStdString(d.value("name", levels_[i].definition));
  }
  return crumbs;
}

std::string DocumentController::levelPath() const {
  std::string path;
  for (const Level& level : levels_) path += (path.empty() ? "" : "/") + level.instance;
  return path;
}

engine::Result<engine::GraphDocument> DocumentController::workflow() const {
  engine::GraphDocument inner = doc_;
  for (std::size_t i = levels_.size(); i-- > 0;) {
    engine::GraphDocument above = levels_[i].above;
    const json definitions = foldedDefinitions(inner, levels_[i], nullptr);
    if (auto fold = fold_operation(above, definitions, levels_[i].definition)) {
      if (auto folded = fold->apply(above); !folded.ok()) return folded.error();
    }
    inner = std::move(above);
  }
  return inner;
}

std::map<std::string, engine::InnerParam> DocumentController::exposedParams() const {
  std::map<std::string, engine::InnerParam> out;
  if (levels_.empty()) return out;
  const json d = definitions_of(doc_).value(levels_.back().definition, json::object());
  const json params = d.value("params", json::object());
  for (const auto& [name, ref] : params.items()) {
    if (ref.is_object()) out[name] = {ref.value("node", std::string()), ref.value("param", std::string())};
  }
  return out;
}

engine::Status DocumentController::exposeParam(const std::string& node, const std::string& param,
                                               const std::string& name) {
  if (levels_.empty()) return engine::make_error("Open a subgraph first: only its inner nodes' params can be exposed.");
  const engine::Node* n = doc_.find_node(node);
  const auto type = n ? displayType(*n) : std::nullopt;
  if (!type || !type->find_param(param)) {
    return engine::make_error("Node '" + node + "' has no param '" + param + "' to expose.");
  }
  // The definition's nodes are as the level was opened; the check above is against the live ones.
  json d = definitions_of(doc_).value(levels_.back().definition, json::object());
  if (auto added = engine::add_exposed_param(d, name, {node, param}); !added) return added;
  return apply(engine::make_set_subgraph(levels_.back().definition, d));
}

engine::Status DocumentController::unexposeParam(const std::string& name) {
  if (levels_.empty()) return engine::make_error("Open a subgraph first: it is the subgraph that exposes params.");
  json d = definitions_of(doc_).value(levels_.back().definition, json::object());
  if (!d.contains("params") || !d["params"].contains(name)) {
    return engine::make_error("The subgraph exposes no param '" + name + "'.");
  }
  d["params"].erase(name);
  return apply(engine::make_set_subgraph(levels_.back().definition, d));
}

bool DocumentController::isModified() const {
  if (!undoStack_.isClean()) return true;
  for (const Level& level : levels_) {
    if (!level.stack->isClean()) return true;
  }
  return false;
}

void DocumentController::dropLevels() {
  if (levels_.empty()) return;
  levels_.clear();  // their stacks leave the group as they are destroyed
  undoGroup_.setActiveStack(&undoStack_);
  Q_EMIT levelChanged();
}

}  // namespace vidgraph::gui
