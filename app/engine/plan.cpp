// Execution planning (see plan.h).
#include "plan.h"

#include <map>
#include <set>

namespace vidgraph::engine {

std::string find_cycle_node(const GraphDocument& doc) {
  // Iterative three-colour DFS over input links (consumer → source).
  std::map<std::string, int> colour;  // 0 white, 1 grey, 2 black
  for (const Node& start : doc.nodes()) {
    if (colour[start.id] != 0) continue;
    std::vector<std::pair<const Node*, std::map<std::string, InputLink>::const_iterator>> stack;
    stack.emplace_back(&start, start.inputs.begin());
    colour[start.id] = 1;
    while (!stack.empty()) {
      auto& [node, it] = stack.back();
      if (it == node->inputs.end()) {
        colour[node->id] = 2;
        stack.pop_back();
        continue;
      }
      const std::string& src = it->second.node;
      ++it;
      const Node* next = doc.find_node(src);
      if (!next) continue;
      if (colour[src] == 1) return src;
      if (colour[src] == 0) {
        colour[src] = 1;
        stack.emplace_back(next, next->inputs.begin());
      }
    }
  }
  return {};
}

Result<std::vector<std::string>> plan_execution(const GraphDocument& doc, const std::vector<std::string>& targets) {
  std::vector<std::string> roots = targets.empty() ? doc.sink_nodes() : targets;
  for (const auto& t : roots) {
    if (!doc.find_node(t)) return Error{t, "there is no node '" + t + "' to run; check the node id"};
  }
  if (std::string c = find_cycle_node(doc); !c.empty()) {
    return Error{c, "the node is part of a cycle of links; remove one link of the cycle"};
  }
  // Collect the needed set.
  std::set<std::string> needed;
  std::vector<std::string> todo = roots;
  while (!todo.empty()) {
    std::string id = todo.back();
    todo.pop_back();
    if (!needed.insert(id).second) continue;
    if (const Node* n = doc.find_node(id)) {
      for (const auto& [port, link] : n->inputs) {
        if (doc.find_node(link.node)) todo.push_back(link.node);
      }
    }
  }
  // Kahn's algorithm; ties by document order (repeat passes over the document order).
  std::vector<std::string> order;
  std::set<std::string> done;
  while (order.size() < needed.size()) {
    bool progressed = false;
    for (const Node& n : doc.nodes()) {
      if (!needed.count(n.id) || done.count(n.id)) continue;
      bool ready = true;
      for (const auto& [port, link] : n.inputs) {
        if (doc.find_node(link.node) && !done.count(link.node)) ready = false;
      }
      if (!ready) continue;
      order.push_back(n.id);
      done.insert(n.id);
      progressed = true;
    }
    if (!progressed) return Error{std::string(), "the plan could not be ordered; the links contain a cycle"};
  }
  return order;
}

}  // namespace vidgraph::engine
