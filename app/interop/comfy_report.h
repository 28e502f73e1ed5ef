// What an import did with each ComfyUI node, as data and as sentences for a log or a dialog.
// Contract: a node of the file (after subgraphs were flattened) is in one of mapped, approximated
// (one entry per setting without an exact equivalent, saying what was used instead; an
// approximation moves a node out of mapped) and unsupported; notes are whole sentences about the
// graph as a whole.
#pragma once

#include <string>
#include <vector>

#include "interop/comfy_graph.h"

namespace vidgraph::comfy {

struct ReportEntry {
  std::string id;        // the ComfyUI node id
  std::string type;      // its class type
  std::string sentence;  // what became of it
};

struct ImportReport {
  ComfyFormat format = ComfyFormat::None;
  std::vector<ReportEntry> mapped;        // an exact Vidgraph equivalent
  std::vector<ReportEntry> approximated;  // one entry per setting without an exact equivalent
  std::vector<ReportEntry> unsupported;   // no Vidgraph equivalent: kept as an unknown node or left out
  std::vector<std::string> notes;         // subgraphs, left-out nodes, model files

  void map(const ComfyNode& node, const std::string& sentence);  // ignored once the node is listed
  void approximate(const ComfyNode& node, const std::string& sentence);
  void unsupport(const ComfyNode& node, const std::string& sentence);
  bool has(const std::string& id) const;  // in mapped, approximated or unsupported
};

// "ComfyUI node 3 (KSampler): ..." for each entry, then the notes; mapped entries only when `all`.
std::vector<std::string> report_sentences(const ImportReport& report, bool all = true);

// Logs the report through the "comfy" logger: a summary line, approximations and unsupported nodes
// as warnings, mapped nodes at debug level, notes as info. `source` names the file.
void log_import_report(const ImportReport& report, const std::string& source);

}  // namespace vidgraph::comfy
