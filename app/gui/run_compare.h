// Internal: the History panel's Compare videos. Two runs' videos (MP4, WebM or PNG-sequence folders,
// as the run history names them) decoded in step into one clip, the first run's frames on the left
// and the second's on the right, over their common frames, for the preview player (which can
// export it). Frames of different heights are an error, as in `vidgraph-run compare`.
#pragma once

#include <QtCore/QString>

#include "engine/result.h"
#include "gui/run_controller.h"

namespace vidgraph::gui {

// The clip, or an error sentence naming the file (a build without media support says so).
engine::Result<PreviewClip> side_by_side_clip(const QString& first, const QString& second);

}  // namespace vidgraph::gui
