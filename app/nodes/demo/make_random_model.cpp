// vidgraph-make-random-model: FOR BENCHMARKS ONLY. Writes a Wan2.2-TI2V-5B-sized model folder with
// random weights (random_model.h: DiT at the full 5B config, the Wan2.2 VAE, a umT5-XXL-wide encoder
// over the demo tokenizer's vocabulary), filled on the device and written shard by shard, so the
// headless graph can be timed and its memory measured on a GPU without the real weights. Its videos
// are noise. Nothing here is for making videos.
// Usage: vidgraph-make-random-model OUT_DIR [--config 5b|a14b-t2v|a14b-i2v|wan21-1.3b|wan21-14b]
//        [--device cpu|cuda] [--text-layers N] [--tiny] [--sparse-extras] [--tokenizer spiece.model] [--seed N]
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <string>

#include <ATen/Context.h>

#include "nodes/demo/random_model.h"

namespace fs = std::filesystem;
using namespace vidgraph;

namespace {

const char* kUsage =
    "usage: vidgraph-make-random-model OUT_DIR [--config 5b|a14b-t2v|a14b-i2v|wan21-1.3b|wan21-14b]\n"
    "                                  [--device cpu|cuda] [--text-layers N] [--tiny] [--sparse-extras]\n"
    "                                  [--tokenizer spiece.model] [--seed N]\n"
    "For benchmarks only: random weights at the sizes and in the layout of Wan2.2-TI2V-5B (5b) or\n"
    "Wan2.2-T2V/I2V-A14B (a14b-t2v, a14b-i2v: both experts and the Wan2.1 VAE) or Wan2.1 T2V\n"
    "(wan21-1.3b, wan21-14b); --tiny: demo sizes.\n"
    "The tokenizer defaults to the demo model's, share/vidgraph/models/wan22-tiny/spiece.model\n"
    "beside this program's bin/ folder.\n";

// share/vidgraph/models/wan22-tiny/spiece.model relative to <prefix>/bin/<this program>.
std::string default_tokenizer() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::string();
  return (exe.parent_path().parent_path() / "share/vidgraph/models/wan22-tiny/spiece.model").string();
}

bool parse(int argc, char** argv, std::string& out, nodes::RandomModelOptions& options, std::string& error) {
  options.tokenizer = default_tokenizer();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        error = std::string(name) + " needs a value";
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--tiny") {
      options.tiny = true;
    } else if (arg == "--sparse-extras") {
      options.sparse_extras = true;
    } else if (arg == "--config") {
      const char* v = value("--config");
      if (!v) return false;
      const std::string c = v;
      if (c != "5b" && c != "a14b-t2v" && c != "a14b-i2v" && c != "wan21-1.3b" && c != "wan21-14b") {
        error = "--config must be 5b, a14b-t2v, a14b-i2v, wan21-1.3b or wan21-14b, not '" + c + "'";
        return false;
      }
      options.config = v;
    } else if (arg == "--device") {
      const char* v = value("--device");
      if (!v) return false;
      if (std::string(v) != "cpu" && std::string(v) != "cuda") {
        error = "--device must be cpu or cuda, not '" + std::string(v) + "'";
        return false;
      }
      options.device = std::string(v) == "cuda" ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
    } else if (arg == "--text-layers" || arg == "--seed") {
      const char* v = value(arg.c_str());
      if (!v) return false;
      char* end = nullptr;
      const long long n = std::strtoll(v, &end, 10);
      if (*end != '\0' || n < (arg == "--seed" ? 0 : 1)) {
        error = arg + " takes a " + (arg == "--seed" ? "non-negative" : "positive") + " integer";
        return false;
      }
      if (arg == "--seed") {
        options.seed = static_cast<std::uint64_t>(n);
      } else {
        options.text_layers = n;
      }
    } else if (arg == "--tokenizer") {
      const char* v = value("--tokenizer");
      if (!v) return false;
      options.tokenizer = v;
    } else if (!arg.empty() && arg[0] != '-' && out.empty()) {
      out = arg;
    } else {
      error = "unexpected argument '" + arg + "'";
      return false;
    }
  }
  if (out.empty()) error = "OUT_DIR is missing";
  return !out.empty();
}

}  // namespace

int main(int argc, char** argv) {
  std::string out;
  nodes::RandomModelOptions options;
  std::string error;
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << kUsage;
    return 0;
  }
  if (!parse(argc, argv, out, options, error)) {
    std::cerr << "vidgraph-make-random-model: " << error << "\n" << kUsage;
    return 2;
  }
  if (options.device.is_cuda() && !at::hasCUDA()) {
    std::cerr << "vidgraph-make-random-model: --device cuda but this LibTorch sees no GPU; use --device cpu.\n";
    return 2;
  }
  options.log = [](const std::string& line) { std::cerr << "vidgraph-make-random-model: " << line << "\n"; };
  try {
    nodes::write_random_model(out, options);
  } catch (const std::exception& e) {
    std::cerr << "vidgraph-make-random-model: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
