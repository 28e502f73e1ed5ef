// Implements run_compare.h over the media layer's frame streams (FFmpeg), when the build has them.
#include "gui/run_compare.h"

#include <QtGui/QPainter>

#if defined(VIDGRAPH_GUI_HAVE_NODES) && defined(VIDGRAPH_HAVE_MEDIA)
#define VIDGRAPH_GUI_COMPARES_VIDEOS 1
#include "nodes/media/video_probe.h"
#endif

namespace vidgraph::gui {

#ifdef VIDGRAPH_GUI_COMPARES_VIDEOS
engine::Result<PreviewClip> side_by_side_clip(const QString& first, const QString& second) {
  namespace media = nodes::media;
  media::VideoInfo info_a, info_b;
  std::string error;
  const auto a = media::FrameStream::open(first.toStdString(), &info_a, &error);
  if (!a) return engine::make_error(error);
  const auto b = media::FrameStream::open(second.toStdString(), &info_b, &error);
  if (!b) return engine::make_error(error);
  if (info_a.height != info_b.height) {
    return engine::make_error("The two videos are " + std::to_string(info_a.height) + " and " +
                              std::to_string(info_b.height) + " pixels high; side by side needs one height.");
  }
  PreviewClip clip;
  clip.fps = info_a.fps > 0 ? info_a.fps : 24.0;
  nodes::Image fa, fb;
  while (a->next(&fa, &error) && b->next(&fb, &error)) {
    QImage both(fa.width + fb.width, fa.height, QImage::Format_RGB888);
    QPainter painter(&both);
    painter.drawImage(0, 0, QImage(fa.rgb.data(), fa.width, fa.height, fa.width * 3, QImage::Format_RGB888));
    painter.drawImage(fa.width, 0, QImage(fb.rgb.data(), fb.width, fb.height, fb.width * 3, QImage::Format_RGB888));
    painter.end();
    clip.frames.push_back(both);
  }
  if (!error.empty()) return engine::make_error(error);
  if (clip.frames.isEmpty()) return engine::make_error("'" + first.toStdString() + "' or '" + second.toStdString() +
                                                       "' has no frame to compare.");
  return clip;
}

engine::Result<QImage> video_thumbnail(const QString& video, int height) {
  nodes::media::VideoInfo info;
  std::string error;
  const auto frames = nodes::media::FrameStream::open(video.toStdString(), &info, &error);
  if (!frames) return engine::make_error(error);
  nodes::Image first;
  if (!frames->next(&first, &error)) {
    return engine::make_error(error.empty() ? "'" + video.toStdString() + "' has no frame." : error);
  }
  const QImage image(first.rgb.data(), first.width, first.height, first.width * 3, QImage::Format_RGB888);
  return image.scaledToHeight(height, Qt::SmoothTransformation);  // a copy: `first` goes away
}
#else
engine::Result<PreviewClip> side_by_side_clip(const QString&, const QString&) {
  return engine::make_error("This build has no media support (FFmpeg), so it cannot compare videos.");
}

engine::Result<QImage> video_thumbnail(const QString&, int) {
  return engine::make_error("This build has no media support (FFmpeg), so it cannot read videos.");
}
#endif  // VIDGRAPH_GUI_COMPARES_VIDEOS

}  // namespace vidgraph::gui
