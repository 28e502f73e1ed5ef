// Implements encode_video_file (video_export.h): RGB frames -> yuv420p (BT.709, limited range)
// -> libx264 (MP4) or libvpx-vp9 (WebM) -> libavformat, workflow JSON as the `comment` tag.
#include <cerrno>
#include <cstring>
#include <vector>

#include "nodes/media/ffmpeg_util.h"
#include "nodes/output_path.h"
#include "nodes/media/video_export.h"

extern "C" {
#include <libavutil/opt.h>
#include <libavutil/rational.h>
}

namespace vidgraph::nodes::media {
namespace {

using namespace ffmpeg;

// Owns the output context and its AVIO handle; closes the file if the export stops early.
struct Output {
  AVFormatContext* context = nullptr;
  ~Output() {
    if (!context) return;
    if (context->pb) avio_closep(&context->pb);
    avformat_free_context(context);
  }
};

std::string io_error(const std::string& what, int code) {
  if (code == AVERROR(ENOSPC) || code == AVERROR(EDQUOT)) {
    return what + ": " + describe_errno(ENOSPC) + ".";
  }
  if (code == AVERROR(EACCES) || code == AVERROR(EROFS) || code == AVERROR(EPERM)) {
    return what + ": " + describe_errno(AVUNERROR(code)) + ".";
  }
  return what + ": " + error_text(code) + ".";
}

CodecContextPtr open_encoder(const FrameSource& frames, const ExportOptions& options,
                             const AVOutputFormat* oformat, std::string* error) {
  const bool webm = options.format == VideoFormat::WebM;
  const char* name = webm ? "libvpx-vp9" : "libx264";
  const AVCodec* codec = avcodec_find_encoder_by_name(name);
  if (!codec) {
    *error = std::string("This FFmpeg build has no ") + name + " encoder; install an FFmpeg with " +
             name + " or export another format.";
    return nullptr;
  }
  CodecContextPtr c(avcodec_alloc_context3(codec));
  const AVRational rate = av_d2q(options.fps, 100000);
  c->width = frames.width;
  c->height = frames.height;
  c->pix_fmt = AV_PIX_FMT_YUV420P;
  c->time_base = av_inv_q(rate);
  c->framerate = rate;
  c->gop_size = 48;
  c->color_range = AVCOL_RANGE_MPEG;
  c->colorspace = AVCOL_SPC_BT709;
  c->color_primaries = AVCOL_PRI_BT709;
  c->color_trc = AVCOL_TRC_BT709;
  if (oformat->flags & AVFMT_GLOBALHEADER) c->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  AVDictionary* opts = nullptr;
  av_dict_set_int(&opts, "crf", options.crf, 0);
  if (webm) {
    c->bit_rate = 0;  // with crf: constant quality
    av_dict_set(&opts, "deadline", "good", 0);
    av_dict_set(&opts, "cpu-used", "4", 0);
    av_dict_set(&opts, "row-mt", "1", 0);
  } else {
    av_dict_set(&opts, "preset", "medium", 0);
  }
  const int rc = avcodec_open2(c.get(), codec, &opts);
  av_dict_free(&opts);
  if (rc < 0) {
    *error = std::string("Could not open the ") + name + " encoder: " + error_text(rc) + ".";
    return nullptr;
  }
  return c;
}

// Sends `frame` (nullptr flushes) and writes every packet the encoder returns.
int encode_and_write(AVCodecContext* c, AVFrame* frame, AVFormatContext* oc, AVStream* stream,
                     AVPacket* packet) {
  int rc = avcodec_send_frame(c, frame);
  if (rc < 0) return rc;
  while (true) {
    rc = avcodec_receive_packet(c, packet);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return 0;
    if (rc < 0) return rc;
    av_packet_rescale_ts(packet, c->time_base, stream->time_base);
    packet->stream_index = stream->index;
    rc = av_interleaved_write_frame(oc, packet);
    if (rc < 0) return rc;
    if (oc->pb && oc->pb->error < 0) return oc->pb->error;
  }
}

FramePtr make_yuv_frame(const AVCodecContext* c) {
  FramePtr frame(av_frame_alloc());
  frame->format = c->pix_fmt;
  frame->width = c->width;
  frame->height = c->height;
  frame->color_range = c->color_range;
  frame->colorspace = c->colorspace;
  if (av_frame_get_buffer(frame.get(), 0) < 0) return nullptr;
  return frame;
}

SwsPtr make_converter(int width, int height) {
  SwsPtr sws(sws_getContext(width, height, AV_PIX_FMT_RGB24, width, height, AV_PIX_FMT_YUV420P,
                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr, nullptr,
                            nullptr));
  if (!sws) return nullptr;
  const int* coeffs = sws_getCoefficients(SWS_CS_ITU709);
  // Source: full-range RGB; destination: limited-range BT.709 YCbCr.
  sws_setColorspaceDetails(sws.get(), coeffs, 1, coeffs, 0, 0, 1 << 16, 1 << 16);
  return sws;
}

}  // namespace

bool encode_video_file(const Frames& frames, const ExportOptions& options, const std::string& write_path,
                       std::string* error, bool* cancelled) {
  if (std::string problem = frames_problem(frames); !problem.empty()) {
    if (error) *error = std::move(problem);
    return false;
  }
  return encode_video_file(FrameSource::of(frames), options, write_path, error, cancelled);
}

bool encode_video_file(const FrameSource& frames, const ExportOptions& options,
                       const std::string& write_path, std::string* error, bool* cancelled) {
  std::string local_error;
  if (!error) error = &local_error;
  if (cancelled) *cancelled = false;
  if (std::string message = validate_export(frames, options); !message.empty()) {
    *error = std::move(message);
    return false;
  }
  if (options.format == VideoFormat::PngSequence) {
    *error = "encode_video_file writes MP4 or WebM; PNG sequences go through export_video.";
    return false;
  }
  quiet_logs();
  const char* muxer = options.format == VideoFormat::WebM ? "webm" : "mp4";
  Output out;
  int rc = avformat_alloc_output_context2(&out.context, nullptr, muxer, write_path.c_str());
  if (rc < 0 || !out.context) {
    *error = std::string("FFmpeg has no ") + muxer + " muxer: " + error_text(rc) + ".";
    return false;
  }
  CodecContextPtr c = open_encoder(frames, options, out.context->oformat, error);
  if (!c) return false;
  AVStream* stream = avformat_new_stream(out.context, nullptr);
  if (!stream || avcodec_parameters_from_context(stream->codecpar, c.get()) < 0) {
    *error = "Could not set up the video stream (out of memory?).";
    return false;
  }
  stream->time_base = c->time_base;
  stream->avg_frame_rate = c->framerate;
  if (!options.workflow_json.empty()) {
    av_dict_set(&out.context->metadata, "comment", options.workflow_json.c_str(), 0);
  }
  rc = avio_open(&out.context->pb, write_path.c_str(), AVIO_FLAG_WRITE);
  if (rc < 0) {
    *error = io_error("Could not create '" + write_path + "'", rc);
    return false;
  }
  rc = avformat_write_header(out.context, nullptr);
  if (rc < 0) {
    *error = io_error("Could not start writing '" + write_path + "'", rc);
    return false;
  }
  FramePtr yuv = make_yuv_frame(c.get());
  SwsPtr sws = make_converter(frames.width, frames.height);
  PacketPtr packet(av_packet_alloc());
  if (!yuv || !sws || !packet) {
    *error = "Could not allocate the video conversion buffers (out of memory?).";
    return false;
  }
  // swscale's SIMD loads read a little past the last pixel of its input: each frame is copied into
  // a buffer padded as FFmpeg asks of its inputs, never read in place at the end of a caller's buffer
  // (an AddressSanitizer build faulted there on a frame that ended a heap mapping).
  const std::size_t frame_bytes = static_cast<std::size_t>(frames.width) * frames.height * 3;
  std::vector<uint8_t> padded(frame_bytes + AV_INPUT_BUFFER_PADDING_SIZE);
  for (int i = 0; i < frames.count; ++i) {
    if (av_frame_make_writable(yuv.get()) < 0) {
      *error = "Could not allocate a video frame (out of memory?).";
      return false;
    }
    const uint8_t* frame = frames.frame(i, error);
    if (frame == nullptr) return false;
    std::memcpy(padded.data(), frame, frame_bytes);
    const uint8_t* src[1] = {padded.data()};
    const int src_stride[1] = {frames.width * 3};
    sws_scale(sws.get(), src, src_stride, 0, frames.height, yuv->data, yuv->linesize);
    yuv->pts = i;
    rc = encode_and_write(c.get(), yuv.get(), out.context, stream, packet.get());
    if (rc < 0) {
      *error = io_error("Writing frame " + std::to_string(i) + " of '" + write_path + "' failed", rc);
      return false;
    }
    if (options.progress && !options.progress(i + 1, frames.count)) {
      if (cancelled) *cancelled = true;
      *error = "Export cancelled.";
      return false;
    }
  }
  rc = encode_and_write(c.get(), nullptr, out.context, stream, packet.get());
  if (rc >= 0) rc = av_write_trailer(out.context);
  if (rc >= 0) {
    avio_flush(out.context->pb);
    rc = out.context->pb->error;
  }
  if (rc >= 0) rc = avio_closep(&out.context->pb);
  if (rc < 0) {
    *error = io_error("Finishing '" + write_path + "' failed", rc);
    return false;
  }
  return true;
}

}  // namespace vidgraph::nodes::media
