// HistoryPanel (see history_panel.h).
#include "gui/history_panel.h"

#include <QtCore/QDir>
#include <QtCore/QDateTime>
#include <QtCore/QFileInfo>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QHeaderView>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QTreeWidget>
#include <QtWidgets/QVBoxLayout>

#include "engine/run_history.h"
#include "gui/gui_log.h"
#include "gui/run_compare.h"

namespace vidgraph::gui {

namespace {

using nlohmann::json;

QString text_of(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_string() ? QString::fromStdString(it->get<std::string>()) : QString();
}

// The files a run wrote, by name, in one cell ("demo.mp4, demo.png").
QString files_of(const json& entry) {
  QStringList names;
  const auto files = entry.find("files");
  if (files != entry.end() && files->is_array()) {
    for (const json& f : *files) names << QDir(text_of(f, "path")).dirName();
  }
  return names.join(QStringLiteral(", "));
}

// The first video a run wrote: an MP4 or WebM file, or a PNG-sequence folder; "" when none.
QString video_of(const json& entry) {
  const auto files = entry.find("files");
  if (files == entry.end() || !files->is_array()) return {};
  for (const json& f : *files) {
    const QString path = text_of(f, "path");
    const QFileInfo info(path);
    const QString suffix = info.suffix().toLower();
    const bool png_sequence = info.isDir() && QFileInfo::exists(path + QStringLiteral("/metadata.json"));
    if (suffix == QLatin1String("mp4") || suffix == QLatin1String("webm") || png_sequence) return path;
  }
  return {};
}

}  // namespace

HistoryPanel::HistoryPanel(QWidget* parent)
    : QWidget(parent),
      list_(new QTreeWidget(this)),
      open_(new QPushButton(tr("Open"), this)),
      rerun_(new QPushButton(tr("Run again"), this)),
      compare_(new QPushButton(tr("Compare settings"), this)),
      compareVideos_(new QPushButton(tr("Compare videos"), this)),
      note_(new QLabel(this)) {
  list_->setColumnCount(5);
  list_->setHeaderLabels({tr("Run"), tr("Started (UTC)"), tr("Status"), tr("Seconds"), tr("Files")});
  list_->setRootIsDecorated(false);
  list_->setIconSize(QSize(kThumbnailHeight * 16 / 9, kThumbnailHeight));
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  list_->header()->setStretchLastSection(true);
  open_->setToolTip(tr("Open the run's workflow, with the values it ran with, as an untitled document"));
  rerun_->setToolTip(tr("Open the run's workflow and run it again"));
  compare_->setToolTip(tr("Show the params the two selected runs differ in"));
  compareVideos_->setToolTip(tr("Play the two selected runs' videos side by side in the preview"));
  auto* refresh = new QPushButton(tr("Refresh"), this);
  note_->setWordWrap(true);
  note_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* buttons = new QHBoxLayout;
  for (QPushButton* b : {open_, rerun_, compare_, compareVideos_, refresh}) buttons->addWidget(b);
  buttons->addStretch(1);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(list_, 1);
  layout->addLayout(buttons);
  layout->addWidget(note_);
  connect(open_, &QPushButton::clicked, this, [this] { openSelected(false); });
  connect(rerun_, &QPushButton::clicked, this, [this] { openSelected(true); });
  connect(compare_, &QPushButton::clicked, this, [this] { note_->setText(compareSelected()); });
  connect(compareVideos_, &QPushButton::clicked, this, &HistoryPanel::compareSelectedVideos);
  connect(refresh, &QPushButton::clicked, this, &HistoryPanel::refresh);
  connect(list_, &QTreeWidget::itemSelectionChanged, this, &HistoryPanel::updateButtons);
  connect(list_, &QTreeWidget::itemDoubleClicked, this, [this] { openSelected(false); });
  updateButtons();
}

QPixmap HistoryPanel::thumbnailOf(const QString& video) {
  if (video.isEmpty()) return {};
  const QFileInfo info(video);
  const QString key = video + QLatin1Char('|') + QString::number(info.lastModified().toMSecsSinceEpoch());
  if (auto it = thumbnails_.find(key); it != thumbnails_.end()) return *it;
  auto image = video_thumbnail(video, kThumbnailHeight);
  if (!image.ok()) guiLogger()->debug("No thumbnail for {}: {}", video.toStdString(), image.error().message);
  const QPixmap pixmap = image.ok() ? QPixmap::fromImage(*image) : QPixmap();
  thumbnails_.insert(key, pixmap);  // a video that cannot be read is not tried again while unchanged
  return pixmap;
}

void HistoryPanel::setFolder(const QString& folder) {
  folder_ = folder;
  refresh();
}

void HistoryPanel::refresh() {
  list_->clear();
  runs_.clear();
  note_->clear();
  auto history = engine::read_run_history(folder_.toStdString());
  if (!history.ok()) {
    note_->setText(QString::fromStdString(history.error().message));
    guiLogger()->warn("{}", history.error().message);
    updateButtons();
    return;
  }
  runs_ = std::move(history->runs);
  for (int i = static_cast<int>(runs_.size()) - 1; i >= 0; --i) {  // newest first
    const json& r = runs_[i];
    const double seconds = r.value("seconds", 0.0);
    auto* item = new QTreeWidgetItem(list_, {QString::number(i + 1), text_of(r, "started"), text_of(r, "status"),
                                             QString::number(seconds, 'f', 1), files_of(r)});
    item->setData(0, Qt::UserRole, i);
    item->setToolTip(2, text_of(r, "error"));
    if (const QPixmap thumbnail = thumbnailOf(video_of(r)); !thumbnail.isNull()) item->setIcon(0, thumbnail);
  }
  if (history->skipped > 0) note_->setText(tr("%n line(s) of the history are not runs and were skipped.", nullptr,
                                             history->skipped));
  if (runs_.empty()) note_->setText(tr("No runs in %1 yet.").arg(QDir::toNativeSeparators(folder_)));
  updateButtons();
}

std::vector<int> HistoryPanel::selectedRuns() const {
  std::vector<int> runs;
  for (const QTreeWidgetItem* item : list_->selectedItems()) runs.push_back(item->data(0, Qt::UserRole).toInt());
  std::sort(runs.begin(), runs.end());
  return runs;
}

QString HistoryPanel::compareSelected() const {
  const std::vector<int> runs = selectedRuns();
  if (runs.size() != 2) return tr("Select two runs to compare their settings.");
  const std::vector<std::string> lines =
      engine::param_differences(runs_[runs[0]]["workflow"], runs_[runs[1]]["workflow"]);
  const QString title = tr("Run %1 → run %2:").arg(runs[0] + 1).arg(runs[1] + 1);
  if (lines.empty()) return title + QLatin1Char(' ') + tr("the same settings.");
  QStringList text{title};
  for (const std::string& line : lines) text << QString::fromStdString(line);
  return text.join(QLatin1Char('\n'));
}

void HistoryPanel::openSelected(bool runAfterOpening) {
  const std::vector<int> runs = selectedRuns();
  if (runs.size() != 1) return;
  const json& workflow = runs_[runs[0]]["workflow"];
  if (!workflow.is_object()) {
    note_->setText(tr("Run %1 kept no workflow.").arg(runs[0] + 1));
    return;
  }
  const QString label = tr("run %1 of %2").arg(runs[0] + 1).arg(QDir::toNativeSeparators(folder_));
  Q_EMIT openRun(QString::fromStdString(workflow.dump()), label, runAfterOpening);
}

void HistoryPanel::compareSelectedVideos() {
  const std::vector<int> runs = selectedRuns();
  if (runs.size() != 2) return;
  const QString first = video_of(runs_[runs[0]]);
  const QString second = video_of(runs_[runs[1]]);
  if (first.isEmpty() || second.isEmpty()) {
    note_->setText(tr("Run %1 wrote no video to compare.").arg((first.isEmpty() ? runs[0] : runs[1]) + 1));
    return;
  }
  Q_EMIT compareVideos(first, second, tr("run %1 | run %2").arg(runs[0] + 1).arg(runs[1] + 1));
}

void HistoryPanel::updateButtons() {
  const std::size_t selected = list_->selectedItems().size();
  open_->setEnabled(selected == 1);
  rerun_->setEnabled(selected == 1);
  compare_->setEnabled(selected == 2);
  compareVideos_->setEnabled(selected == 2);
}

}  // namespace vidgraph::gui
