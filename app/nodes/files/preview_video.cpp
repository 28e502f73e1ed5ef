// Preview Video: posts the frames on the event bus (the editor shows them) and, when asked, writes
// a contact-sheet PNG (the CLI sets `contact_sheet` with --set). Passes the video through.
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/files/writer_params.h"
#include "nodes/value_types.h"
#ifdef VIDGRAPH_HAVE_MEDIA
#include "nodes/media/contact_sheet.h"
#endif  // VIDGRAPH_HAVE_MEDIA

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

OutputKind sheet_kind(const nlohmann::json&) { return OutputKind::Png; }

engine::Result<engine::ValueMap> compute_preview(engine::NodeContext& ctx) {
  const engine::Value& in = *ctx.input("video");
  ctx.input_as<Video>("video");  // refuses a value that is not a Video
  ctx.emit_preview(in);
  const std::string sheet = ctx.param_string("contact_sheet");
  if (!sheet.empty()) {
#ifdef VIDGRAPH_HAVE_MEDIA
    const Video& video = ctx.input_as<Video>("video");
    media::ContactSheetOptions options;
    options.columns = static_cast<int>(ctx.param_int("columns"));
    options.max_frames = static_cast<int>(ctx.param_int("max_frames"));
    options.tile_width = static_cast<int>(ctx.param_int("tile_width"));
    const OutputTarget target = writer_target(ctx.params(), ctx.options(), "contact_sheet", sheet_kind);
    std::string error;
    std::string written;
    if (!media::write_contact_sheet(video.frames, target, options, &error, &written)) {
      return node_error(ctx, error);
    }
    ctx.wrote(written);
    ctx.log_info("Wrote contact sheet " + written + ".");
#else
    return node_error(ctx, "Contact sheets need the media support (build with VIDGRAPH_MEDIA=ON); "
                           "clear contact_sheet.");
#endif  // VIDGRAPH_HAVE_MEDIA
  }
  return engine::ValueMap{{"video", in}};
}

}  // namespace

engine::NodeType preview_video_node() {
  engine::NodeType t;
  t.name = "PreviewVideo";
  t.display_name = "Preview Video";
  t.category = "video";
  t.description = "Shows the frames in the editor (a preview event on the bus) and optionally writes "
                  "a contact sheet PNG: evenly spaced frames in a grid.";
  t.version = 2;
  t.upgrade = [](int, const nlohmann::json& params) -> engine::Result<nlohmann::json> {
    return params;  // version 2 adds `naming`; contact sheets no longer always replace
  };
  t.inputs = {{"video", kVideoType, false, "The frames to preview."}};
  t.outputs = {{"video", kVideoType, false, "The same video, passed through."}};
  t.params = {
      ParamSpec::file_path("contact_sheet", "", "PNG (*.png)",
                           "Where to write a contact sheet PNG; empty = none. Relative paths "
                           "resolve against the workflow folder; use {output}/ for the output folder.").written(),
      ParamSpec::integer("columns", 4, 1, 32, "Contact sheet: frames per row."),
      ParamSpec::integer("max_frames", 16, 1, 1024, "Contact sheet: frames shown, evenly spaced."),
      ParamSpec::integer("tile_width", 256, 8, 4096, "Contact sheet: width of each frame in pixels."),
      naming_param(),
  };
  t.compute = compute_preview;
  t.fingerprint = output_fingerprint("contact_sheet");
  t.preflight = writer_preflight("contact_sheet", sheet_kind);
  return t;
}

}  // namespace vidgraph::nodes
