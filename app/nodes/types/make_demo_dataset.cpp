// Make Demo Dataset: writes a tiny seeded training dataset (short MP4 clips of a coloured square or
// disc moving over a plain background, each with a NAME.txt caption saying so) for the shipped
// fine-tuning workflow and the tests. It never replaces anything: a new folder is filled and then
// stamped (.vidgraph-demo-dataset.json with the settings); a folder stamped with the same settings
// is reused as it is, and any other existing, non-empty folder is refused.
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "nodes/media/video_export.h"
#include "nodes/output_path.h"
#include "nodes/types/node_types.h"
#include "nodes/types/node_util.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {
namespace fs = std::filesystem;

using engine::ParamSpec;

namespace {

constexpr const char* kStampName = ".vidgraph-demo-dataset.json";

struct Colour {
  const char* name;
  std::uint8_t rgb[3];
};

constexpr Colour kShapeColours[] = {{"red", {220, 40, 30}},    {"yellow", {240, 210, 40}},
                                    {"white", {245, 245, 245}}, {"orange", {245, 140, 20}},
                                    {"green", {40, 190, 60}}};
constexpr Colour kBackgrounds[] = {{"dark blue", {20, 30, 90}}, {"black", {10, 10, 10}},
                                   {"grey", {110, 110, 110}}};

struct ClipPlan {
  bool disc = false;
  const Colour* colour = nullptr;
  const Colour* background = nullptr;
  int dx = 0, dy = 0;  // pixels per frame
  std::string caption() const {
    const char* way = dx > 0 ? "right" : dx < 0 ? "left" : dy > 0 ? "down" : "up";
    return std::string("a ") + colour->name + (disc ? " disc" : " square") + " moving " + way +
           " on a " + background->name + " background";
  }
};

ClipPlan plan_clip(std::mt19937& random) {
  ClipPlan p;
  p.disc = random() % 2 == 1;
  p.colour = &kShapeColours[random() % std::size(kShapeColours)];
  p.background = &kBackgrounds[random() % std::size(kBackgrounds)];
  const int speed = 2 + static_cast<int>(random() % 3);
  const bool horizontal = random() % 2 == 0;
  const int sign = random() % 2 == 0 ? 1 : -1;
  (horizontal ? p.dx : p.dy) = sign * speed;
  return p;
}

Frames render(const ClipPlan& p, int count, int width, int height) {
  Frames f{count, width, height, {}};
  f.rgb.resize(f.frame_bytes() * count);
  const int r = height / 6;
  for (int i = 0; i < count; ++i) {
    const int cx = width / 2 + p.dx * (i - count / 2), cy = height / 2 + p.dy * (i - count / 2);
    std::uint8_t* frame = f.frame(i);
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        const int ax = x - cx, ay = y - cy;
        const bool inside = p.disc ? ax * ax + ay * ay <= r * r : std::abs(ax) <= r && std::abs(ay) <= r;
        const std::uint8_t* rgb = inside ? p.colour->rgb : p.background->rgb;
        std::copy(rgb, rgb + 3, frame + (static_cast<std::size_t>(y) * width + x) * 3);
      }
    }
  }
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
  const std::string stamp = nlohmann::json{{"clips", clips}, {"frames", frames}, {"width", width},
                                           {"height", height}, {"seed", seed}}.dump() + "\n";
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
  std::mt19937 random(static_cast<std::uint32_t>(seed));
  for (int i = 0; i < clips; ++i) {
    if (ctx.cancelled()) return node_error(ctx, "Making the demo dataset was cancelled.");
    ctx.progress(i, clips, "clip " + std::to_string(i + 1));
    const ClipPlan plan = plan_clip(random);
    const std::string stem = "demo_" + std::to_string(i);
    media::ExportOptions options;
    options.path = (folder / (stem + ".mp4")).string();
    options.naming = Naming::Fail;
    options.fps = 12;
    std::string error;
    if (!media::export_video(render(plan, frames, width, height), options, &error)) return node_error(ctx, error);
    if (std::string bad = write_text_file(folder / (stem + ".txt"), plan.caption() + "\n"); !bad.empty()) {
      return node_error(ctx, bad);
    }
  }
  if (std::string bad = write_text_file(folder / kStampName, stamp); !bad.empty()) return node_error(ctx, bad);
  ctx.progress(clips, clips, "written");
  ctx.log_info("Wrote " + std::to_string(clips) + " demo clips to '" + folder.string() + "'.");
  return done;
}

}  // namespace

engine::NodeType make_demo_dataset_node() {
  engine::NodeType t;
  t.name = "MakeDemoDataset";
  t.display_name = "Make Demo Dataset";
  t.category = "training";
  t.description = "Writes a tiny seeded dataset: MP4 clips of a coloured square or disc moving over a "
                  "plain background, each with a caption .txt. For trying the fine-tuning workflow "
                  "without data of your own; it writes only into a new or empty folder.";
  t.version = 1;
  t.outputs = {{"folder", kPathType, false, "The dataset folder, for Load Video Dataset."}};
  t.params = {
      ParamSpec::folder_path("folder", "{output}/demo-dataset", "Where the clips go (new or empty)."),
      ParamSpec::integer("clips", 4, 1, 64, "Number of clips."),
      ParamSpec::integer("frames", 17, 1, 240, "Frames per clip."),
      ParamSpec::integer("width", 96, 16, 1024, "Clip width (even)."),
      ParamSpec::integer("height", 64, 16, 1024, "Clip height (even)."),
      ParamSpec::seed("seed", 1, "Picks shapes, colours and motions."),
  };
  t.fingerprint = output_fingerprint("folder");
  t.compute = compute_make_demo_dataset;
  return t;
}

}  // namespace vidgraph::nodes
