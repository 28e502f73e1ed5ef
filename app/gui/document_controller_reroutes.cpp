// DocumentController: reroute points on links (see document_controller.h). They are editor layout,
// "editor": {"reroutes": [{"to": {"node", "input"}, "from": {"node", "output"}, "points": [[x, y], ...]}]},
// which the engine never reads; an entry counts only while its link (to and from) still exists, so
// a link made again from elsewhere starts straight. Entries of another shape are kept, not used.
#include <algorithm>
#include <limits>

#include <QtCore/QLineF>

#include "gui/document_controller.h"

namespace vidgraph::gui {

namespace {

constexpr const char* kReroutes = "reroutes";

bool entryIsFor(const nlohmann::json& e, const std::string& toNode, const std::string& input, const engine::InputLink& from) {
  if (!e.is_object()) return false;
  const nlohmann::json to = e.value("to", nlohmann::json()), src = e.value("from", nlohmann::json());
  return to.is_object() && src.is_object() && to.value("node", "") == toNode && to.value("input", "") == input &&
         src.value("node", "") == from.node && src.value("output", "") == from.output;
}

QVector<QPointF> pointsOf(const nlohmann::json& e) {
  QVector<QPointF> out;
  const nlohmann::json points = e.value("points", nlohmann::json());
  if (!points.is_array()) return out;
  for (const auto& p : points) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number()) return {};
    out.push_back(QPointF(p[0].get<double>(), p[1].get<double>()));
  }
  return out;
}

qreal routeLength(QPointF start, const QVector<QPointF>& points, QPointF end) {
  qreal length = 0;
  QPointF from = start;
  for (const QPointF& p : points) {
    length += QLineF(from, p).length();
    from = p;
  }
  return length + QLineF(from, end).length();
}

}  // namespace

QVector<QPointF> DocumentController::reroutePoints(const std::string& toNode, const std::string& input) const {
  const engine::Node* node = doc_.find_node(toNode);
  const auto link = node ? node->inputs.find(input) : decltype(node->inputs.end()){};
  const auto list = doc_.editor().find(kReroutes);
  if (!node || link == node->inputs.end() || list == doc_.editor().end() || !list->is_array()) return {};
  for (const auto& e : *list) {
    if (entryIsFor(e, toNode, input, link->second)) return pointsOf(e);
  }
  return {};
}

engine::Status DocumentController::setReroutePoints(const std::string& toNode, const std::string& input,
                                                    const QVector<QPointF>& points) {
  const engine::Node* node = doc_.find_node(toNode);
  const auto link = node ? node->inputs.find(input) : decltype(node->inputs.end()){};
  if (!node || link == node->inputs.end()) {
    return engine::make_error("there is no link into '" + toNode + "." + input + "' to reroute");
  }
  nlohmann::json list = doc_.editor().contains(kReroutes) ? doc_.editor()[kReroutes] : nlohmann::json::array();
  if (!list.is_array()) return engine::make_error("this workflow's editor \"reroutes\" entry is not a list; it is kept as it is");
  nlohmann::json entry = {{"to", {{"node", toNode}, {"input", input}}},
                          {"from", {{"node", link->second.node}, {"output", link->second.output}}},
                          {"points", nlohmann::json::array()}};
  for (const QPointF& p : points) entry["points"].push_back({p.x(), p.y()});
  bool found = false;
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (!entryIsFor(*it, toNode, input, link->second)) continue;
    found = true;
    if (points.isEmpty()) list.erase(it);
    else *it = std::move(entry);
    break;
  }
  if (!found && !points.isEmpty()) list.push_back(std::move(entry));
  return apply(engine::make_set_editor_entry(kReroutes, list.empty() ? nlohmann::json(nullptr) : std::move(list)));
}

engine::Status DocumentController::addReroutePoint(const std::string& toNode, const std::string& input, QPointF pos,
                                                   QPointF start, QPointF end) {
  QVector<QPointF> points = reroutePoints(toNode, input);
  int best = 0;
  qreal shortest = std::numeric_limits<qreal>::max();
  for (int i = 0; i <= points.size(); ++i) {  // the place that lengthens the route least
    QVector<QPointF> candidate = points;
    candidate.insert(i, pos);
    const qreal length = routeLength(start, candidate, end);
    if (length < shortest) {
      shortest = length;
      best = i;
    }
  }
  points.insert(best, pos);
  return setReroutePoints(toNode, input, points);
}

engine::OperationPtr DocumentController::withReroutesFollowing(engine::OperationPtr op, const std::vector<std::string>& ids,
                                                             const std::string& renamedTo) const {
  const auto it = doc_.editor().find(kReroutes);
  if (it == doc_.editor().end() || !it->is_array()) return op;
  const auto named = [&](const nlohmann::json& end) {
    return end.is_object() && end.contains("node") && end["node"].is_string() &&
           std::find(ids.begin(), ids.end(), end["node"].get<std::string>()) != ids.end();
  };
  nlohmann::json list = nlohmann::json::array();
  bool changed = false;
  for (nlohmann::json e : *it) {
    const bool to = e.is_object() && named(e.value("to", nlohmann::json()));
    const bool from = e.is_object() && named(e.value("from", nlohmann::json()));
    if (to || from) {
      changed = true;
      if (renamedTo.empty()) continue;  // the node goes: so do its links' points
      if (to) e["to"]["node"] = renamedTo;
      if (from) e["from"]["node"] = renamedTo;
    }
    list.push_back(std::move(e));
  }
  if (!changed) return op;
  const std::string what = op->description();
  std::vector<engine::OperationPtr> parts;
  parts.push_back(std::move(op));
  parts.push_back(engine::make_set_editor_entry(kReroutes, list.empty() ? nlohmann::json(nullptr) : std::move(list)));
  return engine::make_composite(what, std::move(parts));
}

}  // namespace vidgraph::gui
