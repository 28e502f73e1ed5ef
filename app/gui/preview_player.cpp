// PreviewPlayer (see preview_player.h).
#include "gui/preview_player.h"

#include <cstring>

#include <QtCore/QDir>
#include <QtCore/QFileInfo>
#include <QtGui/QAction>
#include <QtWidgets/QCheckBox>
#include <QtWidgets/QFileDialog>
#include <QtWidgets/QHBoxLayout>
#include <QtWidgets/QLabel>
#include <QtWidgets/QPushButton>
#include <QtWidgets/QSlider>
#include <QtWidgets/QSpinBox>
#include <QtWidgets/QStyle>
#include <QtWidgets/QToolButton>
#include <QtWidgets/QVBoxLayout>

#ifdef VIDGRAPH_HAVE_MEDIA
#include "nodes/media/video_export.h"
#endif  // VIDGRAPH_HAVE_MEDIA

namespace vidgraph::gui {

PreviewPlayer::PreviewPlayer(QWidget* parent)
    : QWidget(parent),
      screen_(new QLabel(this)),
      info_(new QLabel(this)),
      playButton_(new QToolButton(this)),
      scrub_(new QSlider(Qt::Horizontal, this)),
      loop_(new QCheckBox(tr("Loop"), this)),
      fps_(new QSpinBox(this)),
      export_(new QPushButton(tr("Export…"), this)) {
  screen_->setAlignment(Qt::AlignCenter);
  screen_->setMinimumSize(160, 90);
  screen_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Ignored);
  screen_->setStyleSheet(QStringLiteral("background: #111214;"));
  screen_->setObjectName(QStringLiteral("previewScreen"));
  screen_->setWordWrap(true);
  playButton_->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
  playButton_->setToolTip(tr("Play / pause (K)"));
  // K anywhere in the window (text fields keep their own keys: they take single-key shortcuts).
  auto* playPause = new QAction(tr("Play / Pause"), this);
  playPause->setObjectName(QStringLiteral("playPauseAction"));
  playPause->setShortcut(QKeySequence(Qt::Key_K));
  playPause->setShortcutContext(Qt::WindowShortcut);
  connect(playPause, &QAction::triggered, this, [this] { isPlaying() ? pause() : play(); });
  addAction(playPause);
  loop_->setChecked(true);
  fps_->setRange(1, 120);
  fps_->setValue(24);
  fps_->setSuffix(tr(" fps"));
  auto* controls = new QHBoxLayout;
  controls->addWidget(playButton_);
  controls->addWidget(scrub_, 1);
  controls->addWidget(info_);
  controls->addWidget(loop_);
  controls->addWidget(fps_);
  controls->addWidget(export_);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addWidget(screen_, 1);
  layout->addLayout(controls);
  connect(&timer_, &QTimer::timeout, this, &PreviewPlayer::advance);
  connect(playButton_, &QToolButton::clicked, this, [this] { isPlaying() ? pause() : play(); });
  connect(scrub_, &QSlider::valueChanged, this, [this](int v) { if (v != current_) setFrame(v); });
  connect(fps_, &QSpinBox::valueChanged, this, [this](int v) { if (isPlaying()) timer_.start(1000 / v); });
  connect(export_, &QPushButton::clicked, this, &PreviewPlayer::exportWithDialog);
  setClip({}, {});
}

void PreviewPlayer::setClip(const QString& nodeId, const PreviewClip& clip) {
  pause();
  nodeId_ = nodeId;
  clip_ = clip;
  current_ = 0;
  scrub_->setRange(0, std::max(0, frameCount() - 1));
  scrub_->setEnabled(!clip_.empty());
  playButton_->setEnabled(!clip_.empty());
  export_->setEnabled(!clip_.empty());
  if (!clip_.empty()) fps_->setValue(std::clamp(int(clip_.fps + 0.5), 1, 120));
  showFrame();
}

void PreviewPlayer::setFrame(int index) {
  if (clip_.empty()) return;
  current_ = std::clamp(index, 0, frameCount() - 1);
  showFrame();
}

void PreviewPlayer::play() {
  if (clip_.empty()) return;
  if (current_ >= frameCount() - 1) current_ = 0;
  timer_.start(1000 / std::max(1, fps_->value()));
  playButton_->setIcon(style()->standardIcon(QStyle::SP_MediaPause));
}

