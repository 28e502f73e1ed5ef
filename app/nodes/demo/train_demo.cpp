// vidgraph-train-demo: trains the tiny demo model (demo_training.h) from our own procedural scenes
// and the sample image, and publishes the model folder OUT_DIR. OUT_DIR must not exist: the model is
// written into a temporary sibling folder and renamed into place at the end, so a folder is never
// replaced and a failed run leaves nothing half-written under that name.
// Usage: vidgraph-train-demo OUT_DIR --tokenizer spiece.model --image landscape.png [--seed N]
//        [--quick] [--vae-steps N] [--dit-steps N] [--clips N] [--device cpu|cuda]
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>

#include <ATen/Context.h>
#include <ATen/ops/from_blob.h>
#include <spdlog/spdlog.h>

#include "nodes/demo/demo_training.h"
#include "nodes/media/image_io.h"
#include "plugins/api/plugin_loader.h"

namespace fs = std::filesystem;
using namespace vidgraph;

namespace {

const char* kUsage =
    "usage: vidgraph-train-demo OUT_DIR --tokenizer spiece.model --image landscape.png [--seed N]\n"
    "                           [--quick] [--vae-steps N] [--dit-steps N] [--clips N] [--device cpu|cuda]\n"
    "Trains the tiny demo model (VAE, then DiT with vsa attention) on procedural scenes and crops of\n"
    "the image, and writes the model folder OUT_DIR (which must not exist). --quick: a short\n"
    "schedule for tests (about 3.5 CPU-minutes).\n";

struct Args {
  std::string out, image;
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

bool parse(int argc, char** argv, Args& a, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      a.options.vae_steps = 40;
      a.options.clips = 8;
      a.options.dit_steps = 100;
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
    } else if (arg == "--device") {
      if (std::string(v) != "cpu" && std::string(v) != "cuda") {
        error = "--device must be cpu or cuda, not '" + std::string(v) + "'";
        return false;
      }
      a.options.device = std::string(v) == "cuda" ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
    } else if (arg == "--seed") {
      if (!parse_count(arg, v, 0, &n, error)) return false;
      a.options.seed = static_cast<uint64_t>(n);
    } else if (arg == "--vae-steps" || arg == "--dit-steps" || arg == "--clips") {
      if (!parse_count(arg, v, 1, &n, error)) return false;
      (arg == "--vae-steps" ? a.options.vae_steps : arg == "--dit-steps" ? a.options.dit_steps : a.options.clips) =
          static_cast<int>(n);
    } else {
      error = "unknown option '" + arg + "'";
      return false;
    }
  }
  if (a.out.empty()) error = "OUT_DIR is missing";
  else if (a.options.tokenizer.empty()) error = "--tokenizer is missing";
  else if (a.image.empty()) error = "--image is missing";
  return error.empty();
}

// The image as Load Image gives it at `width` x `height`: uint8 [H, W, 3].
at::Tensor load_fitted(const std::string& path, int width, int height) {
  nodes::Image original, fitted;
  std::string error;
  if (!nodes::media::load_image(path, &original, &error) ||
      !nodes::media::resize_center_crop(original, width, height, &fitted, &error)) {
    throw std::runtime_error(error);
  }
  return at::from_blob(fitted.rgb.data(), {height, width, 3}, at::kByte).clone();
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
  try {
    if (!fs::is_regular_file(a.options.tokenizer)) {
      throw std::runtime_error("the tokenizer '" + a.options.tokenizer + "' is not a file; give the demo "
                               "spiece.model (the build writes it to build/share/vidgraph/models/wan22-tiny/spiece.model).");
    }
    a.options.image = load_fitted(a.image, 160, 96);
    a.options.image_large = load_fitted(a.image, 320, 192);
    plugin::PluginLoadReport plugin = plugin::load_attention_plugin();
    if (!plugin.plugin) throw std::runtime_error(plugin.message());
    spdlog::info("Training the demo model (seed {}) into '{}'", a.options.seed, out.string());
    const nodes::DemoTrainingReport r = nodes::train_demo_model(temp.string(), plugin.plugin->backend(), a.options);
    fs::rename(temp, out);  // fails rather than replaces when OUT_DIR appeared meanwhile (non-empty)
    spdlog::info("Wrote '{}': VAE {:.0f} s (loss {:.4f}, sample image {:.2f} dB), data {:.0f} s, DiT {:.0f} s "
                 "(loss {:.4f})",
                 out.string(), r.seconds_vae, r.vae_loss, r.image_psnr, r.seconds_data, r.seconds_dit, r.dit_loss);
  } catch (const std::exception& e) {
    fs::remove_all(temp, ec);
    std::cerr << "vidgraph-train-demo: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
