// `vidgraph-run compare A B [--json] [--side-by-side OUT] [--difference OUT] [--gain G]`: PSNR and
// SSIM per frame and overall between two videos (MP4, WebM or PNG-sequence folders; the metrics
// are frame_metrics.h's), and optional comparison videos written like Export Video's (a temporary
// file published without replacing anything: an existing OUT is an error, checked before decoding).
// Frames of different sizes are an error; different frame counts compare the common first frames
// with a warning. Exit codes: 0 compared, 2 bad arguments, unreadable input, size mismatch or an
// output that exists or cannot be written.
// Lives in the executable (it needs the media layer); run_cli.cpp reaches it through RunnerConfig.
#pragma once

#include "run_args.h"

namespace vidgraph::cli {

int command_compare(const RunArgs& args);

}  // namespace vidgraph::cli
