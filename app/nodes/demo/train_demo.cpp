// vidgraph-train-demo: trains the tiny demo model (demo_training.h) from our own procedural scenes
// and the sample image, and publishes the model folder OUT_DIR. OUT_DIR must not exist: the model is
// written into a temporary sibling folder and renamed into place at the end, so a folder is never
// replaced and a failed run leaves nothing half-written under that name.
// The image is a picture (read as Load Image reads it; needs the media build) or a .safetensors file
// of the fitted image written by --fit-image, for builds without OpenCV (the GPU machine's).
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <unistd.h>

#include <ATen/Context.h>
#include <ATen/ops/from_blob.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "engine/environment.h"
#include "models/io/safetensors.h"
#include "nodes/demo/demo_training.h"
#include "plugins/api/plugin_loader.h"
#ifdef VIDGRAPH_TRAIN_DEMO_MEDIA
#include "nodes/media/image_io.h"
#endif

namespace fs = std::filesystem;
using namespace vidgraph;

namespace {

const char* kUsage =
    "usage: vidgraph-train-demo OUT_DIR --tokenizer spiece.model --image IMAGE [--seed N] [--quick]\n"
    "                           [--vae FILE | --vae-steps N --vae-batch N] [--clips N] [--dit-steps N]\n"
    "                           [--dit-batch N] [--dit-dim N] [--caption-dropout P] [--device cpu|cuda]\n"
    "       vidgraph-train-demo --fit-image OUT.safetensors --image PICTURE\n"
    "Trains the tiny demo model (VAE, then DiT with vsa attention) on procedural scenes and crops of\n"
    "the image, and writes the model folder OUT_DIR (which must not exist). IMAGE is a picture or the\n"
    ".safetensors that --fit-image writes from one (for builds without OpenCV). --vae: reuse the\n"
    "vae.safetensors of a demo model folder instead of training one. --caption-dropout: the share of\n"
    "DiT samples trained on the default negative prompt, for guidance above 1 (default 0.1).\n"
    "--quick: a short schedule for tests (40 VAE steps, 8 clips, 100 DiT steps of width 64).\n";

constexpr int kWidth = 160, kHeight = 96;

struct Args {
  std::string out, image, fit_image;
  nodes::DemoTrainingOptions options;
};

bool parse_count(const std::string& name, const char* text, int minimum, long long* value, std::string& error) {
  char* end = nullptr;
  *value = std::strtoll(text, &end, 10);
  if (*end != '\0' || *value < minimum) {
    error = name + " takes an integer >= " + std::to_string(minimum) + ", not '" + text + "'";
    return false;
  }
  return true;
}

bool parse_fraction(const std::string& name, const char* text, double* value, std::string& error) {
  char* end = nullptr;
  *value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(*value >= 0 && *value < 1)) {
    error = name + " takes a number in [0, 1), not '" + text + "'";
    return false;
  }
  return true;
}

int* count_option(nodes::DemoTrainingOptions& o, const std::string& arg) {
  if (arg == "--vae-steps") return &o.vae_steps;
  if (arg == "--vae-batch") return &o.vae_batch;
  if (arg == "--clips") return &o.clips;
  if (arg == "--dit-steps") return &o.dit_steps;
  if (arg == "--dit-batch") return &o.dit_batch;
  if (arg == "--dit-dim") return &o.dit_dim;
  return nullptr;
}

bool parse(int argc, char** argv, Args& a, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      a.options.vae_steps = 40;
      a.options.vae_batch = 1;
      a.options.clips = 8;
      a.options.dit_steps = 100;
      a.options.dit_batch = 4;
      a.options.dit_dim = 64;
      continue;
    }
    if (!arg.empty() && arg[0] != '-') {
      if (!a.out.empty()) {
        error = "unexpected argument '" + arg + "'";
        return false;
      }
      a.out = arg;
      continue;
    }
    if (i + 1 >= argc) {
      error = arg + " needs a value";
      return false;
    }
    const char* v = argv[++i];
    long long n = 0;
    if (arg == "--tokenizer") {
      a.options.tokenizer = v;
    } else if (arg == "--image") {
      a.image = v;
    } else if (arg == "--fit-image") {
      a.fit_image = v;
    } else if (arg == "--vae") {
      a.options.vae = v;
    } else if (arg == "--device") {
      if (std::string(v) != "cpu" && std::string(v) != "cuda") {
        error = "--device must be cpu or cuda, not '" + std::string(v) + "'";
        return false;
      }
      a.options.device = std::string(v) == "cuda" ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
    } else if (arg == "--seed") {
      if (!parse_count(arg, v, 0, &n, error)) return false;
      a.options.seed = static_cast<uint64_t>(n);
    } else if (arg == "--caption-dropout") {
      if (!parse_fraction(arg, v, &a.options.caption_dropout, error)) return false;
    } else if (int* count = count_option(a.options, arg)) {
      if (!parse_count(arg, v, 1, &n, error)) return false;
      *count = static_cast<int>(n);
    } else {
      error = "unknown option '" + arg + "'";
      return false;
    }
  }
  if (a.image.empty()) error = "--image is missing";
  else if (!a.fit_image.empty()) return true;
  else if (a.out.empty()) error = "OUT_DIR is missing";
  else if (a.options.tokenizer.empty()) error = "--tokenizer is missing";
  return error.empty();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The picture as Load Image gives it at `width` x `height`: uint8 [H, W, 3].
