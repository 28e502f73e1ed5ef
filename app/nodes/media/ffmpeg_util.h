// Small RAII owners and error text for FFmpeg objects, shared by the encoder and the probe.
// Internal to app/nodes/media; not part of the nodes' public headers.
#pragma once

#include <memory>
#include <mutex>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

namespace vidgraph::nodes::media::ffmpeg {

struct CodecContextDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsDeleter {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
struct InputDeleter {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};

using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextDeleter>;
using FramePtr = std::unique_ptr<AVFrame, FrameDeleter>;
using PacketPtr = std::unique_ptr<AVPacket, PacketDeleter>;
using SwsPtr = std::unique_ptr<SwsContext, SwsDeleter>;
using InputPtr = std::unique_ptr<AVFormatContext, InputDeleter>;

// FFmpeg's text for an AVERROR code.
inline std::string error_text(int code) {
  char buffer[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buffer, sizeof buffer);
  return buffer;
}

// Keeps FFmpeg's and the codecs' chatter (x264's statistics) off the terminal; errors stay.
// Sets *error (when asked for) and returns false: the error style of the media readers.
inline bool fail(std::string* error, std::string message) {
  if (error) *error = std::move(message);
  return false;
}

inline void quiet_logs() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_level(AV_LOG_ERROR); });
}

// A file's demuxer and the decoder of its best video stream.
struct OpenDecoder {
  InputPtr format;
  CodecContextPtr decoder;
  int stream = -1;  // index in format->streams
  const AVCodec* codec = nullptr;
};

// Opens `path` for decoding its video; false with a sentence that starts with `what` (e.g. "Clip
// 'a.mp4'") and says why otherwise.
bool open_decoder(const std::string& path, const std::string& what, OpenDecoder* d, std::string* error);

}  // namespace vidgraph::nodes::media::ffmpeg
