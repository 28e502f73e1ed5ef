// NodePalette (see node_palette.h).
#include "gui/node_palette.h"

#include <algorithm>

#include <QtCore/QCoreApplication>
#include <QtGui/QKeyEvent>
#include <QtWidgets/QLabel>
#include <QtWidgets/QLineEdit>
#include <QtWidgets/QListWidget>
#include <QtWidgets/QVBoxLayout>

namespace vidgraph::gui {

namespace {

QString displayName(const engine::NodeType& t) {
  return QString::fromStdString(t.display_name.empty() ? t.name : t.display_name);
}

// 0 = no match, 2 = every word in a name or category, 1 = some word only in the description.
int matchRank(const engine::NodeType& t, const QStringList& words) {
  const QString name = QString::fromStdString(t.name) + QLatin1Char(' ') + displayName(t) + QLatin1Char(' ') +
                       QString::fromStdString(t.category);
  const QString description = QString::fromStdString(t.description);
  int rank = 2;
  for (const QString& w : words) {
    if (name.contains(w, Qt::CaseInsensitive)) continue;
    if (description.contains(w, Qt::CaseInsensitive)) {
      rank = 1;
      continue;
    }
    return 0;
  }
  return rank;
}

QString compatiblePort(const engine::NodeType& t, const PortFilter& f) {
  const std::string wire = f.valueType.toStdString();
  for (const auto& p : f.needInput ? t.inputs : t.outputs) {
    const bool ok = f.needInput ? engine::value_types_compatible(wire, p.type) : engine::value_types_compatible(p.type, wire);
    if (ok) return QString::fromStdString(p.name);
  }
  return {};
}

}  // namespace

std::vector<PaletteEntry> paletteEntries(const engine::Registry& registry, const QString& query,
                                         const std::optional<PortFilter>& filter) {
  const QStringList words = query.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
  std::vector<std::pair<int, PaletteEntry>> ranked;
  for (const engine::NodeType* t : registry.list()) {
    const int rank = matchRank(*t, words);
    if (rank == 0) continue;
    PaletteEntry e{t, {}};
    if (filter) {
      e.port = compatiblePort(*t, *filter);
      if (e.port.isEmpty()) continue;
    }
    ranked.emplace_back(rank, e);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<PaletteEntry> out;
  for (auto& r : ranked) out.push_back(r.second);
  return out;
}

NodePalette::NodePalette(const engine::Registry& registry, QWidget* parent)
    : QFrame(parent, Qt::Popup), registry_(registry), search_(new QLineEdit(this)), list_(new QListWidget(this)) {
  setFrameShape(QFrame::StyledPanel);
  setMinimumSize(360, 340);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(6, 6, 6, 6);
  search_->setPlaceholderText(tr("Search nodes by name, category or description"));
  search_->setClearButtonEnabled(true);
  search_->installEventFilter(this);
  layout->addWidget(search_);
  layout->addWidget(list_);
  connect(search_, &QLineEdit::textChanged, this, [this] { refresh(); });
  connect(list_, &QListWidget::itemActivated, this, [this] { chooseCurrent(); });
}

void NodePalette::popup(QPoint globalPos, const std::optional<PortFilter>& filter) {
  filter_ = filter;
  search_->clear();
  refresh();
  move(globalPos);
  show();
  raise();
  search_->setFocus();
}

void NodePalette::setQuery(const QString& query) {
  search_->setText(query);
}

int NodePalette::visibleCount() const {
  return list_->count();
}

void NodePalette::refresh() {
  list_->clear();
  for (const PaletteEntry& e : paletteEntries(registry_, search_->text(), filter_)) {
    auto* item = new QListWidgetItem(QStringLiteral("%1   —   %2").arg(displayName(*e.type), QString::fromStdString(e.type->category)));
    item->setData(Qt::UserRole, QString::fromStdString(e.type->name));
    item->setData(Qt::UserRole + 1, e.port);
    item->setToolTip(QString::fromStdString(e.type->description));
    list_->addItem(item);
  }
  if (list_->count() > 0) list_->setCurrentRow(0);
}

void NodePalette::chooseCurrent() {
  QListWidgetItem* item = list_->currentItem();
  if (!item && list_->count() > 0) item = list_->item(0);
  if (!item) return;
  hide();
  Q_EMIT nodeChosen(item->data(Qt::UserRole).toString(), item->data(Qt::UserRole + 1).toString());
}

bool NodePalette::eventFilter(QObject* watched, QEvent* event) {
  if (watched == search_ && event->type() == QEvent::KeyPress) {
    auto* key = static_cast<QKeyEvent*>(event);
    switch (key->key()) {
      case Qt::Key_Down:
      case Qt::Key_Up:
      case Qt::Key_PageDown:
      case Qt::Key_PageUp:
        QCoreApplication::sendEvent(list_, event);
        return true;
      case Qt::Key_Return:
      case Qt::Key_Enter:
        chooseCurrent();
        return true;
      case Qt::Key_Escape:
        hide();
        return true;
      default:
        break;
    }
  }
  return QFrame::eventFilter(watched, event);
}

}  // namespace vidgraph::gui
