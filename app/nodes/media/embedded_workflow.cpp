// Implements embedded_workflow.h: the container's tags through libavformat (header only), or the
// PNG sequence's metadata.json.
#include "nodes/media/embedded_workflow.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "nodes/media/ffmpeg_util.h"

namespace vidgraph::nodes::media {
namespace fs = std::filesystem;

namespace {

using namespace ffmpeg;

constexpr std::uintmax_t kMaxMetadataBytes = 32u << 20;  // a workflow file's own limit

std::string extension_of(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

bool read_sequence_metadata(const fs::path& file, std::string* workflow_json, std::string* error) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec || size > kMaxMetadataBytes) {
    return fail(error, "'" + file.string() + "' cannot be read as a Vidgraph PNG sequence's metadata.json.");
  }
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json meta = nlohmann::json::parse(text.str(), nullptr, false);
  if (!in || !meta.is_object()) {
    return fail(error, "'" + file.string() + "' is not the metadata.json of a Vidgraph PNG sequence.");
  }
  const auto it = meta.find("workflow");
  if (it == meta.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return fail(error, "'" + file.string() + "' holds no workflow (Vidgraph writes it as \"workflow\").");
  }
  *workflow_json = it->get<std::string>();
  return true;
}

}  // namespace

bool may_embed_workflow(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return fs::exists(p / "metadata.json", ec);
  if (p.filename() == "metadata.json") return true;
  const std::string ext = extension_of(p);
  return ext == ".mp4" || ext == ".webm" || ext == ".mov" || ext == ".mkv";
}

bool read_embedded_workflow(const std::string& path, std::string* workflow_json, std::string* error) {
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) return read_sequence_metadata(p / "metadata.json", workflow_json, error);
  if (p.filename() == "metadata.json") return read_sequence_metadata(p, workflow_json, error);
  quiet_logs();
  AVFormatContext* raw = nullptr;
  const int rc = avformat_open_input(&raw, path.c_str(), nullptr, nullptr);
  if (rc < 0) return fail(error, "Could not open '" + path + "' to read its workflow: " + error_text(rc) + ".");
  InputPtr fc(raw);
  // MP4 keeps the tag on the container; Matroska/WebM muxers may keep it on the stream.
  const AVDictionaryEntry* tag = av_dict_get(fc->metadata, "comment", nullptr, 0);
  for (unsigned i = 0; !tag && i < fc->nb_streams; ++i) tag = av_dict_get(fc->streams[i]->metadata, "comment", nullptr, 0);
  if (!tag || !tag->value || !*tag->value) {
    return fail(error, "'" + path + "' holds no Vidgraph workflow (no comment tag); only outputs of Export "
                       "Video carry one.");
  }
  *workflow_json = tag->value;
  return true;
}

}  // namespace vidgraph::nodes::media
