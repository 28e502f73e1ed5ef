// Make Demo Dataset: writes a tiny seeded training dataset of the demo scenes (models/train/
// demo_scenes.h: shapes moving, growing or bouncing, camera pans and zooms over patterns; short MP4
// clips, each with a NAME.txt caption saying what moves) for the shipped fine-tuning workflow and the
// tests: the vocabulary the demo model was trained on. It never replaces anything: a new folder is
// filled and then stamped (.vidgraph-demo-dataset.json with the settings); a folder stamped with the
// same settings is reused as it is, and any other existing, non-empty folder is refused.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <ATen/core/Tensor.h>

#include "models/train/demo_scenes.h"

#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/media/video_export.h"
#include "nodes/output_path.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

using engine::ParamSpec;

namespace {

constexpr const char* kStampName = ".vidgraph-demo-dataset.json";

// The clip of `plan` as Frames (the scenes render uint8 [T, H, W, 3]).
Frames render(const train::ScenePlan& plan, const train::SceneOptions& scenes) {
  const at::Tensor pixels = train::render_scene(plan, scenes).contiguous();
  Frames f{scenes.frames, scenes.width, scenes.height, {}};
  f.rgb.assign(pixels.data_ptr<std::uint8_t>(), pixels.data_ptr<std::uint8_t>() + pixels.numel());
  return f;
}

std::string write_text_file(const fs::path& path, const std::string& text) {
  const Published published = write_file_atomically({path.string(), Naming::Fail, OutputKind::Json},
                                                    text.data(), text.size());
  return published.error;
}

// "" = write a new dataset, "reuse" = the folder already holds this one, else the refusal.
std::string check_folder(const fs::path& folder, const std::string& stamp) {
  std::error_code ec;
  if (!fs::exists(folder, ec)) return {};
  if (!fs::is_directory(folder, ec)) return "'" + folder.string() + "' exists and is not a folder; choose another folder.";
  if (fs::is_empty(folder, ec)) return {};
  std::ifstream in(folder / kStampName);
  std::stringstream text;
  text << in.rdbuf();
  if (in && text.str() == stamp) return "reuse";
  return "Folder '" + folder.string() + "' already holds other files; Make Demo Dataset writes only into a "
         "new or empty folder (or one it made with the same settings). Choose another folder.";
}

engine::Result<engine::ValueMap> compute_make_demo_dataset(engine::NodeContext& ctx) {
  const fs::path folder = ctx.param_path("folder");
  const int clips = static_cast<int>(ctx.param_int("clips"));
  const int frames = static_cast<int>(ctx.param_int("frames"));
  const int width = static_cast<int>(ctx.param_int("width")), height = static_cast<int>(ctx.param_int("height"));
  if (width % 2 || height % 2) return node_error(ctx, "width and height must be even (H.264 needs it).");
  const std::uint64_t seed = static_cast<std::uint64_t>(ctx.param_int("seed"));
  // "scenes" 2: the clips of demo_scenes.h (version 1 drew moving squares and discs of its own).
  const std::string stamp = nlohmann::json{{"clips", clips}, {"frames", frames}, {"width", width},
                                           {"height", height}, {"seed", seed}, {"scenes", 2}}.dump() + "\n";
  const std::string state = check_folder(folder, stamp);
  const auto done = engine::ValueMap{{"folder", engine::make_value(kPathType, folder.string())}};
  if (state == "reuse") {
    ctx.log_info("Demo dataset '" + folder.string() + "' already holds these clips; reused.");
    return done;
  }
  if (!state.empty()) return node_error(ctx, state);
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) return node_error(ctx, "Could not create '" + folder.string() + "': " + ec.message() + ".");
  train::SceneOptions scenes;
  scenes.frames = frames;
  scenes.width = width;
  scenes.height = height;
  std::mt19937 random(static_cast<std::uint32_t>(seed));
  for (int i = 0; i < clips; ++i) {
    if (ctx.cancelled()) return node_error(ctx, "Making the demo dataset was cancelled.");
    ctx.progress(i, clips, "clip " + std::to_string(i + 1));
    const train::ScenePlan plan = train::plan_scene(random, scenes);
    const std::string stem = "demo_" + std::to_string(i);
    media::ExportOptions options;
    options.path = (folder / (stem + ".mp4")).string();
    options.naming = Naming::Fail;
    options.fps = 12;
    std::string error;
    if (!media::export_video(render(plan, scenes), options, &error)) return node_error(ctx, error);
    if (std::string bad = write_text_file(folder / (stem + ".txt"), plan.caption() + "\n"); !bad.empty()) {
      return node_error(ctx, bad);
    }
  }
  if (std::string bad = write_text_file(folder / kStampName, stamp); !bad.empty()) return node_error(ctx, bad);
  ctx.progress(clips, clips, "written");
  ctx.wrote(folder.string());
  ctx.log_info("Wrote " + std::to_string(clips) + " demo clips to '" + folder.string() + "'.");
  return done;
}

}  // namespace

engine::NodeType make_demo_dataset_node() {
  engine::NodeType t;
  t.name = "MakeDemoDataset";
  t.display_name = "Make Demo Dataset";
  t.category = "training";
  t.description = "Writes a tiny seeded dataset of the demo model's scenes: MP4 clips of coloured shapes "
                  "moving, growing or bouncing and of camera pans and zooms over patterns, each with a "
                  "caption .txt. For trying the fine-tuning workflow without data of your own; it writes "
                  "only into a new or empty folder.";
  t.outputs = {{"folder", kPathType, false, "The dataset folder, for Load Video Dataset."}};
  t.params = {
      ParamSpec::folder_path("folder", "{output}/demo-dataset", "Where the clips go (new or empty).").written(),
      ParamSpec::integer("clips", 4, 1, 64, "Number of clips."),
      ParamSpec::integer("frames", 17, 1, 240, "Frames per clip."),
      ParamSpec::integer("width", 96, 16, 1024, "Clip width (even)."),
      ParamSpec::integer("height", 64, 16, 1024, "Clip height (even)."),
      ParamSpec::seed("seed", 1, "Picks the scenes: shapes, colours, patterns and motions."),
  };
  t.fingerprint = output_fingerprint("folder");
  t.compute = compute_make_demo_dataset;
  return t;
}

}  // namespace vidgraph::nodes