void PreviewPlayer::pause() {
  timer_.stop();
  playButton_->setIcon(style()->standardIcon(QStyle::SP_MediaPlay));
}

void PreviewPlayer::setLoop(bool loop) { loop_->setChecked(loop); }
void PreviewPlayer::setFps(int fps) { fps_->setValue(fps); }
int PreviewPlayer::fps() const { return fps_->value(); }

void PreviewPlayer::advance() {
  if (current_ + 1 < frameCount()) {
    ++current_;
  } else if (loop_->isChecked()) {
    current_ = 0;
  } else {
    pause();
    return;
  }
  showFrame();
}

void PreviewPlayer::showFrame() {
  if (clip_.empty()) {
    // setPixmap() clears a label's text, so the placeholder is set again each time.
    screen_->setPixmap(QPixmap());
    screen_->setText(tr("Run a workflow with a Preview Video node to see its frames here."));
    info_->setText(QStringLiteral("0/0"));
    return;
  }
  const QImage& frame = clip_.frames[current_];
  screen_->setPixmap(QPixmap::fromImage(frame.scaled(screen_->size(), Qt::KeepAspectRatio, Qt::SmoothTransformation)));
  info_->setText(QStringLiteral("%1/%2").arg(current_ + 1).arg(frameCount()));
  scrub_->blockSignals(true);
  scrub_->setValue(current_);
  scrub_->blockSignals(false);
}

void PreviewPlayer::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  showFrame();
}

QString PreviewPlayer::exportTo(const QString& path, const QString& format) {
  if (clip_.empty()) return tr("There are no frames to export; run a workflow with a Preview Video node first.");
#ifdef VIDGRAPH_HAVE_MEDIA
  nodes::Frames frames;
  frames.count = frameCount();
  frames.width = clip_.frames.front().width();
  frames.height = clip_.frames.front().height();
  frames.rgb.resize(frames.frame_bytes() * frames.count);
  for (int i = 0; i < frames.count; ++i) {
    const QImage rgb = clip_.frames[i].convertToFormat(QImage::Format_RGB888);
    for (int y = 0; y < frames.height; ++y) {
      std::memcpy(frames.frame(i) + std::size_t(y) * frames.width * 3, rgb.constScanLine(y), std::size_t(frames.width) * 3);
    }
  }
  nodes::media::ExportOptions options;
  options.path = path.toStdString();
  if (!nodes::media::parse_video_format(format.toStdString(), &options.format)) {
    return tr("Unknown export format '%1'; use mp4, webm or png.").arg(format);
  }
  options.fps = fps_->value();
  options.workflow_json = clip_.workflowJson;  // as Export Video embeds its run's workflow
  // The file dialog already asked; even so only an earlier output of the same kind is replaced.
  options.naming = nodes::Naming::Overwrite;
  std::string error;
  if (!nodes::media::export_video(frames, options, &error)) return QString::fromStdString(error);
  return {};
#else
  if (format != QLatin1String("png")) {
    return tr("This build has no video encoder (built without VIDGRAPH_MEDIA); export as a PNG sequence.");
  }
  if (QFileInfo::exists(path)) return tr("%1 already exists; choose a new folder name for the PNG sequence.").arg(path);
  if (!QDir().mkpath(path)) return tr("Cannot create the folder %1; choose a writable place.").arg(path);
  for (int i = 0; i < frameCount(); ++i) {
    const QString file = QDir(path).filePath(QStringLiteral("frame_%1.png").arg(i, 5, 10, QLatin1Char('0')));
    if (!clip_.frames[i].save(file, "PNG")) return tr("Cannot write %1; check the disk space and permissions.").arg(file);
  }
  return {};
#endif  // VIDGRAPH_HAVE_MEDIA
}

void PreviewPlayer::exportWithDialog() {
  QString selected;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export preview"), QDir::home().filePath(QStringLiteral("preview.mp4")),
      tr("MP4 video (*.mp4);;WebM video (*.webm);;PNG sequence folder (*)"), &selected);
  if (path.isEmpty()) return;
  const QString format = selected.startsWith(QLatin1String("MP4")) ? QStringLiteral("mp4")
                         : selected.startsWith(QLatin1String("WebM")) ? QStringLiteral("webm")
                                                                      : QStringLiteral("png");
  const QString error = exportTo(path, format);
  Q_EMIT message(error.isEmpty() ? tr("Exported %1").arg(path) : error);
}

}  // namespace vidgraph::gui
