// Places a workflow writes, and the output-folder rule for shared workflows (see write_places.h).
#include "write_places.h"

#include <filesystem>
#include <system_error>

namespace vidgraph::engine {
namespace fs = std::filesystem;

namespace {

// Where the operating system would put `path`: links and ".." resolved as far as the path exists,
// the rest lexically; no trailing separator, so that its components compare one by one.
fs::path real_place(const std::string& path) {
  std::error_code ec;
  fs::path place = fs::weakly_canonical(fs::path(path), ec);
  if (ec) place = fs::absolute(fs::path(path), ec).lexically_normal();
  if (place.filename().empty() && place.has_relative_path()) place = place.parent_path();
  return place;
}

bool starts_with_components(const fs::path& path, const fs::path& folder) {
  auto p = path.begin();
  for (const fs::path& part : folder) {
    if (p == path.end() || *p != part) return false;
    ++p;
  }
  return true;
}

// The sentence for one place outside: what, where it leads, and the two ways out.
std::string outside_message(const WritePlace& place, const RunOptions& options) {
  const std::string real = real_place(place.path).string();
  const std::string leads = real == fs::path(place.path).lexically_normal().string()
                                ? std::string()
                                : " (its links lead to '" + real + "')";
  const std::string name = fs::path(place.path).filename().string();
  return "param '" + place.param + "' writes '" + place.path + "'" + leads + ", outside the output folder '" +
         options.output_directory() + "'. This workflow came inside a shared file (a video, or a PNG " +
         "sequence's metadata.json), so it may write only inside the output folder: set the param to a " +
         "place inside it, such as {output}/" + (name.empty() ? "name" : name) +
         ", or, if you trust the file, let it write there (vidgraph-run --allow-outside-writes; the editor "
         "asks before the run).";
}

}  // namespace

std::vector<WritePlace> write_places(const std::string& node_id, const NodeType& type,
                                     const nlohmann::json& params, const RunOptions& options) {
  std::vector<WritePlace> places;
  for (const ParamSpec& spec : type.params) {
    if (!spec.writes) continue;
    const auto it = params.find(spec.name);
    if (it == params.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) continue;
    places.push_back(WritePlace{node_id, spec.name, options.resolve_path(it->get<std::string>())});
  }
  return places;
}

bool inside_output_dir(const std::string& path, const RunOptions& options) {
  return starts_with_components(real_place(path), real_place(options.output_directory()));
}

std::vector<WritePlace> places_outside_output_dir(const GraphDocument& doc, const Registry& registry,
                                                  const RunOptions& options) {
  std::vector<WritePlace> outside;
  for (const Node& n : doc.nodes()) {
    const NodeType* type = registry.find(n.type);
    if (n.bypass || type == nullptr) continue;
    for (WritePlace& place : write_places(n.id, *type, type->params_with_defaults(n.params), options)) {
      if (!inside_output_dir(place.path, options)) outside.push_back(std::move(place));
    }
  }
  return outside;
}

std::vector<std::string> check_confined_writes(const std::string& node_id, const NodeType& type,
                                               const nlohmann::json& params, const RunOptions& options) {
  std::vector<std::string> problems;
  if (!options.confine_writes_to_output_dir) return problems;
  for (const WritePlace& place : write_places(node_id, type, params, options)) {
    if (!inside_output_dir(place.path, options)) problems.push_back(outside_message(place, options));
  }
  return problems;
}

std::vector<std::string> check_confined_writes(const GraphDocument& doc, const Registry& registry,
                                               const RunOptions& options) {
  std::vector<std::string> problems;
  if (!options.confine_writes_to_output_dir) return problems;
  for (const WritePlace& place : places_outside_output_dir(doc, registry, options)) {
    problems.push_back(outside_message(place, options));
  }
  return problems;
}

}  // namespace vidgraph::engine
