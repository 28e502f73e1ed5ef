// PreviewPlayer: plays the frames a Preview Video node posted (play, pause, scrub, loop, fps) and
// exports them: MP4/WebM/PNG sequence through the nodes' media export when the build has media
// support (with the clip's run workflow embedded, as Export Video does), else a PNG sequence
// written with Qt.
//
// Contract: setClip() replaces the clip and shows its first frame; playback is a QTimer at the
// chosen fps on the GUI thread (no decoding happens here: frames arrive decoded).
#pragma once

#include <QtCore/QTimer>
#include <QtWidgets/QWidget>

#include "gui/run_controller.h"

class QCheckBox;
class QLabel;
class QSlider;
class QSpinBox;
class QToolButton;
class QPushButton;

namespace vidgraph::gui {

class PreviewPlayer : public QWidget {
  Q_OBJECT

 public:
  explicit PreviewPlayer(QWidget* parent = nullptr);

  void setClip(const QString& nodeId, const PreviewClip& clip);
  const PreviewClip& clip() const { return clip_; }
  int frameCount() const { return static_cast<int>(clip_.frames.size()); }
  int currentFrame() const { return current_; }
  void setFrame(int index);
  void play();
  void pause();
  bool isPlaying() const { return timer_.isActive(); }
  void setLoop(bool loop);
  void setFps(int fps);
  int fps() const;

  // Exports the clip; `format` is "mp4", "webm" or "png" (a folder of PNGs). Returns "" or an error.
  QString exportTo(const QString& path, const QString& format);

 Q_SIGNALS:
  void message(const QString& text);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void advance();
  void showFrame();
  void exportWithDialog();

  PreviewClip clip_;
  QString nodeId_;
  int current_ = 0;
  QTimer timer_;
  QLabel* screen_;
  QLabel* info_;
  QToolButton* playButton_;
  QSlider* scrub_;
  QCheckBox* loop_;
  QSpinBox* fps_;
  QPushButton* export_;
};

}  // namespace vidgraph::gui