at::Tensor load_fitted(const std::string& path, int width, int height) {
#ifdef VIDGRAPH_TRAIN_DEMO_MEDIA
  nodes::Image original, fitted;
  std::string error;
  if (!nodes::media::load_image(path, &original, &error) ||
      !nodes::media::resize_center_crop(original, width, height, &fitted, &error)) {
    throw std::runtime_error(error);
  }
  return at::from_blob(fitted.rgb.data(), {height, width, 3}, at::kByte).clone();
#else
  (void)width, (void)height;
  throw std::runtime_error("this build reads no pictures (no OpenCV); give --image the .safetensors that "
                           "`vidgraph-train-demo --fit-image` writes from '" + path + "' on a full build.");
#endif
}

// Sets options.image and image_large: from a --fit-image file, or fitted from the picture.
void load_images(const std::string& path, nodes::DemoTrainingOptions& o) {
  if (!ends_with(path, ".safetensors")) {
    o.image = load_fitted(path, kWidth, kHeight);
    o.image_large = load_fitted(path, 2 * kWidth, 2 * kHeight);
    return;
  }
  const auto file = model_io::SafetensorsFile::open(path);
  o.image = file.load("image");
  o.image_large = file.load("image_large");
  const std::vector<int64_t> small{kHeight, kWidth, 3}, large{2 * kHeight, 2 * kWidth, 3};
  if (o.image.scalar_type() != at::kByte || o.image.sizes().vec() != small ||
      o.image_large.scalar_type() != at::kByte || o.image_large.sizes().vec() != large) {
    throw std::runtime_error("'" + path + "' is not a fitted demo image (uint8 image [96, 160, 3] and "
                             "image_large [192, 320, 3]); write one with --fit-image.");
  }
}

// training.json beside the weights: what made them, and how well and how fast it went.
void write_training_record(const fs::path& dir, const Args& a, const nodes::DemoTrainingReport& r,
                           const std::string& command) {
  const nodes::DemoTrainingOptions& o = a.options;
  const nlohmann::json record = {
      {"command", command},
      {"seed", o.seed},
      {"device", o.device.str()},
      {"vae", o.vae.empty() ? nlohmann::json{{"steps", o.vae_steps}, {"batch", o.vae_batch}, {"lr", o.vae_lr}}
                            : nlohmann::json{{"from", o.vae}}},
      {"dit", {{"clips", o.clips}, {"steps", o.dit_steps}, {"batch", o.dit_batch}, {"dim", o.dit_dim}, {"lr", o.dit_lr},
               {"caption_dropout", o.caption_dropout}}},
      {"vae_loss", r.vae_loss},
      {"dit_loss", r.dit_loss},
      {"image_psnr_db", r.image_psnr},
      {"shape_colour_error", r.shape_colour_error},
      {"seconds", {{"vae", r.seconds_vae}, {"data", r.seconds_data}, {"dit", r.seconds_dit}}}};
  std::ofstream(dir / "training.json") << record.dump(2) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  Args a;
  std::string error;
  if (!parse(argc, argv, a, error)) {
    std::cerr << "vidgraph-train-demo: " << error << "\n" << kUsage;
    return 2;
  }
  if (!a.fit_image.empty()) {
    try {
      load_images(a.image, a.options);
      model_io::save_safetensors(a.fit_image, {{"image", a.options.image}, {"image_large", a.options.image_large}});
      spdlog::info("Wrote the fitted image '{}'", a.fit_image);
      return 0;
    } catch (const std::exception& e) {
      std::cerr << "vidgraph-train-demo: " << e.what() << "\n";
      return 1;
    }
  }
  if (a.options.device.is_cuda() && !at::hasCUDA()) {
    std::cerr << "vidgraph-train-demo: --device cuda but this LibTorch sees no GPU; use --device cpu.\n";
    return 2;
  }
  const fs::path out = fs::absolute(a.out);
  std::error_code ec;
  if (fs::exists(out, ec) || fs::is_symlink(out, ec)) {
    std::cerr << "vidgraph-train-demo: '" << out.string() << "' already exists; give a new folder "
              << "(the model is never written over an existing one).\n";
    return 1;
  }
  const fs::path temp = out.parent_path() / ("." + out.filename().string() + ".partial-" + std::to_string(getpid()));
  plugin::PluginLoadReport plugin;
  try {
    if (!fs::is_regular_file(a.options.tokenizer)) {
      throw std::runtime_error("the tokenizer '" + a.options.tokenizer + "' is not a file; give the demo "
                               "spiece.model (resources/demo/model/spiece.model).");
    }
    load_images(a.image, a.options);
    plugin = plugin::load_attention_plugin(engine::read_environment().plugin_path);
    if (!plugin.plugin) throw std::runtime_error(plugin.message());
    spdlog::info("Training the demo model (seed {}) into '{}'", a.options.seed, out.string());
    const nodes::DemoTrainingReport r = nodes::train_demo_model(temp.string(), plugin.plugin->backend(), a.options);
    std::string command = "vidgraph-train-demo";
    for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
    write_training_record(temp, a, r, command);
    fs::rename(temp, out);  // fails rather than replaces when OUT_DIR appeared meanwhile (non-empty)
    spdlog::info("Wrote '{}': VAE {:.0f} s (loss {:.4f}, sample image {:.2f} dB), data {:.0f} s, DiT {:.0f} s "
                 "(loss {:.4f})",
                 out.string(), r.seconds_vae, r.vae_loss, r.image_psnr, r.seconds_data, r.seconds_dit, r.dit_loss);
  } catch (const std::exception& e) {
    std::cerr << "vidgraph-train-demo: " << e.what() << "\n";
    fs::remove_all(temp, ec);
    return 1;
  }
  return 0;
}
