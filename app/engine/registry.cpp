// The node-type registry (see registry.h).
#include "registry.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace vidgraph::engine {
namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

Status check_ports(const NodeType& t, const std::vector<PortSpec>& ports, const char* what) {
  std::set<std::string> seen;
  for (const auto& p : ports) {
    if (p.name.empty() || p.type.empty()) {
      return make_error("node type '" + t.name + "' has an " + std::string(what) + " port with an empty name or type");
    }
    if (!seen.insert(p.name).second) {
      return make_error("node type '" + t.name + "' declares " + std::string(what) + " port '" + p.name + "' twice");
    }
  }
  return {};
}

Status check_type(const NodeType& t) {
  if (t.name.empty()) return make_error("a node type needs a name");
  for (char c : t.name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') {
      return make_error("node type name '" + t.name + "' may only use letters, digits, '_', '-' and '.'");
    }
  }
  if (!t.compute) return make_error("node type '" + t.name + "' has no compute function");
  if (t.version < 1) return make_error("node type '" + t.name + "' must have version >= 1");
  if (auto s = check_ports(t, t.inputs, "input"); !s) return s;
  if (auto s = check_ports(t, t.outputs, "output"); !s) return s;
  std::set<std::string> seen;
  for (const auto& p : t.params) {
    if (p.name.empty()) return make_error("node type '" + t.name + "' has a param with an empty name");
    if (!seen.insert(p.name).second) {
      return make_error("node type '" + t.name + "' declares param '" + p.name + "' twice");
    }
    if (auto s = p.check(p.default_value); !s) {
      return make_error("node type '" + t.name + "': default of " + s.error().message);
    }
  }
  return {};
}

}  // namespace

struct Registry::Impl {
  std::map<std::string, NodeType> by_lower_name;
};

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

Status Registry::add(NodeType type) {
  if (auto s = check_type(type); !s) return s;
  const std::string key = lower(type.name);
  auto it = impl_->by_lower_name.find(key);
  if (it != impl_->by_lower_name.end()) {
    return make_error("node type '" + type.name + "' is already registered (as '" + it->second.name + "')");
  }
  impl_->by_lower_name.emplace(key, std::move(type));
  return {};
}

const NodeType* Registry::find(const std::string& name) const {
  auto it = impl_->by_lower_name.find(lower(name));
  return it == impl_->by_lower_name.end() ? nullptr : &it->second;
}

std::size_t Registry::size() const { return impl_->by_lower_name.size(); }

std::vector<const NodeType*> Registry::list() const {
  std::vector<const NodeType*> out;
  for (const auto& [key, t] : impl_->by_lower_name) out.push_back(&t);
  std::stable_sort(out.begin(), out.end(), [](const NodeType* a, const NodeType* b) {
    return lower(a->category) < lower(b->category);
  });
  return out;
}

std::vector<const NodeType*> Registry::list_category(const std::string& category) const {
  std::vector<const NodeType*> out;
  const std::string want = lower(category);
  for (const auto& [key, t] : impl_->by_lower_name) {
    if (lower(t.category) == want) out.push_back(&t);
  }
  return out;
}

std::vector<std::string> Registry::categories() const {
  std::set<std::string> seen;
  std::vector<std::string> out;
  for (const NodeType* t : list()) {
    if (seen.insert(lower(t->category)).second) out.push_back(t->category);
  }
  return out;
}

nlohmann::json Registry::describe() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const NodeType* t : list()) arr.push_back(describe_node_type(*t));
  return nlohmann::json{{"node_types", arr}};
}

}  // namespace vidgraph::engine
