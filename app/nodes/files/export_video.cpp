// Export Video: writes the frames as MP4 (H.264, yuv420p, CRF), WebM (VP9) or a PNG sequence, with
// the workflow JSON in the file's metadata, through a temporary file published by its `naming`
// (writer_params.h): an existing output is kept unless naming (or the run's --overwrite) says
// overwrite, and even then only an earlier output of the same kind is replaced.
#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/files/writer_params.h"
#include "nodes/media/video_export.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

OutputKind export_kind(const nlohmann::json& params) {
  media::VideoFormat format = media::VideoFormat::Mp4;
  media::parse_video_format(params.value("format", std::string("mp4")), &format);
  return media::video_output_kind(format);
}

engine::Result<engine::ValueMap> compute_export(engine::NodeContext& ctx) {
  const Video& video = ctx.input_as<Video>("video");
  media::ExportOptions options;
  if (!media::parse_video_format(ctx.param_string("format"), &options.format)) {
    return node_error(ctx, "format must be mp4, webm or png.");
  }
  options.path = ctx.param_path("filename");
  options.fps = ctx.param_float("fps");
  options.crf = static_cast<int>(ctx.param_int("crf"));
  options.naming = writer_naming(ctx);
  options.workflow_json = ctx.workflow_json();
  options.progress = [&ctx](int done, int total) {
    ctx.progress(done, total, "encoding");
    return !ctx.cancelled();
  };
  std::string error;
  std::string written;
  bool cancelled = false;
  if (!media::export_video(video.frames, options, &error, &cancelled, &written)) {
    if (cancelled) return node_error(ctx, "Export cancelled; no file was written.");
    return node_error(ctx, error);
  }
  ctx.wrote(written);
  ctx.log_info("Wrote " + written + " (" + std::to_string(video.frames.count) + " frames, " +
               std::to_string(video.frames.width) + "x" + std::to_string(video.frames.height) + ").");
  return engine::ValueMap{{"path", engine::make_value(kPathType, written)}};
}

}  // namespace

engine::NodeType export_video_node() {
  engine::NodeType t;
  t.name = "ExportVideo";
  t.display_name = "Export Video";
  t.category = "video";
  t.description = "Writes the video as MP4 (H.264, yuv420p, CRF), WebM (VP9, CRF) or a folder of "
                  "PNG frames, at the given fps, with the workflow embedded in the metadata. Writes "
                  "a temporary file and renames it; an existing output is kept (the next free name is "
                  "written) unless naming says otherwise.";
  t.version = 2;
  t.inputs = {{"video", kVideoType, false, "The frames to write."}};
  t.outputs = {{"path", kPathType, false, "The written file (or folder)."}};
  t.params = {
      ParamSpec::file_path("filename", "{output}/vidgraph.mp4", "Video (*.mp4 *.webm)",
                           "Output file, or folder for a PNG sequence. {output}/ = the run's output "
                           "folder.").written(),
      ParamSpec::enumeration("format", {"mp4", "webm", "png"}, "mp4",
                             "mp4: H.264 yuv420p; webm: VP9; png: a folder of PNG frames."),
      ParamSpec::real("fps", 24.0, 1.0, 240.0, "Frames per second (Wan2.2: 24)."),
      ParamSpec::integer("crf", 19, 0, 63,
                         "Constant rate factor, lower = better: H.264 0-51, VP9 0-63."),
      naming_param(),
  };
  t.upgrade = [](int, const nlohmann::json& params) -> engine::Result<nlohmann::json> {
    return upgrade_overwrite_to_naming(params);
  };
  t.compute = compute_export;
  t.fingerprint = output_fingerprint("filename");
  t.preflight = writer_preflight("filename", export_kind);
  return t;
}

}  // namespace vidgraph::nodes
