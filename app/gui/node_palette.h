// NodePalette: the searchable list of node types (Tab or double-click on the canvas; also opened
// when a wire is dropped on empty canvas, then filtered to the types with a compatible port).
//
// Contract: paletteEntries() is the pure filter the widget shows: every word of the query must
// appear in the type's name, display name, category or description (case-insensitive); with a
// PortFilter only types having a port that can take the dragged wire are listed. Name matches
// rank before description matches; ties keep the registry order (category, then name).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <QtWidgets/QFrame>

#include "engine/registry.h"

class QLineEdit;
class QListWidget;

namespace vidgraph::gui {

struct PortFilter {
  QString valueType;   // the dragged wire's value type
  bool needInput = true;  // true: the wire comes from an output, so the new node needs a matching input
};

struct PaletteEntry {
  const engine::NodeType* type = nullptr;
  QString port;  // with a PortFilter: the first compatible port of the type
};

std::vector<PaletteEntry> paletteEntries(const engine::Registry& registry, const QString& query,
                                         const std::optional<PortFilter>& filter = std::nullopt);

class NodePalette : public QFrame {
  Q_OBJECT

 public:
  NodePalette(const engine::Registry& registry, QWidget* parent = nullptr);

  // Shows the palette at a global position (a popup), cleared and focused.
  void popup(QPoint globalPos, const std::optional<PortFilter>& filter = std::nullopt);
  void setQuery(const QString& query);
  int visibleCount() const;
  // Chooses the current (or first) entry, as Return does.
  void chooseCurrent();

 Q_SIGNALS:
  // `port` is the compatible port when a PortFilter was given, else empty.
  void nodeChosen(const QString& typeName, const QString& port);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void refresh();

  const engine::Registry& registry_;
  std::optional<PortFilter> filter_;
  QLineEdit* search_;
  QListWidget* list_;
};

}  // namespace vidgraph::gui
