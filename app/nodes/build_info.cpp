#include "nodes/build_info.h"

#include "nodes/types/attention_plugin.h"

#include <torch/csrc/api/include/torch/version.h>

#ifdef VIDGRAPH_HAVE_MEDIA
extern "C" {
#include <libavutil/avutil.h>
}
#endif  // VIDGRAPH_HAVE_MEDIA

namespace vidgraph::nodes {

std::vector<std::pair<std::string, std::string>> build_versions() {
#ifdef VIDGRAPH_HAVE_MEDIA
  const std::string ffmpeg = av_version_info();
#else
  const std::string ffmpeg = "not built (VIDGRAPH_MEDIA=OFF)";
#endif  // VIDGRAPH_HAVE_MEDIA
  return {
      {"Vidgraph", VIDGRAPH_VERSION_STRING},
      {"LibTorch", TORCH_VERSION},
      {"FFmpeg", ffmpeg},
      {"GPU kernels", VIDGRAPH_GPU_BACKEND_NAME},
  };
}

std::string attention_plugin_version() { return attention_plugin_description(); }

}  // namespace vidgraph::nodes
