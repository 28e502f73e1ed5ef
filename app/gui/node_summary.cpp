// nodeSummary (see node_summary.h).
#include "gui/node_summary.h"

#include <set>
#include <string>

#include <QtCore/QFileInfo>

namespace vidgraph::gui {

namespace {

constexpr int kMaxLines = 3;
constexpr int kLineChars = 30;
constexpr int kExcerptChars = 28;

const std::set<std::string>& keyNames() {
  static const std::set<std::string> names{"seed", "steps", "frames", "attention", "sparsity"};
  return names;
}

QString shortValue(const nlohmann::json& v) {
  if (v.is_string()) return QString::fromStdString(v.get<std::string>());
  if (v.is_number_float()) return QString::number(v.get<double>(), 'g', 4);
  return QString::fromStdString(v.dump());
}

}  // namespace

QStringList nodeSummary(const engine::NodeType& type, const engine::Node& node) {
  const nlohmann::json params = type.params_with_defaults(node.params);
  QStringList pairs, lines;
  for (const engine::ParamSpec& spec : type.params) {
    auto it = params.find(spec.name);
    if (it == params.end() || it->is_null()) continue;
    const QString label = QString::fromStdString(spec.name);
    if (keyNames().count(spec.name)) {
      pairs << label + QLatin1Char(' ') + shortValue(*it);
    } else if (it->is_string() && !it->get<std::string>().empty()) {
      const QString text = QString::fromStdString(it->get<std::string>()).simplified();
      if (spec.kind == engine::ParamKind::Text) {
        lines << QStringLiteral("“%1”").arg(text.size() > kExcerptChars ? text.left(kExcerptChars) + QStringLiteral("…") : text);
      } else if (spec.kind == engine::ParamKind::FilePath || spec.kind == engine::ParamKind::FolderPath) {
        lines << label + QStringLiteral(": ") + QFileInfo(text).fileName();
      }
    }
  }
  // Key values first, packed a few per line.
  QStringList packed;
  QString line;
  for (const QString& p : pairs) {
    if (!line.isEmpty() && line.size() + 3 + p.size() > kLineChars) {
      packed << line;
      line.clear();
    }
    line += (line.isEmpty() ? QString() : QStringLiteral(" · ")) + p;
  }
  if (!line.isEmpty()) packed << line;
  packed += lines;
  while (packed.size() > kMaxLines) packed.removeLast();
  return packed;
}

}  // namespace vidgraph::gui
