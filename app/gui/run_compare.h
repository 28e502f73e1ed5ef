// Internal: the History panel's views of runs' videos (MP4, WebM or PNG-sequence folders, as the
// run history names them). Compare videos: two runs' videos decoded in step into one clip, the
// first run's frames on the left and the second's on the right, over their common frames, for the
// preview player (which can export it); frames of different heights are an error, as in
// `vidgraph-run compare`. Thumbnails: a video's first frame, small.
#pragma once

#include <QtCore/QString>
#include <QtGui/QImage>

#include "engine/result.h"
#include "gui/run_controller.h"

namespace vidgraph::gui {

// The clip, or an error sentence naming the file (a build without media support says so).
engine::Result<PreviewClip> side_by_side_clip(const QString& first, const QString& second);

// The video's first frame scaled to `height` pixels high, or an error sentence.
engine::Result<QImage> video_thumbnail(const QString& video, int height);

}  // namespace vidgraph::gui
