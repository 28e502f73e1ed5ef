// Implements run_models.h over models/io (model_folders.h, model_file_info.h).
#include "run_models.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "models/io/model_file_info.h"
#include "models/io/model_folders.h"
#include "run_cli.h"

namespace vidgraph::cli {

namespace mio = model_io;

namespace {

std::string size_text(std::uint64_t bytes) {
  char text[32];
  const double gib = double(bytes) / (1024.0 * 1024.0 * 1024.0);
  if (gib >= 1.0) {
    std::snprintf(text, sizeof text, "%.1f GiB", gib);
  } else {
    std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / (1024.0 * 1024.0));
  }
  return text;
}

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return kExitInvalid;
}

}  // namespace

int command_models(const std::vector<std::string>& folders, const std::string& model_paths,
                   const std::string& default_model_paths, bool json) {
  mio::ModelFolders roots;
  for (const std::string& folder : folders) {
    if (!mio::is_comfy_models_folder(folder) && !mio::is_comfy_models_folder(folder + "/models")) {
      return fail("'" + folder + "' is not a ComfyUI models folder (it has no diffusion_models, unet, vae, "
                  "text_encoders, clip or loras folder); give ComfyUI/models or use --model-paths FILE.");
    }
    roots.add(mio::comfy_model_folders(folder));
  }
  const std::string yaml = model_paths.empty() && folders.empty() ? default_model_paths : model_paths;
  if (!yaml.empty()) {
    try {
      roots.add(mio::read_extra_model_paths(yaml));
    } catch (const std::exception& e) {
      return fail(e.what());
    }
  }
  if (folders.empty() && yaml.empty()) {
    return fail("give a ComfyUI models folder (vidgraph-run models ~/ComfyUI/models) or "
                "--model-paths extra_model_paths.yaml (or set VIDGRAPH_MODEL_PATHS).");
  }
  nlohmann::json out{{"folders", nlohmann::json::object()}, {"files", nlohmann::json::array()}};
  std::vector<std::string> notes;  // what the bounded folder walk left out
  for (const mio::ModelKind kind : {mio::ModelKind::Dit, mio::ModelKind::Vae, mio::ModelKind::TextEncoder,
                                    mio::ModelKind::Lora, mio::ModelKind::LightVae}) {
    const char* name = mio::model_kind_folder(kind);
    const auto listed = roots.folders.find(kind);
    out["folders"][name] = listed == roots.folders.end() ? std::vector<std::string>{} : listed->second;
    if (!json) std::printf("%s%s\n", name, listed == roots.folders.end() ? " (no folder)" : "");
    for (const std::string& path : mio::list_model_files(roots, kind, &notes)) {
      const mio::ModelFileInfo info = mio::inspect_model_file(path);
      out["files"].push_back({{"kind", name}, {"path", path}, {"bytes", info.bytes}, {"format", info.format},
                              {"dtype", info.dtype}, {"tensors", info.tensors}, {"detected", info.detected},
                              {"model", info.model}, {"unsupported", info.unsupported},
                              {"has_tokenizer", info.has_tokenizer}, {"error", info.error}});
      if (json) continue;
      std::string what = info.format + (info.dtype.empty() ? "" : " " + info.dtype);
      if (!info.detected.empty()) what += "  " + (info.model.empty() ? info.detected : info.model);
      if (!info.unsupported.empty()) what += "  not run by Vidgraph: " + info.unsupported;
      if (info.has_tokenizer) what += " (+tokenizer)";
      if (!info.error.empty()) what += "  unreadable: " + info.error;
      std::printf("  %s  %s  %s\n", path.c_str(), size_text(info.bytes).c_str(), what.c_str());
    }
  }
  for (const std::string& note : notes) std::fprintf(stderr, "warning: %s\n", note.c_str());
  out["notes"] = notes;
  if (json) std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return kExitOk;
}

}  // namespace vidgraph::cli
