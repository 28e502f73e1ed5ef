// Load Video Dataset: lists a folder of captioned clips (video_dataset.h) and checks each one
// cheaply (decodable container, frame count, size, caption) before anything is encoded. Bad clips
// are named; `on_bad_clip` decides whether they stop the run or are skipped with a warning each.
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/datasets/video_dataset.h"
#include "nodes/input_file.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += "\n  " + line;
  return out;
}

engine::Result<engine::ValueMap> compute_load_dataset(engine::NodeContext& ctx) {
  // A folder param that is set wins over the input, so `--set dataset.folder=DIR` retargets a
  // workflow whose dataset comes from Make Demo Dataset.
  const std::string folder = !ctx.param_string("folder").empty() || !ctx.has_input("folder")
                                 ? ctx.param_path("folder")
                                 : ctx.input_as<std::string>("folder");
  if (folder.empty()) return node_error(ctx, "Set folder to a dataset folder of captioned clips.");
  const std::string bad_path = check_input_path("folder", folder, InputKind::Folder,
                                                "a folder of clips with captions");
  if (!bad_path.empty()) return node_error(ctx, bad_path);
  const int min_frames = static_cast<int>(ctx.param_int("frames"));
  DatasetScan scan = scan_video_dataset(folder, min_frames, [&ctx] { return ctx.cancelled(); });
  if (!scan.error.empty()) return node_error(ctx, scan.error);
  const bool skip = ctx.param_string("on_bad_clip") == "skip";
  if (!scan.bad.empty() && !skip) {
    return node_error(ctx, std::to_string(scan.bad.size()) + " clip(s) of '" + folder + "' cannot be "
                           "used (fix them, or set on_bad_clip to skip):" + joined(scan.bad));
  }
  for (const std::string& line : scan.bad) ctx.log_warn("Skipped clip " + line);
  if (scan.dataset.clips.empty()) {
    return node_error(ctx, "Dataset folder '" + folder + "' has no usable clips" +
                           (scan.bad.empty() ? std::string(": put .mp4/.webm files or folders of "
                                                           "PNG frames there, each with a caption.")
                                             : ":" + joined(scan.bad)));
  }
  ctx.log_info("Dataset '" + folder + "': " + std::to_string(scan.dataset.clips.size()) +
               " clip(s)" + (scan.bad.empty() ? std::string()
                                              : ", " + std::to_string(scan.bad.size()) + " skipped") +
               ".");
  const std::size_t bytes = sizeof(VideoDataset) + scan.dataset.clips.size() * sizeof(DatasetClip);
  return engine::ValueMap{
      {"dataset", engine::make_value(kDatasetType, std::move(scan.dataset), bytes)}};
}

}  // namespace

engine::NodeType load_video_dataset_node() {
  engine::NodeType t;
  t.name = "LoadVideoDataset";
  t.display_name = "Load Video Dataset";
  t.category = "training";
  t.description = "Lists a folder of training clips: MP4/WebM files or folders of PNG frames, each "
                  "captioned by NAME.txt beside it or by a captions.jsonl / captions.csv manifest. "
                  "Every clip is checked (it opens, has enough frames, has a non-empty UTF-8 "
                  "caption) before anything is encoded; bad clips are named.";
  t.inputs = {{"folder", kPathType, true,
               "Optional: the dataset folder from another node (e.g. Make Demo Dataset), used while "
               "the folder param is empty."}};
  t.outputs = {{"dataset", kDatasetType, false, "The checked clips and captions."}};
  t.params = {
      ParamSpec::folder_path("folder", "",
                             "The dataset folder (clips and captions at its top level); when set, it "
                             "wins over the folder input."),
      ParamSpec::integer("frames", 17, 1, 100000,
                         "Source frames a clip needs at least (Encode Dataset's frames x stride)."),
      ParamSpec::enumeration("on_bad_clip", {"fail", "skip"}, "fail",
                             "fail: stop and name every bad clip; skip: leave them out, with a "
                             "warning each."),
  };
  t.fingerprint = [](const nlohmann::json& params, const engine::RunOptions& options) {
    require_utf8_params(params);
    const std::string folder = params.value("folder", std::string());
    return folder.empty() ? std::string() : dataset_folder_fingerprint(options.resolve_path(folder));
  };
  t.compute = compute_load_dataset;
  return t;
}

}  // namespace vidgraph::nodes
