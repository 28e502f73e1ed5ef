// Implements video_probe.h: libavformat/libavcodec decode for files, metadata.json + PNG reads
// for PNG-sequence folders.
#include "nodes/media/video_probe.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "nodes/input_file.h"
#include "nodes/media/ffmpeg_util.h"
#include "nodes/media/image_io.h"

namespace vidgraph::nodes::media {
namespace fs = std::filesystem;

namespace {

using namespace ffmpeg;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return text;
}

bool probe_sequence(const fs::path& dir, VideoInfo* info, std::string* error, bool keep_frames) {
  std::ifstream in(dir / "metadata.json");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json meta = nlohmann::json::parse(text.str(), nullptr, false);
  if (!in || meta.is_discarded() || !meta.is_object()) {
    return fail(error, "'" + dir.string() + "' has no readable metadata.json; it is not a "
                       "Vidgraph PNG sequence.");
  }
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".png") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  info->frame_count = static_cast<int>(files.size());
  info->fps = meta.value("fps", 0.0);
  info->codec = "png";
  info->pixel_format = "rgb24";
  info->metadata["comment"] = meta.value("workflow", std::string());
  for (std::size_t i = 0; i < files.size(); ++i) {
    Image image;
    if (!load_image(files[i].string(), &image, error)) return false;
    if (i == 0) {
      info->width = image.width;
      info->height = image.height;
      if (keep_frames) {
        info->frames = Frames{info->frame_count, image.width, image.height, {}};
        info->frames.rgb.reserve(image.rgb.size() * files.size());
      }
    } else if (image.width != info->width || image.height != info->height) {
      return fail(error, "Frame '" + files[i].string() + "' differs in size from the first frame.");
    }
    if (keep_frames) info->frames.rgb.insert(info->frames.rgb.end(), image.rgb.begin(), image.rgb.end());
  }
  return true;
}

