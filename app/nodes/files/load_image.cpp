// Load Image: reads PNG/JPEG/WebP, then resizes and centre-crops to the Wan2.2 size rules (both
// sides multiples of 32, aspect as close to the image's as the reference's best_output_size gets,
// within max_area pixels) or to an explicit width x height. In a run of several ranks only rank 0
// reads the file and sends the image to the others.
#include <ATen/ops/from_blob.h>

#include "nodes/common/node_types.h"
#include "nodes/common/node_util.h"
#include "nodes/common/rank_broadcast.h"
#include "nodes/input_file.h"
#include "nodes/media/image_io.h"
#include "nodes/size_rules.h"
#include "nodes/value_types.h"

namespace vidgraph::nodes {

using engine::ParamSpec;

namespace {

// Reads and fits the image (load_image, then the size rules).
engine::Result<Image> read_image(const engine::NodeContext& ctx) {
  const std::string path = ctx.param_path("path");
  const std::string bad = check_input_path("path", path, InputKind::File,
                                           "an image file (PNG, JPEG or WebP)");
  if (!bad.empty()) return node_error(ctx, bad);
  Image original;
  std::string error;
  if (!media::load_image(path, &original, &error)) return node_error(ctx, error);
  const int width = static_cast<int>(ctx.param_int("width"));
  const int height = static_cast<int>(ctx.param_int("height"));
  OutputSize size{width, height};
  if (width == 0 && height == 0) {
    size = best_output_size(original.width, original.height,
                            static_cast<int>(ctx.param_int("max_area")));
  } else if (!is_valid_output_size(width, height)) {
    return node_error(ctx, "width and height must both be 0 (automatic) or both positive multiples "
                           "of 32 (got " + std::to_string(width) + "x" + std::to_string(height) + ").");
  }
  Image fitted;
  if (!media::resize_center_crop(original, size.width, size.height, &fitted, &error)) {
    return node_error(ctx, error);
  }
  ctx.log_info("Loaded " + path + " (" + std::to_string(original.width) + "x" +
               std::to_string(original.height) + ") as " + std::to_string(size.width) + "x" +
               std::to_string(size.height) + ".");
  return fitted;
}

// Several ranks: rank 0 reads the image and sends it (its pixels as floats, exact for uint8); the
// others receive it, so only rank 0 touches the file.
engine::Result<Image> read_or_receive(const engine::NodeContext& ctx) {
  return computed_on_rank0<Image>(
      ctx, "load the image", [&] { return read_image(ctx); },
      [](const Image& image) {
        auto* pixels = const_cast<std::uint8_t*>(image.rgb.data());  // read, never written
        return std::vector{at::from_blob(pixels, {image.height, image.width, 3}, at::kByte)};
      },
      [&](const std::vector<at::Tensor>& tensors) -> engine::Result<Image> {
        if (tensors.size() != 1 || tensors[0].dim() != 3) return node_error(ctx, "Rank 0 sent no image.");
        const at::Tensor pixels = tensors[0].to(at::kByte).contiguous();
        Image image;
        image.height = static_cast<int>(pixels.size(0));
        image.width = static_cast<int>(pixels.size(1));
        image.rgb.assign(pixels.data_ptr<uint8_t>(), pixels.data_ptr<uint8_t>() + pixels.numel());
        return image;
      });
}

engine::Result<engine::ValueMap> compute_load_image(engine::NodeContext& ctx) {
  engine::Result<Image> image = read_or_receive(ctx);
  if (!image.ok()) return image.error();
  const std::size_t bytes = image->byte_size();
  return engine::ValueMap{{"image", engine::make_value(kImageType, std::move(*image), bytes)}};
}

}  // namespace

engine::NodeType load_image_node() {
  engine::NodeType t;
  t.name = "LoadImage";
  t.display_name = "Load Image";
  t.category = "image";
  t.description = "Reads a PNG, JPEG or WebP image (a regular file of up to 1 GiB and 100 "
                  "megapixels) and fits it to the model's size rules: scaled (antialiased Lanczos, "
                  "as PIL and the reference resize) and centre-cropped to sides that are multiples "
                  "of 32 with the image's aspect, within max_area pixels (the Wan2.2 reference's "
                  "rule), or to an explicit width x height.";
  t.outputs = {{"image", kImageType, false, "The fitted RGB image."}};
  t.params = {
      ParamSpec::file_path("path", "", "Images (*.png *.jpg *.jpeg *.webp)",
                           "The image file (PNG, JPEG or WebP; a regular file of at most 1 GiB "
                           "and 100 megapixels, checked from its header before decoding)."),
      ParamSpec::integer("max_area", kWanMaxArea, 1024, 4096.0 * 4096.0,
                         "Pixel budget when width and height are 0 (Wan2.2-TI2V-5B: 704*1280)."),
      ParamSpec::integer("width", 0, 0, 4096,
                         "Output width, a multiple of 32; 0 = from the image's aspect and max_area."),
      ParamSpec::integer("height", 0, 0, 4096,
                         "Output height, a multiple of 32; 0 = from the image's aspect and max_area."),
  };
  t.fingerprint = [](const nlohmann::json& params, const engine::RunOptions& options) {
    return file_param_fingerprint(params, options, "path");
  };
  t.compute = compute_load_image;
  return t;
}

}  // namespace vidgraph::nodes
