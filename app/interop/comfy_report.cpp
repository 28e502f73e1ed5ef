// Implements comfy_report.h.
#include "interop/comfy_report.h"

#include <algorithm>

#include <spdlog/logger.h>

#include "engine/log.h"

namespace vidgraph::comfy {

namespace {

ReportEntry entry(const ComfyNode& node, const std::string& sentence) { return {node.id, node.type, sentence}; }

std::string line(const ReportEntry& e) { return "ComfyUI node " + e.id + " (" + e.type + "): " + e.sentence; }

bool listed(const std::vector<ReportEntry>& list, const std::string& id) {
  return std::any_of(list.begin(), list.end(), [&](const ReportEntry& e) { return e.id == id; });
}

std::string count(std::size_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

const char* format_name(ComfyFormat f) {
  return f == ComfyFormat::Ui ? "UI-format" : f == ComfyFormat::Api ? "API-format" : "unknown-format";
}

}  // namespace

void ImportReport::map(const ComfyNode& node, const std::string& sentence) {
  if (!has(node.id)) mapped.push_back(entry(node, sentence));
}

void ImportReport::approximate(const ComfyNode& node, const std::string& sentence) {
  mapped.erase(std::remove_if(mapped.begin(), mapped.end(), [&](const ReportEntry& e) { return e.id == node.id; }),
               mapped.end());
  approximated.push_back(entry(node, sentence));
}

void ImportReport::unsupport(const ComfyNode& node, const std::string& sentence) {
  unsupported.push_back(entry(node, sentence));
}

bool ImportReport::has(const std::string& id) const {
  return listed(mapped, id) || listed(approximated, id) || listed(unsupported, id);
}

std::vector<std::string> report_sentences(const ImportReport& report, bool all) {
  std::vector<std::string> out;
  if (all) {
    for (const ReportEntry& e : report.mapped) out.push_back(line(e));
  }
  for (const ReportEntry& e : report.approximated) out.push_back(line(e));
  for (const ReportEntry& e : report.unsupported) out.push_back(line(e));
  out.insert(out.end(), report.notes.begin(), report.notes.end());
  return out;
}

void log_import_report(const ImportReport& report, const std::string& source) {
  const auto log = engine::layer_logger("comfy");
  log->info("Imported the ComfyUI {} workflow '{}': {} mapped, {} approximated, {} unsupported.",
            format_name(report.format), source, count(report.mapped.size(), "node"),
            count(report.approximated.size(), "setting"), count(report.unsupported.size(), "node"));
  for (const ReportEntry& e : report.mapped) log->debug("{}", line(e));
  for (const ReportEntry& e : report.approximated) log->warn("{}", line(e));
  for (const ReportEntry& e : report.unsupported) log->warn("{}", line(e));
  for (const std::string& n : report.notes) log->info("{}", n);
}

}  // namespace vidgraph::comfy