// Decodes every frame of the open stream, counting them and optionally converting to RGB.
bool decode_all(AVFormatContext* fc, int stream_index, AVCodecContext* dc, VideoInfo* info,
                bool keep_frames, const std::string& path, std::string* error) {
  PacketPtr packet(av_packet_alloc());
  FramePtr frame(av_frame_alloc());
  SwsPtr sws;
  auto drain = [&]() -> int {
    while (true) {
      const int rc = avcodec_receive_frame(dc, frame.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return 0;
      if (rc < 0) return rc;
      ++info->frame_count;
      if (keep_frames) {
        if (!sws) {
          sws.reset(sws_getContext(frame->width, frame->height,
                                   static_cast<AVPixelFormat>(frame->format), frame->width,
                                   frame->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr, nullptr,
                                   nullptr));
          if (!sws) return AVERROR(ENOMEM);
          // Decode with the colour matrix and range the stream declares (BT.601 when unset).
          const int matrix =
              frame->colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT;
          const int* coeffs = sws_getCoefficients(matrix);
          const int full_range = frame->color_range == AVCOL_RANGE_JPEG ? 1 : 0;
          sws_setColorspaceDetails(sws.get(), coeffs, full_range, coeffs, 1, 0, 1 << 16, 1 << 16);
        }
        const std::size_t offset = info->frames.rgb.size();
        info->frames.rgb.resize(offset + static_cast<std::size_t>(frame->width) * frame->height * 3);
        uint8_t* dst[1] = {info->frames.rgb.data() + offset};
        const int dst_stride[1] = {frame->width * 3};
        sws_scale(sws.get(), frame->data, frame->linesize, 0, frame->height, dst, dst_stride);
        info->frames.count = info->frame_count;
      }
      av_frame_unref(frame.get());
    }
  };
  int rc = 0;
  while ((rc = av_read_frame(fc, packet.get())) >= 0) {
    if (packet->stream_index == stream_index) {
      rc = avcodec_send_packet(dc, packet.get());
      if (rc >= 0) rc = drain();
    }
    av_packet_unref(packet.get());
    if (rc < 0) return fail(error, "Decoding '" + path + "' failed: " + error_text(rc) + ".");
  }
  avcodec_send_packet(dc, nullptr);
  rc = drain();
  if (rc < 0) return fail(error, "Decoding '" + path + "' failed: " + error_text(rc) + ".");
  return true;
}

// A file opened for decoding, with `info` filled (no frames).
bool open_file(const std::string& path, VideoInfo* info, OpenDecoder* f, std::string* error) {
  if (!open_decoder(path, "Video '" + path + "'", f, error)) return false;
  const AVFormatContext* raw = f->format.get();
  const AVStream* stream = raw->streams[f->stream];
  const AVCodec* codec = f->codec;
  info->width = stream->codecpar->width;
  info->height = stream->codecpar->height;
  info->codec = codec->name;
  const char* pix = av_get_pix_fmt_name(static_cast<AVPixelFormat>(stream->codecpar->format));
  info->pixel_format = pix ? pix : "";
  AVRational rate = stream->avg_frame_rate;
  if (rate.num <= 0 || rate.den <= 0) rate = stream->r_frame_rate;
  info->fps = (rate.num > 0 && rate.den > 0) ? av_q2d(rate) : 0.0;
  const AVDictionaryEntry* tag = nullptr;
  while ((tag = av_dict_get(raw->metadata, "", tag, AV_DICT_IGNORE_SUFFIX))) {
    info->metadata[lower(tag->key)] = tag->value;
  }
  return true;
}

// "" or why `path` cannot be read as a video (missing, or a FIFO/device FFmpeg would block on).
std::string check_path(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return "Video '" + path + "' does not exist.";
  if (!fs::is_directory(path, ec) && !fs::is_regular_file(path, ec)) {
    return "Video '" + printable_text(path) + "' is not a regular file (a FIFO, device or socket); choose a "
           "video file or a PNG-sequence folder.";
  }
  return "";
}

// A file's frames pulled one at a time: packets are read only when the decoder wants more.
class FileStream : public FrameStream {
 public:
  FileStream(OpenDecoder f, std::string path) : f_(std::move(f)), path_(std::move(path)) {}

  bool next(Image* image, std::string* error) override {
    while (true) {
      const int rc = avcodec_receive_frame(f_.decoder.get(), frame_.get());
      if (rc == 0) return deliver(image, error);
      if (rc == AVERROR_EOF || (rc == AVERROR(EAGAIN) && flushed_)) return false;
      if (rc != AVERROR(EAGAIN)) return fail(error, "Decoding '" + path_ + "' failed: " + error_text(rc) + ".");
      if (!feed(error)) return false;
    }
  }

 private:
  // One more packet of the stream to the decoder, or the end-of-stream flush.
  bool feed(std::string* error) {
    int rc = 0;
    while ((rc = av_read_frame(f_.format.get(), packet_.get())) >= 0) {
      const bool ours = packet_->stream_index == f_.stream;
      if (ours) rc = avcodec_send_packet(f_.decoder.get(), packet_.get());
      av_packet_unref(packet_.get());
      if (rc < 0) return fail(error, "Decoding '" + path_ + "' failed: " + error_text(rc) + ".");
      if (ours) return true;
    }
    avcodec_send_packet(f_.decoder.get(), nullptr);
    flushed_ = true;
    return true;
  }

  // Converts with the colour matrix and range the stream declares (BT.601 when unset), as probe_video.
  bool deliver(Image* image, std::string* error) {
    if (image == nullptr) {
      av_frame_unref(frame_.get());
      return true;
    }
    AVFrame* fr = frame_.get();
    if (!sws_) {
      sws_.reset(sws_getContext(fr->width, fr->height, static_cast<AVPixelFormat>(fr->format), fr->width,
                                fr->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr, nullptr, nullptr));
      if (!sws_) return fail(error, "Decoding '" + path_ + "' failed: out of memory.");
      const int matrix = fr->colorspace == AVCOL_SPC_BT709 ? SWS_CS_ITU709 : SWS_CS_DEFAULT;
      const int* coeffs = sws_getCoefficients(matrix);
      const int full_range = fr->color_range == AVCOL_RANGE_JPEG ? 1 : 0;
      sws_setColorspaceDetails(sws_.get(), coeffs, full_range, coeffs, 1, 0, 1 << 16, 1 << 16);
    }
    image->width = fr->width;
    image->height = fr->height;
    image->rgb.resize(static_cast<std::size_t>(fr->width) * fr->height * 3);
    uint8_t* dst[1] = {image->rgb.data()};
    const int dst_stride[1] = {fr->width * 3};
    sws_scale(sws_.get(), fr->data, fr->linesize, 0, fr->height, dst, dst_stride);
    av_frame_unref(fr);
    return true;
  }

  OpenDecoder f_;
  std::string path_;
  PacketPtr packet_{av_packet_alloc()};
  FramePtr frame_{av_frame_alloc()};
  SwsPtr sws_;
  bool flushed_ = false;
};

// A PNG sequence's frames, one file at a time, each the first frame's size.
class SequenceStream : public FrameStream {
 public:
  SequenceStream(std::vector<fs::path> files, const VideoInfo& info) : files_(std::move(files)), info_(info) {}

  bool next(Image* image, std::string* error) override {
    if (next_ >= files_.size()) return false;
    Image loaded;
    Image* into = image != nullptr ? image : &loaded;
    const fs::path& file = files_[next_++];
    if (!load_image(file.string(), into, error)) return false;
    if (into->width != info_.width || into->height != info_.height) {
      return fail(error, "Frame '" + file.string() + "' differs in size from the first frame.");
    }
    return true;
  }

 private:
  std::vector<fs::path> files_;
  VideoInfo info_;
  std::size_t next_ = 0;
};

std::unique_ptr<FrameStream> open_sequence(const fs::path& dir, VideoInfo* info, std::string* error) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".png") files.push_back(it->path());
  }
  std::sort(files.begin(), files.end());
  std::ifstream in(dir / "metadata.json");
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json meta = nlohmann::json::parse(text.str(), nullptr, false);
  if (!in || meta.is_discarded() || !meta.is_object()) {
    fail(error, "'" + dir.string() + "' has no readable metadata.json; it is not a Vidgraph PNG sequence.");
    return nullptr;
  }
  info->fps = meta.value("fps", 0.0);
  info->codec = "png";
  info->pixel_format = "rgb24";
  info->metadata["comment"] = meta.value("workflow", std::string());
  if (!files.empty()) {
    Image first;
    if (!load_image(files[0].string(), &first, error)) return nullptr;
    info->width = first.width;
    info->height = first.height;
  }
  return std::make_unique<SequenceStream>(std::move(files), *info);
}

}  // namespace

std::unique_ptr<FrameStream> FrameStream::open(const std::string& path, VideoInfo* info, std::string* error) {
  *info = VideoInfo{};
  if (const std::string bad = check_path(path); !bad.empty()) {
    fail(error, bad);
    return nullptr;
  }
  std::error_code ec;
  if (fs::is_directory(path, ec)) return open_sequence(path, info, error);
  OpenDecoder f;
  if (!open_file(path, info, &f, error)) return nullptr;
  return std::make_unique<FileStream>(std::move(f), path);
}

bool probe_video(const std::string& path, VideoInfo* info, std::string* error, bool keep_frames) {
  *info = VideoInfo{};
  if (const std::string bad = check_path(path); !bad.empty()) return fail(error, bad);
  std::error_code ec;
  if (fs::is_directory(path, ec)) return probe_sequence(path, info, error, keep_frames);
  OpenDecoder f;
  if (!open_file(path, info, &f, error)) return false;
  if (keep_frames) info->frames = Frames{0, info->width, info->height, {}};
  return decode_all(f.format.get(), f.stream, f.decoder.get(), info, keep_frames, path, error);
}

}  // namespace vidgraph::nodes::media
