// Implements model_folder_pick.h.
#include "nodes/model/model_folder_pick.h"

#include <map>
#include <filesystem>
#include <vector>

#include "models/io/file_kind.h"
#include "models/io/model_file_info.h"
#include "models/io/tensor_file.h"
#include "engine/listing.h"

namespace vidgraph::nodes {

namespace mio = model_io;

namespace {

const char* wanted(mio::ModelKind kind) {
  switch (kind) {
    case mio::ModelKind::Dit: return "wan2.2-ti2v-5b";
    case mio::ModelKind::Vae: return "wan2.2-vae";
    case mio::ModelKind::TextEncoder: return "umt5-xxl";
    case mio::ModelKind::Lora: return "lora";
    case mio::ModelKind::LightVae: return "taehv";
  }
  return "";
}

const char* what(mio::ModelKind kind) {
  switch (kind) {
    case mio::ModelKind::Dit: return "Wan2.2-TI2V-5B DiT";
    case mio::ModelKind::Vae: return "Wan2.2 VAE";
    case mio::ModelKind::TextEncoder: return "umT5-XXL text encoder";
    case mio::ModelKind::Lora: return "LoRA";
    case mio::ModelKind::LightVae: return "TAEHV light decoder";
  }
  return "";
}

}  // namespace

engine::Result<std::string> pick_model_file(const mio::ModelFolders& folders, mio::ModelKind kind,
                                            const std::string& param) {
  const auto listed = folders.folders.find(kind);
  const std::vector<std::string> dirs = listed == folders.folders.end() ? std::vector<std::string>{} : listed->second;
  // The Wan2.2-5B part when there is one, else any file of the kind (a tiny or other Wan model).
  std::vector<std::string> exact, family, others;
  std::map<std::string, std::string> model_of;  // a DiT's model, for the list of several
  for (const std::string& path : mio::list_model_files(folders, kind)) {
    const mio::ModelFileInfo info = mio::inspect_model_file(path);
    if (!info.model.empty()) model_of[path] = info.model;
    mio::ModelKind found;
    if (info.detected == wanted(kind)) {
      exact.push_back(path);
    } else if (mio::detected_kind(info, &found) && found == kind) {
      family.push_back(path);
    } else {
      const std::string is = !info.detected.empty() ? info.detected : info.error.empty() ? info.format : "unreadable";
      others.push_back(std::filesystem::path(path).filename().string() + " (" + is + ")");
    }
  }
  const std::vector<std::string>& matches = exact.empty() ? family : exact;
  if (matches.size() == 1) return matches.front();
  const std::string where = dirs.empty() ? std::string("no ") + mio::model_kind_folder(kind) + " folder"
                                         : "'" + engine::comma_list(dirs) + "'";
  if (matches.empty()) {
    const std::string seen =
        others.empty() ? std::string(" (no weight files there)") : " (seen: " + engine::comma_list(others) + ")";
    return engine::make_error("No " + std::string(what(kind)) + " found in " + where + seen +
                              "; put the file there or set the " + param + " param to it.");
  }
  std::vector<std::string> named;
  for (const std::string& m : matches) {
    const auto model = model_of.find(m);
    named.push_back(model == model_of.end() ? m : m + " (" + model->second + ")");
  }
  // Several models (A14B experts, Wan2.1 sizes) are named by what they are, not as the 5B.
  const std::string several = exact.empty() && kind == mio::ModelKind::Dit ? "Wan DiT" : what(kind);
  return engine::make_error("Several " + several + " files are in " + where + ": " + engine::comma_list(named) +
                            "; set the " + param + " param to the one to use.");
}

engine::Result<mio::ModelFolders> search_folders(const std::string& model_path, const std::string& model_paths_file,
                                                 const std::string& default_model_paths_file) {
  mio::ModelFolders folders;
  if (!model_path.empty()) folders = mio::comfy_model_folders(model_path);
  const std::string& yaml = model_paths_file.empty() ? default_model_paths_file : model_paths_file;
  if (yaml.empty()) return folders;
  try {
    folders.add(mio::read_extra_model_paths(yaml));
  } catch (const std::exception& e) {
    return engine::make_error(std::string(e.what()) + (model_paths_file.empty() ? " (from $VIDGRAPH_MODEL_PATHS)" : ""));
  }
  return folders;
}

bool carries_tokenizer(const std::string& text_encoder) {
  std::error_code ec;
  if (text_encoder.empty() || !std::filesystem::is_regular_file(text_encoder, ec)) return false;
  try {
    const mio::FileKind kind = mio::sniff_file_kind(mio::read_file_head(text_encoder));
    if (kind != mio::FileKind::Safetensors && kind != mio::FileKind::Gguf) return false;  // a .pth carries none
    // The shared header: the checkpoint manifest and the encoder's loader take it from here.
    return mio::inspect_headers(text_encoder, {mio::TensorFile::open_shared(text_encoder)}).has_tokenizer;
  } catch (const std::exception&) {
    return false;  // unreadable: the text encoder's loader names the problem when it runs
  }
}

}  // namespace vidgraph::nodes
