// Execution planning (see plan.h).
//
// Both functions are O((N + L) log N) for N nodes and L links: documents of tens of thousands of
// nodes (generated workflows, hostile files) must validate and plan in well under a second.
#include "plan.h"

#include <algorithm>
#include <utility>

#include "log.h"

namespace vidgraph::engine {

namespace {

constexpr std::size_t kAbsent = GraphDocument::npos;

// Document positions of a node's linked sources that exist (duplicates kept: one per link).
std::vector<std::size_t> source_positions(const GraphDocument& doc, const Node& n) {
  std::vector<std::size_t> out;
  out.reserve(n.inputs.size());
  for (const auto& [port, link] : n.inputs) {
    const std::size_t i = doc.index_of(link.node);
    if (i != kAbsent) out.push_back(i);
  }
  return out;
}

// The needed set as a mask over document positions: the roots and their ancestors.
std::vector<char> needed_mask(const GraphDocument& doc, const std::vector<std::string>& roots) {
  const auto& nodes = doc.nodes();
  std::vector<char> needed(nodes.size(), 0);
  std::vector<std::size_t> todo;
  for (const auto& r : roots) todo.push_back(doc.index_of(r));
  while (!todo.empty()) {
    const std::size_t i = todo.back();
    todo.pop_back();
    if (needed[i]) continue;
    needed[i] = 1;
    for (std::size_t s : source_positions(doc, nodes[i])) {
      if (!needed[s]) todo.push_back(s);
    }
  }
  return needed;
}

}  // namespace

std::string find_cycle_node(const GraphDocument& doc) {
  // Iterative three-colour DFS over input links (consumer → source), by document position.
  const auto& nodes = doc.nodes();
  std::vector<char> colour(nodes.size(), 0);  // 0 white, 1 grey, 2 black
  using Frame = std::pair<std::size_t, std::map<std::string, InputLink>::const_iterator>;
  std::vector<Frame> stack;
  for (std::size_t start = 0; start < nodes.size(); ++start) {
    if (colour[start] != 0) continue;
    stack.emplace_back(start, nodes[start].inputs.begin());
    colour[start] = 1;
    while (!stack.empty()) {
      auto& [at, it] = stack.back();
      if (it == nodes[at].inputs.end()) {
        colour[at] = 2;
        stack.pop_back();
        continue;
      }
      const std::size_t src = doc.index_of(it->second.node);
      ++it;
      if (src == kAbsent) continue;
      if (colour[src] == 1) return nodes[src].id;
      if (colour[src] == 0) {
        colour[src] = 1;
        stack.emplace_back(src, nodes[src].inputs.begin());
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
  const auto& nodes = doc.nodes();
  const std::vector<char> needed = needed_mask(doc, roots);

  // Kahn's algorithm over the needed nodes. The order it must reproduce is that of repeated passes
  // over the document, each pass taking every node whose sources are done (including sources taken
  // earlier in the same pass). A node therefore lands in pass max over its sources s of pass(s),
  // plus one when s comes after it in the document; the plan is sorted by (pass, position).
  std::vector<std::vector<std::size_t>> consumers(nodes.size());
  std::vector<std::size_t> waiting(nodes.size(), 0);  // links to sources not yet ordered
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    for (std::size_t s : source_positions(doc, nodes[i])) {
      consumers[s].push_back(i);
      ++waiting[i];
    }
    if (waiting[i] == 0) ready.push_back(i);
  }
  std::vector<std::size_t> pass(nodes.size(), 0);
  std::vector<std::pair<std::size_t, std::size_t>> ordered;  // (pass, position)
  while (!ready.empty()) {
    const std::size_t i = ready.back();
    ready.pop_back();
    ordered.emplace_back(pass[i], i);
    for (std::size_t c : consumers[i]) {
      pass[c] = std::max(pass[c], pass[i] + (c < i ? 1 : 0));
      if (--waiting[c] == 0) ready.push_back(c);
    }
  }
  const auto needed_count = static_cast<std::size_t>(std::count(needed.begin(), needed.end(), 1));
  if (ordered.size() != needed_count) {
    return Error{std::string(), "the plan could not be ordered; the links contain a cycle"};
  }
  std::sort(ordered.begin(), ordered.end());
  std::vector<std::string> order;
  order.reserve(ordered.size());
  for (const auto& [p, i] : ordered) order.push_back(nodes[i].id);
  // One line per plan built: a run builds one (tests count them), a run's -v log shows its size.
  engine_logger()->debug("planned {} of {} nodes for {} target(s)", order.size(), nodes.size(), roots.size());
  return order;
}

}  // namespace vidgraph::engine
