// vidgraph-train-bench: time and peak memory of one training step (forward + backward + AdamW)
// of the Wan DiT per attention method (--mode lora|full), or of one distillation step (--mode dmd:
// the generator update and --critic-updates critic updates, the method being the student's), with random weights made on the device and one random
// sample of the grid's shape. Prints one JSON object on stdout (also to --out); logs go to stderr.
// Needs only LibTorch (no Qt), so it builds on the GPU machine too. Under torchrun (WORLD_SIZE set)
// every rank takes GPU LOCAL_RANK and the step runs sequence-parallel over all of them; rank 0
// prints the JSON, with every rank's peak memory.
// Exit status: 0 all measured, 1 bad options or no plugin, 3 some method failed (its entry says why).
#include <ATen/core/Tensor.h>
#include <ATen/ops/full.h>
#include <ATen/ops/randn.h>
#include <ATen/Context.h>
#include <torch/version.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_weights.h"
#include "engine/environment.h"
#include "models/parallel/sequence_parallel.h"
#include "models/train/distill.h"
#include "models/train/trainer.h"
#include "models/wan/wan_tiny.h"
#include "plugins/api/plugin_loader.h"

namespace {

using namespace vidgraph;
using nlohmann::json;

struct Options {
  std::string config = "tiny", device = "cpu", dtype = "fp32", grid, mode = "lora", plugin, out;
  std::string teacher_method = "full";
  std::vector<std::string> methods{"full", "vsa", "sla_star"};
  int rank = 32, warmup = 1, repeats = 5, text_len = 0, critic_updates = 5;
  double sparsity = 0.875;
  bool checkpointing = false;
};

at::ScalarType parse_dtype(const std::string& s) {
  if (s == "bf16") return at::kBFloat16;
  if (s == "fp16") return at::kHalf;
  if (s == "fp32") return at::kFloat;
  throw std::invalid_argument("unknown --dtype '" + s + "': use bf16, fp16 or fp32");
}

std::array<int64_t, 3> parse_grid(const std::string& text) {
  std::array<int64_t, 3> g{};
  char c1 = 0, c2 = 0;
  std::istringstream ss(text);
  if (!(ss >> g[0] >> c1 >> g[1] >> c2 >> g[2]) || c1 != ',' || c2 != ',' || !ss.eof() || g[0] < 1 || g[1] < 1 ||
      g[2] < 1) {
    throw std::invalid_argument("--grid '" + text + "' is not three positive integers F,H,W (e.g. 31,22,40)");
  }
  return g;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

// Under torchrun: this process's rank of a group over all of them, on GPU LOCAL_RANK when the
// device is CUDA (o.device becomes cuda:LOCAL_RANK); null without WORLD_SIZE.
std::shared_ptr<parallel::SequenceParallel> join_ranks(Options& o, const engine::Environment& environment) {
  auto env = parallel::process_group_options_from_torchrun(environment.torchrun);
  if (!env) return nullptr;
  if (c10::Device(o.device).is_cuda()) o.device = "cuda:" + std::to_string(env->local_rank);
  env->device = c10::Device(o.device);
  return std::make_shared<parallel::SequenceParallel>(parallel::ProcessGroupHandle::create(*env));
}

json summary(const std::vector<double>& ms, const std::vector<double>& peak, const c10::Device& device) {
  return json{{"median_ms", median(ms)},
              {"min_ms", *std::min_element(ms.begin(), ms.end())},
              {"max_ms", *std::max_element(ms.begin(), ms.end())},
              {"steps", ms.size()},
              {"peak_gib", *std::max_element(peak.begin(), peak.end()) / (1 << 30)},
              {"peak_kind", device.is_cuda() ? "cuda allocator peak" : "process peak RSS"}};
}

// One student method: warmup + repeats distillation steps (teacher + critic + student, one copy
// of the random weights) at the default student schedule {1000, 757, 522}.
json bench_dmd(const Options& o, const std::string& method, const wan::WanConfig& config,
               const std::array<int64_t, 3>& grid, plugin::AttentionBackend& backend) {
  wan::WanModelOptions mo;
  mo.config = config;
  mo.device = c10::Device(o.device);
  mo.compute_dtype = parse_dtype(o.dtype);
  wan::WanModel model(mo);
  bench::fill_random_parameters(*model);
  const auto& p = config.patch_size;
  const int64_t text_len = o.text_len > 0 ? o.text_len : config.text_len;
  train::DistillOptions d;
  d.latent_shape = {config.in_dim, grid[0] * p[0], grid[1] * p[1], grid[2] * p[2]};
  d.negative_context = at::randn({text_len, config.text_dim});
  d.student_lora.rank = d.critic_lora.rank = o.rank;
  d.student_lora.alpha = d.critic_lora.alpha = o.rank;
  d.method = method;
  d.sparsity = {o.sparsity, o.sparsity, 0};
  d.teacher_method = o.teacher_method;
  d.teacher_sparsity = o.teacher_method == "full" ? 0.0 : o.sparsity;
  d.critic_updates = o.critic_updates;
  d.student_lr = d.critic_lr = 1e-5;
  d.random_exit = false;  // every step runs the whole chain: the step's cost does not depend on a draw
  d.steps = o.warmup + o.repeats;
  d.checkpointing = o.checkpointing;
  std::vector<double> ms, peak;
  double generator_loss = 0, critic_loss = 0;
  d.on_step = [&](const train::DistillStep& step) {
    if (step.step > o.warmup) {
      ms.push_back(step.seconds * 1e3);
      peak.push_back(static_cast<double>(step.peak_bytes));
    }
    generator_loss = step.generator_loss;
    critic_loss = step.critic_loss;
  };
  train::distill(*model, &backend, {{at::randn({text_len, config.text_dim}), {}, "random"}}, d);
  json result = summary(ms, peak, mo.device);
  result["last_generator_loss"] = generator_loss;
  result["last_critic_loss"] = critic_loss;
  result["finite"] = std::isfinite(generator_loss) && std::isfinite(critic_loss);
  return result;
}

// One method: warmup + repeats training steps on a fresh random model.
json bench_method(const Options& o, const std::string& method, const wan::WanConfig& config,
                  const std::array<int64_t, 3>& grid, plugin::AttentionBackend& backend,
                  parallel::SequenceParallel* sp) {
  wan::WanModelOptions mo;
  mo.config = config;
  mo.device = c10::Device(o.device);
  mo.compute_dtype = parse_dtype(o.dtype);
  wan::WanModel model(mo);
  bench::fill_random_parameters(*model);
  const auto& p = config.patch_size;
  train::TrainingSample s;
  s.latent = at::randn({config.in_dim, grid[0] * p[0], grid[1] * p[1], grid[2] * p[2]});
  s.context = at::randn({o.text_len > 0 ? o.text_len : config.text_len, config.text_dim});
  s.name = "random";
  train::TrainOptions t;
  t.mode = o.mode == "full" ? train::TrainMode::Full : train::TrainMode::Lora;
  t.lora.rank = o.rank;
  t.lora.alpha = o.rank;
  t.method = method;
  t.sparsity = {o.sparsity, o.sparsity, 0};
  t.steps = o.warmup + o.repeats;
  t.lr = 1e-5;
  t.checkpointing = o.checkpointing;
  t.sequence_parallel = sp;
  std::vector<double> ms, peak;
  double loss = 0;
  t.on_step = [&](const train::TrainStep& step) {
    if (step.step > o.warmup) {
      ms.push_back(step.seconds * 1e3);
      peak.push_back(static_cast<double>(step.peak_bytes));
    }
    loss = step.loss;
  };
  train::train(*model, &backend, {s}, t);
  json result = summary(ms, peak, mo.device);
  result["last_loss"] = loss;
  result["finite"] = std::isfinite(loss);
  if (sp != nullptr) {  // every rank's peak, in rank order
    const at::Tensor mine = at::full({1}, *std::max_element(peak.begin(), peak.end()) / (1 << 30),
                                     at::TensorOptions().dtype(at::kDouble).device(mo.device));
    for (const at::Tensor& p : sp->group().all_gather(mine)) result["peak_gib_per_rank"].push_back(p.item<double>());
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("train-bench"));
  const engine::Environment environment = engine::read_environment();
  Options o;
  CLI::App app{"vidgraph-train-bench: time and peak memory of a Wan DiT training step per attention method"};
  app.add_option("--config", o.config, "tiny or 5b")->check(CLI::IsMember({"tiny", "5b"}));
  app.add_option("--device", o.device, "cpu or cuda[:N]");
  app.add_option("--dtype", o.dtype, "matmul weight dtype: fp32, bf16 or fp16");
  app.add_option("--grid", o.grid, "token grid F,H,W (default: 4,4,8 tiny; 31,22,40 for 5b)");
  app.add_option("--methods", o.methods, "attention methods")->delimiter(',');
  app.add_option("--mode", o.mode, "lora, full, or dmd (one distillation step; the method is the student's)")
      ->check(CLI::IsMember({"lora", "full", "dmd"}));
  app.add_option("--critic-updates", o.critic_updates, "dmd: critic updates per generator update")
      ->check(CLI::PositiveNumber);
  app.add_option("--teacher-method", o.teacher_method,
                 "dmd: the teacher's and critic's attention (full, or the student's sparse method at --sparsity)")
      ->check(CLI::IsMember({"full", "vsa", "sla_star"}));
  app.add_option("--rank", o.rank, "LoRA rank");
  app.add_option("--sparsity", o.sparsity, "vsa / sla_star sparsity");
  app.add_flag("--checkpointing", o.checkpointing, "gradient checkpointing per block");
  app.add_option("--warmup", o.warmup, "untimed steps");
  app.add_option("--repeats", o.repeats, "timed steps")->check(CLI::PositiveNumber);
  app.add_option("--text-len", o.text_len, "context tokens (default: the config's text_len)");
  app.add_option("--plugin", o.plugin, "plugin folder (default: the program's search path)");
  app.add_option("--out", o.out, "also write the JSON here");
  CLI11_PARSE(app, argc, argv);
  json result;
  int status = 0;
  std::shared_ptr<parallel::SequenceParallel> sp;
  try {
    sp = join_ranks(o, environment);
    at::manual_seed(1);  // every rank draws the same random model and sample
    const wan::WanConfig config = o.config == "tiny" ? wan::wan_tiny_config() : wan::WanConfig::ti2v_5b();
    const auto grid = parse_grid(o.grid.empty() ? (o.config == "tiny" ? "4,4,8" : "31,22,40") : o.grid);
    parse_dtype(o.dtype);
    auto report = o.plugin.empty() ? plugin::load_attention_plugin(environment.plugin_path) : plugin::load_attention_plugin_from({o.plugin});
    if (!report.plugin) {
      std::cerr << report.message() << "\n";
      return 1;
    }
    result = json{{"program", "vidgraph-train-bench"},
                  {"torch", TORCH_VERSION},
                  {"config", o.config},
                  {"grid", grid},
                  {"device", o.device},
                  {"dtype", o.dtype},
                  {"mode", o.mode},
                  {"rank", o.rank},
                  {"checkpointing", o.checkpointing},
                  {"sparsity", o.sparsity},
                  {"warmup", o.warmup},
                  {"repeats", o.repeats},
                  {"ranks", sp ? sp->world_size() : 1},
                  {"critic_updates", o.mode == "dmd" ? json(o.critic_updates) : json()},
                  {"teacher_method", o.mode == "dmd" ? json(o.teacher_method) : json()},
                  {"methods", json::object()}};
    for (const std::string& method : o.methods) {
      try {
        if (o.mode == "dmd" && sp) throw std::invalid_argument("--mode dmd runs on one process");
        result["methods"][method] = o.mode == "dmd"
                                        ? bench_dmd(o, method, config, grid, report.plugin->backend())
                                        : bench_method(o, method, config, grid, report.plugin->backend(), sp.get());
      } catch (const std::exception& e) {
        result["methods"][method] = json{{"error", e.what()}};
        status = 3;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "vidgraph-train-bench: " << e.what() << "\n";
    return 1;
  }
  if (sp && sp->rank() > 0) return status;  // rank 0 reports
  std::cout << result.dump(2) << "\n";
  if (!o.out.empty()) {
    std::ofstream(o.out) << result.dump(2) << "\n";
  }
  return status;
}
