// Implements dataset_captions.h.
#include "nodes/datasets/dataset_captions.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "nodes/input_file.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

namespace {

std::string trimmed(const std::string& text) {
  const char* space = " \t\r\n\f\v";
  const auto begin = text.find_first_not_of(space);
  if (begin == std::string::npos) return {};
  return text.substr(begin, text.find_last_not_of(space) - begin + 1);
}

// Splits one CSV record into fields (quoted fields may hold commas and doubled quotes).
bool split_csv(const std::string& line, std::vector<std::string>* fields) {
  fields->assign(1, std::string());
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields->back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields->back() += c;
      }
    } else if (c == '"' && trimmed(fields->back()).empty()) {
      fields->back().clear();
      quoted = true;
    } else if (c == ',') {
      fields->emplace_back();
    } else {
      fields->back() += c;
    }
  }
  return !quoted;
}

std::string read_jsonl(const std::string& path, std::map<std::string, std::string>* captions) {
  std::ifstream in(path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (trimmed(line).empty()) continue;
    const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object() || !row.contains("file") || !row["file"].is_string() ||
        !row.contains("caption") || !row["caption"].is_string()) {
      return "Line " + std::to_string(number) + " of '" + path + "' is not a JSON object with string "
             "fields \"file\" and \"caption\"; fix or remove it.";
    }
    (*captions)[row["file"].get<std::string>()] = row["caption"].get<std::string>();
  }
  return {};
}

std::string read_csv(const std::string& path, std::map<std::string, std::string>* captions) {
  std::ifstream in(path);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trimmed(line).empty()) continue;
    std::vector<std::string> fields;
    if (!split_csv(line, &fields) || fields.size() != 2) {
      return "Line " + std::to_string(number) + " of '" + path + "' is not a `file,caption` row (quote "
             "captions that hold commas: \"a, b\").";
    }
    if (number == 1 && trimmed(fields[0]) == "file" && trimmed(fields[1]) == "caption") continue;
    (*captions)[trimmed(fields[0])] = fields[1];
  }
  return {};
}

bool read_small_text(const fs::path& path, std::string* text) {
  std::error_code ec;
  if (fs::file_size(path, ec) > kMaxCaptionBytes * 4 || ec) return false;
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  *text = buffer.str();
  return static_cast<bool>(in) || in.eof();
}

}  // namespace

std::string read_caption_manifest(const std::string& folder, CaptionManifest* out) {
  *out = CaptionManifest{};
  const fs::path jsonl = fs::path(folder) / "captions.jsonl";
  const fs::path csv = fs::path(folder) / "captions.csv";
  std::error_code ec;
  const bool has_jsonl = fs::is_regular_file(jsonl, ec);
  const bool has_csv = fs::is_regular_file(csv, ec);
  if (has_jsonl && has_csv) {
    return "Dataset folder '" + folder + "' has both captions.jsonl and captions.csv; keep one.";
  }
  if (!has_jsonl && !has_csv) return {};
  out->path = (has_jsonl ? jsonl : csv).string();
  return has_jsonl ? read_jsonl(out->path, &out->captions) : read_csv(out->path, &out->captions);
}

bool find_caption(const std::string& folder, const std::string& name, const CaptionManifest& manifest,
                  std::string* caption, std::string* error) {
  const fs::path clip(name);
  const fs::path txt = fs::path(folder) / ((clip.has_extension() ? clip.stem() : clip).string() + ".txt");
  std::error_code ec;
  std::string where;
  std::string text;
  if (fs::is_regular_file(txt, ec)) {
    where = "'" + txt.string() + "'";
    if (!read_small_text(txt, &text)) {
      *error = "its caption file " + where + " is unreadable or larger than " +
               std::to_string(kMaxCaptionBytes) + " bytes";
      return false;
    }
  } else if (auto it = manifest.captions.find(name); it != manifest.captions.end()) {
    where = "'" + manifest.path + "'";
    text = it->second;
  } else {
    *error = "it has no caption: write '" + txt.filename().string() + "' beside it" +
             (manifest.path.empty() ? std::string(" or add it to captions.jsonl / captions.csv")
                                    : " or add it to '" + manifest.path + "'");
    return false;
  }
  if (!is_valid_utf8(text)) {
    *error = "its caption in " + where + " is not valid UTF-8; save it as UTF-8";
    return false;
  }
  *caption = trimmed(text);
  if (caption->empty()) {
    *error = "its caption in " + where + " is empty";
    return false;
  }
  if (caption->size() > kMaxCaptionBytes) {
    *error = "its caption in " + where + " is longer than " + std::to_string(kMaxCaptionBytes) + " bytes";
    return false;
  }
  return true;
}

}  // namespace vidgraph::nodes
