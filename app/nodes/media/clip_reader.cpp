// Implements clip_reader.h: libavformat packet counts and a stopping decoder for video files,
// header reads and load_image for PNG-sequence folders.
#include "nodes/media/clip_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "nodes/input_file.h"
#include "nodes/media/ffmpeg_util.h"
#include "nodes/media/image_io.h"

namespace vidgraph::nodes::media {
namespace fs = std::filesystem;

namespace {

using namespace ffmpeg;

std::vector<fs::path> png_frames(const fs::path& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".png" && entry.is_regular_file(ec)) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool probe_sequence(const fs::path& dir, ClipInfo* info, std::string* error) {
  const std::vector<fs::path> files = png_frames(dir);
  if (files.empty()) return fail(error, "Folder '" + dir.string() + "' holds no .png frames.");
  std::ifstream in(files.front(), std::ios::binary);
  std::vector<char> head(4096);
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  std::int64_t width = 0, height = 0;
  if (!image_header_size(head.data(), static_cast<std::size_t>(in.gcount()), &width, &height)) {
    return fail(error, "Frame '" + files.front().string() + "' is not a readable PNG.");
  }
  info->frame_count = static_cast<int>(files.size());
  info->width = static_cast<int>(width);
  info->height = static_cast<int>(height);
  info->png_sequence = true;
  return true;
}

bool open_video(const std::string& path, OpenDecoder* v, std::string* error) {
  return open_decoder(path, "Clip '" + path + "'", v, error);
}

// Converts decoded frames to RGB with the colour matrix and range the stream declares.
class RgbConverter {
 public:
  void append(const AVFrame* frame, Frames* out) {
    if (!sws_) {
      sws_.reset(sws_getContext(frame->width, frame->height, static_cast<AVPixelFormat>(frame->format),
                                frame->width, frame->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr,
                                nullptr, nullptr));
      const int matrix = frame->colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT;
      const int* coeffs = sws_getCoefficients(matrix);
      const int full_range = frame->color_range == AVCOL_RANGE_JPEG ? 1 : 0;
      sws_setColorspaceDetails(sws_.get(), coeffs, full_range, coeffs, 1, 0, 1 << 16, 1 << 16);
      out->width = frame->width;
      out->height = frame->height;
    }
    const std::size_t offset = out->rgb.size();
    out->rgb.resize(offset + static_cast<std::size_t>(out->width) * out->height * 3);
    uint8_t* dst[1] = {out->rgb.data() + offset};
    const int dst_stride[1] = {out->width * 3};
    sws_scale(sws_.get(), frame->data, frame->linesize, 0, frame->height, dst, dst_stride);
    ++out->count;
  }

 private:
  SwsPtr sws_;
};

bool keeps(const ClipRead& read, int index) {
  return index >= read.first && (index - read.first) % read.stride == 0;
}

bool read_video(const std::string& path, const ClipRead& read, Frames* out, std::string* error) {
  OpenDecoder v;
  if (!open_video(path, &v, error)) return false;
  PacketPtr packet(av_packet_alloc());
  FramePtr frame(av_frame_alloc());
  RgbConverter rgb;
  int index = 0;
  auto drain = [&]() -> int {
    while (out->count < read.count) {
      const int rc = avcodec_receive_frame(v.decoder.get(), frame.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return 0;
      if (rc < 0) return rc;
      if (keeps(read, index)) rgb.append(frame.get(), out);
      ++index;
      av_frame_unref(frame.get());
    }
    return 0;
  };
  int rc = 0;
  while (out->count < read.count && (rc = av_read_frame(v.format.get(), packet.get())) >= 0) {
    if (read.cancelled && read.cancelled()) return fail(error, "Reading clip '" + path + "' was cancelled.");
    if (packet->stream_index == v.stream) {
      rc = avcodec_send_packet(v.decoder.get(), packet.get());
      if (rc >= 0) rc = drain();
    }
    av_packet_unref(packet.get());
    if (rc < 0) return fail(error, "Decoding clip '" + path + "' failed: " + error_text(rc) + ".");
  }
  if (out->count < read.count) {
    avcodec_send_packet(v.decoder.get(), nullptr);
    rc = drain();
    if (rc < 0) return fail(error, "Decoding clip '" + path + "' failed: " + error_text(rc) + ".");
  }
  return true;
}

bool read_sequence(const fs::path& dir, const ClipRead& read, Frames* out, std::string* error) {
  const std::vector<fs::path> files = png_frames(dir);
  for (int index = read.first; index < static_cast<int>(files.size()) && out->count < read.count;
       index += read.stride) {
    if (read.cancelled && read.cancelled()) return fail(error, "Reading clip '" + dir.string() + "' was cancelled.");
    Image image;
    if (!load_image(files[index].string(), &image, error)) return false;
    if (out->count == 0) {
      out->width = image.width;
      out->height = image.height;
    } else if (image.width != out->width || image.height != out->height) {
      return fail(error, "Frame '" + files[index].string() + "' differs in size from the clip's first frame.");
    }
    out->rgb.insert(out->rgb.end(), image.rgb.begin(), image.rgb.end());
    ++out->count;
  }
  return true;
}

}  // namespace

bool probe_clip(const std::string& path, ClipInfo* info, std::string* error) {
  *info = ClipInfo{};
  std::error_code ec;
  if (fs::is_directory(path, ec)) return probe_sequence(path, info, error);
  if (!fs::is_regular_file(path, ec)) {  // FFmpeg would block on a FIFO
    return fail(error, "Clip '" + printable_text(path) + "' is not a regular file or a folder of PNG frames.");
  }
  OpenDecoder v;
  if (!open_video(path, &v, error)) return false;
  const AVStream* stream = v.format->streams[v.stream];
  info->width = stream->codecpar->width;
  info->height = stream->codecpar->height;
  AVRational rate = stream->avg_frame_rate;
  if (rate.num <= 0 || rate.den <= 0) rate = stream->r_frame_rate;
  info->fps = (rate.num > 0 && rate.den > 0) ? av_q2d(rate) : 0.0;
  PacketPtr packet(av_packet_alloc());
  int rc = 0;
  while ((rc = av_read_frame(v.format.get(), packet.get())) >= 0) {
    if (packet->stream_index == v.stream) ++info->frame_count;
    av_packet_unref(packet.get());
  }
  if (rc != AVERROR_EOF) return fail(error, "Clip '" + path + "' is damaged: " + error_text(rc) + ".");
  if (info->width <= 0 || info->height <= 0) return fail(error, "Clip '" + path + "' has no frame size.");
  return true;
}

bool read_clip(const std::string& path, const ClipRead& read, Frames* out, std::string* error) {
  *out = Frames{};
  if (read.count <= 0 || read.stride <= 0 || read.first < 0) {
    return fail(error, "Reading clip '" + path + "': count and stride must be positive.");
  }
  std::error_code ec;
  const bool ok = fs::is_directory(path, ec) ? read_sequence(path, read, out, error)
                                              : read_video(path, read, out, error);
  if (!ok) return false;
  if (out->count < read.count) {
    return fail(error, "Clip '" + path + "' gave " + std::to_string(out->count) + " of the " +
                       std::to_string(read.count) + " frames needed (every " +
                       std::to_string(read.stride) + " frame(s) from frame " +
                       std::to_string(read.first) + ").");
  }
  return true;
}

}  // namespace vidgraph::nodes::media
