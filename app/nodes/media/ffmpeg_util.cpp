#include "nodes/media/ffmpeg_util.h"

namespace vidgraph::nodes::media::ffmpeg {

bool open_decoder(const std::string& path, const std::string& what, OpenDecoder* d, std::string* error) {
  quiet_logs();
  AVFormatContext* raw = nullptr;
  int rc = avformat_open_input(&raw, path.c_str(), nullptr, nullptr);
  if (rc < 0) return fail(error, what + " is not a readable video: " + error_text(rc) + ".");
  d->format.reset(raw);
  rc = avformat_find_stream_info(raw, nullptr);
  if (rc < 0) return fail(error, what + " has unreadable streams: " + error_text(rc) + ".");
  d->stream = av_find_best_stream(raw, AVMEDIA_TYPE_VIDEO, -1, -1, &d->codec, 0);
  if (d->stream < 0 || !d->codec) return fail(error, what + " has no decodable video stream.");
  d->decoder.reset(avcodec_alloc_context3(d->codec));
  if (!d->decoder) return fail(error, "Could not allocate a decoder for " + what + " (out of memory?).");
  avcodec_parameters_to_context(d->decoder.get(), raw->streams[d->stream]->codecpar);
  rc = avcodec_open2(d->decoder.get(), d->codec, nullptr);
  if (rc < 0) return fail(error, "Could not open the decoder of " + what + ": " + error_text(rc) + ".");
  return true;
}

}  // namespace vidgraph::nodes::media::ffmpeg
