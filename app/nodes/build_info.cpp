#include "nodes/build_info.h"

#include <torch/csrc/api/include/torch/version.h>

#include <dlfcn.h>

#ifdef VIDGRAPH_HAVE_MEDIA
extern "C" {
#include <libavutil/avutil.h>
}
#endif  // VIDGRAPH_HAVE_MEDIA

namespace vidgraph::nodes {

namespace {

void* loaded_symbol(const char* name) { return ::dlsym(RTLD_DEFAULT, name); }

}  // namespace

std::string blas_library() {
  using Text = const char* (*)();
  if (auto config = reinterpret_cast<Text>(loaded_symbol("openblas_get_config"))) {
    return config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  }
  if (auto version = reinterpret_cast<Text>(loaded_symbol("bli_info_get_version_str"))) {
    return std::string("BLIS ") + version();
  }
  if (loaded_symbol("mkl_get_max_threads")) return "Intel MKL";
  if (loaded_symbol("sgemm_")) {
    return "the reference BLAS (slow: install libopenblas0-pthread, or select another BLAS with "
           "update-alternatives)";
  }
  return "none found";
}

bool blas_is_reference() {
  return !loaded_symbol("openblas_get_config") && !loaded_symbol("bli_info_get_version_str") &&
         !loaded_symbol("mkl_get_max_threads") && loaded_symbol("sgemm_");
}

std::vector<std::pair<std::string, std::string>> build_versions() {
#ifdef VIDGRAPH_HAVE_MEDIA
  const std::string ffmpeg = av_version_info();
#else
  const std::string ffmpeg = "not built (VIDGRAPH_MEDIA=OFF)";
#endif  // VIDGRAPH_HAVE_MEDIA
  return {
      {"Vidgraph", VIDGRAPH_VERSION_STRING},
      {"LibTorch", TORCH_VERSION},
      {"BLAS", blas_library()},
      {"FFmpeg", ffmpeg},
      {"GPU kernels", VIDGRAPH_GPU_BACKEND_NAME},
  };
}

}  // namespace vidgraph::nodes
