// Implements contact_sheet.h with OpenCV's area resize.
#include "nodes/media/contact_sheet.h"

#include <algorithm>
#include <cmath>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "nodes/media/image_io.h"

namespace vidgraph::nodes::media {

bool make_contact_sheet(const Frames& frames, const ContactSheetOptions& options, Image* out,
                        std::string* error) {
  if (!frames.consistent()) {
    if (error) *error = "There are no frames for the contact sheet.";
    return false;
  }
  if (options.columns < 1 || options.max_frames < 1 || options.tile_width < 8 || options.gap < 0) {
    if (error) *error = "Contact sheet needs columns >= 1, max_frames >= 1, tile_width >= 8, gap >= 0.";
    return false;
  }
  const int shown = std::min(frames.count, options.max_frames);
  const int columns = std::min(options.columns, shown);
  const int rows = (shown + columns - 1) / columns;
  const int tile_w = options.tile_width;
  const int tile_h = std::max(1, static_cast<int>(std::lround(
                                     static_cast<double>(frames.height) * tile_w / frames.width)));
  const int gap = options.gap;
  Image sheet;
  sheet.width = columns * tile_w + (columns + 1) * gap;
  sheet.height = rows * tile_h + (rows + 1) * gap;
  sheet.rgb.assign(static_cast<std::size_t>(sheet.width) * sheet.height * 3, 32);
  cv::Mat canvas(sheet.height, sheet.width, CV_8UC3, sheet.rgb.data());
  for (int i = 0; i < shown; ++i) {
    // Evenly spaced from the first to the last frame.
    const int index = shown == 1 ? 0 : static_cast<int>(std::lround(
                                           static_cast<double>(i) * (frames.count - 1) / (shown - 1)));
    const cv::Mat source(frames.height, frames.width, CV_8UC3,
                         const_cast<std::uint8_t*>(frames.frame(index)));
    const int x = gap + (i % columns) * (tile_w + gap);
    const int y = gap + (i / columns) * (tile_h + gap);
    cv::Mat tile = canvas(cv::Rect(x, y, tile_w, tile_h));
    const int interpolation = tile_w < frames.width ? cv::INTER_AREA : cv::INTER_LINEAR;
    cv::resize(source, tile, cv::Size(tile_w, tile_h), 0, 0, interpolation);
  }
  *out = std::move(sheet);
  return true;
}

bool write_contact_sheet(const Frames& frames, const OutputTarget& target,
                         const ContactSheetOptions& options, std::string* error, std::string* written) {
  Image sheet;
  std::string png;
  if (!make_contact_sheet(frames, options, &sheet, error) || !encode_png(sheet, &png, error)) {
    return false;
  }
  Published published = write_file_atomically(target, png.data(), png.size());
  if (!published.error.empty()) {
    if (error) *error = std::move(published.error);
    return false;
  }
  if (written) *written = published.path;
  return true;
}

}  // namespace vidgraph::nodes::media
