// Implements compare_command.h.
#include "compare_command.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "nodes/media/frame_metrics.h"
#include "nodes/media/video_export.h"
#include "nodes/media/video_probe.h"
#include "nodes/output_path.h"
#include "run_cli.h"

namespace vidgraph::cli {
namespace {

namespace media = nodes::media;

int fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return kExitInvalid;
}

// The writer format an output name asks for: .mp4 or .webm.
bool output_format(const std::string& path, media::VideoFormat* format) {
  auto ends_with = [&](const char* ext) {
    const std::string e(ext);
    return path.size() > e.size() && path.compare(path.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with(".mp4")) *format = media::VideoFormat::Mp4;
  else if (ends_with(".webm")) *format = media::VideoFormat::WebM;
  else return false;
  return true;
}

// "" or why `path` cannot be an output (wrong extension, something already there).
std::string check_output(const std::string& option, const std::string& path) {
  media::VideoFormat format;
  if (!output_format(path, &format)) return option + " " + path + ": give a .mp4 or .webm file name.";
  const std::string conflict =
      nodes::check_output_target({path, nodes::Naming::Fail, media::video_output_kind(format)});
  return conflict.empty() ? "" : option + ": " + conflict;
}

std::string write_output(const media::FrameSource& frames, const std::string& path, double fps) {
  media::ExportOptions options;
  options.path = path;
  output_format(path, &options.format);
  options.fps = fps > 0.0 && fps <= 240.0 ? fps : 24.0;
  options.crf = options.format == media::VideoFormat::Mp4 ? 12 : 20;  // near-lossless: a visual check
  options.naming = nodes::Naming::Fail;
  std::string error;
  return media::export_video(frames, options, &error) ? "" : error;
}

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

void print_text(const RunArgs& args, const media::CompareResult& r) {
  std::printf("comparing %s with %s: %zu frames\n", args.compare_a.c_str(), args.compare_b.c_str(), r.frames.size());
  std::printf("%6s %10s %8s\n", "frame", "PSNR dB", "SSIM");
  for (size_t i = 0; i < r.frames.size(); ++i) {
    const auto& f = r.frames[i];
    if (std::isfinite(f.psnr)) std::printf("%6zu %10.3f %8.5f\n", i + 1, f.psnr, f.ssim);
    else std::printf("%6zu %10s %8.5f\n", i + 1, "identical", f.ssim);
  }
  if (r.identical()) std::printf("overall: identical (PSNR inf, SSIM 1)\n");
  else std::printf("overall: PSNR %.3f dB, SSIM %.5f\n", r.psnr, r.ssim);
}

nlohmann::json to_json(const RunArgs& args, const media::CompareResult& r, const media::VideoInfo& a,
                       const media::VideoInfo& b, const std::string& warning) {
  nlohmann::json frames = nlohmann::json::array();
  for (const auto& f : r.frames) frames.push_back({{"psnr", number_or_null(f.psnr)}, {"ssim", f.ssim}, {"mse", f.mse}});
  nlohmann::json j = {{"a", args.compare_a}, {"b", args.compare_b}, {"frames_a", a.frame_count},
                      {"frames_b", b.frame_count}, {"compared_frames", r.frames.size()},
                      {"width", a.width}, {"height", a.height}, {"identical", r.identical()},
                      {"psnr", number_or_null(r.psnr)}, {"ssim", r.ssim}, {"mse", r.mse},
                      {"ssim_definition", "luma BT.601, 11x11 Gaussian window sigma 1.5, K1 0.01, K2 0.03"},
                      {"frames", frames}};
  if (!warning.empty()) j["warning"] = warning;
  if (!args.side_by_side.empty()) j["side_by_side"] = args.side_by_side;
  if (!args.difference.empty()) j["difference"] = args.difference;
  return j;
}

// Both videos decoded in step, one frame pair held at a time (issue #41: holding every frame of two
// 300-frame 720p clips took 2.35 GB). The metrics accumulate per pair; each comparison video, when
// asked, decodes both again and is encoded pair by pair, so no clip is ever held whole.
struct Streamed {
  media::VideoInfo a, b;  // frame_count counted while streaming
  media::CompareResult result;
};

std::string size_mismatch(int aw, int ah, int bw, int bh) {
  return "The videos have different frame sizes (" + std::to_string(aw) + "x" + std::to_string(ah) + " and " +
         std::to_string(bw) + "x" + std::to_string(bh) + "); compare videos of the same size.";
}

// One frame clip of `image`, for the clip-level helpers of frame_metrics.h.
nodes::Frames one_frame(nodes::Image& image) {
  nodes::Frames f{1, image.width, image.height, {}};
  f.rgb.swap(image.rgb);
  return f;
}

// A comparison video made from the two inputs pair by pair (the first `count` pairs, which the
// metrics pass found to match in size): `compose` turns one pair into the output frame.
std::string write_comparison(const RunArgs& args, const std::string& path, int count,
                             const std::function<nodes::Frames(const nodes::Frames&, const nodes::Frames&)>& compose) {
  std::string error;
  media::VideoInfo ia, ib;
  const auto sa = media::FrameStream::open(args.compare_a, &ia, &error);
  if (!sa) return error;
  const auto sb = media::FrameStream::open(args.compare_b, &ib, &error);
  if (!sb) return error;
  nodes::Image fa, fb;
  nodes::Frames out;
  if (!sa->next(&fa, &error) || !sb->next(&fb, &error)) {
    return error.empty() ? "A video to compare has no frames." : error;
  }
  out = compose(one_frame(fa), one_frame(fb));  // the first frame gives the output's size
  media::FrameSource source{count, out.width, out.height, nullptr};
  source.frame = [&](int index, std::string* why) -> const std::uint8_t* {
    if (index > 0) {
      if (!sa->next(&fa, why) || !sb->next(&fb, why)) {
        if (why->empty()) *why = "A video to compare ended early on the second read; was it changed meanwhile?";
        return nullptr;
      }
      out = compose(one_frame(fa), one_frame(fb));
    }
    return out.rgb.data();
  };
  return write_output(source, path, ia.fps);
}

// "" or the sentence that stops the comparison.
std::string compare_streams(const RunArgs& args, Streamed* s) {
  std::string error;
  const auto sa = media::FrameStream::open(args.compare_a, &s->a, &error);
  if (!sa) return error;
  const auto sb = media::FrameStream::open(args.compare_b, &s->b, &error);
  if (!sb) return error;
  nodes::Image fa, fb;
  bool more_a = true, more_b = true;
  while (more_a && more_b) {
    more_a = sa->next(&fa, &error);
    if (error.empty()) more_b = sb->next(&fb, &error);
    if (!error.empty()) return error;
    s->a.frame_count += more_a;
    s->b.frame_count += more_b;
    if (!more_a || !more_b) break;
    if (fa.width != fb.width || fa.height != fb.height) return size_mismatch(fa.width, fa.height, fb.width, fb.height);
    media::add_frame_pair(s->result, fa.rgb.data(), fb.rgb.data(), fa.width, fa.height);
  }
  // The longer video's remaining frames are decoded only to be counted (the warning names both counts).
  while (more_a && (more_a = sa->next(nullptr, &error))) ++s->a.frame_count;
  while (more_b && (more_b = sb->next(nullptr, &error))) ++s->b.frame_count;
  if (!error.empty()) return error;
  if (s->result.frames.empty()) return "A video to compare has no frames or an inconsistent frame buffer.";
  media::finish_compare(s->result);
  return "";
}

}  // namespace

int command_compare(const RunArgs& args) {
  if (!(args.gain > 0.0 && std::isfinite(args.gain))) return fail("--gain must be a positive number.");
  for (const auto& [option, path] : {std::pair<std::string, std::string>{"--side-by-side", args.side_by_side},
                                     {"--difference", args.difference}}) {
    if (path.empty()) continue;
    const std::string bad = check_output(option, path);
    if (!bad.empty()) return fail(bad);
  }
  Streamed s;
  if (const std::string bad = compare_streams(args, &s); !bad.empty()) return fail(bad);
  const media::CompareResult& result = s.result;
  std::string warning;
  if (s.a.frame_count != s.b.frame_count) {
    warning = "the videos have " + std::to_string(s.a.frame_count) + " and " + std::to_string(s.b.frame_count) +
              " frames; compared the first " + std::to_string(result.frames.size());
    std::fprintf(stderr, "warning: %s.\n", warning.c_str());
  }
  const int pairs = int(result.frames.size());
  if (!args.side_by_side.empty()) {
    const std::string bad = write_comparison(args, args.side_by_side, pairs, media::side_by_side);
    if (!bad.empty()) return fail(bad);
  }
  if (!args.difference.empty()) {
    const double gain = args.gain;
    const std::string bad = write_comparison(args, args.difference, pairs, [gain](const auto& a, const auto& b) {
      return media::difference(a, b, gain);
    });
    if (!bad.empty()) return fail(bad);
  }
  if (args.json) std::printf("%s\n", to_json(args, result, s.a, s.b, warning).dump(2).c_str());
  else print_text(args, result);
  return kExitOk;
}

}  // namespace vidgraph::cli
