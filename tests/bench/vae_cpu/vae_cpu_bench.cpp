// vidgraph-vae-cpu-bench: why the demo's VAE decode is slow on the CPU, and whether a change helps
// (issue #40 §5). The demo decodes 25 frames of 160x96 (latent [1,48,7,6,10]) through the slim VAE
// (decoder width 32, multipliers 1,2,2,2, one residual block per stage).
//
//   vidgraph-vae-cpu-bench decode  [--vae FILE] [--runs N] [--save FILE] [--compare FILE]
//   vidgraph-vae-cpu-bench profile [--vae FILE]     per-op inclusive times of one decode
//   vidgraph-vae-cpu-bench convs                    each decode conv shape through the CPU paths
//   vidgraph-vae-cpu-bench grad    [--vae FILE]     training gradients, oneDNN vs slow_conv3d
//
// Common: --threads N (default 2, as on CI). Without --vae the weights are seeded (same shapes);
// --save/--compare write/read the decoded video to check a change against the old path (rel-L2);
// --onednn 0 switches oneDNN off (the old at::conv3d route for the causal convs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/serialize.h>

#include "models/vae/vae_checkpoint.h"
#include "models/vae/wan_vae.h"

namespace vae = vidgraph::vae;
namespace prof = torch::autograd::profiler;

namespace {

struct Args {
  std::string mode = "decode", vae_path, save, compare;
  int runs = 3, threads = 2;
  bool onednn = true;
};

Args parse(int argc, char** argv) {
  Args a;
  if (argc > 1) a.mode = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--vae") a.vae_path = v;
    else if (k == "--runs") a.runs = std::stoi(v);
    else if (k == "--threads") a.threads = std::stoi(v);
    else if (k == "--save") a.save = v;
    else if (k == "--compare") a.compare = v;
    else if (k == "--onednn") a.onednn = v != "0";
  }
  return a;
}

std::shared_ptr<vae::WanVae> make_vae(const Args& a) {
  return a.vae_path.empty() ? vae::make_seeded_vae(vae::WanVaeConfig::demo(), 7) : vae::load_wan_vae(a.vae_path);
}

at::Tensor demo_latent() {
  at::manual_seed(1234);
  return at::randn({1, 48, 7, 6, 10});
}

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void write_tensor(const at::Tensor& t, const std::string& path) {
  const std::vector<char> bytes = torch::pickle_save(t);
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

at::Tensor read_tensor(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes).toTensor();
}

double rel_l2(const at::Tensor& a, const at::Tensor& ref) {
  const at::Tensor d = a.to(at::kDouble) - ref.to(at::kDouble);
  return d.norm().item<double>() / ref.to(at::kDouble).norm().item<double>();
}

int run_decode(const Args& a) {
  const auto model = make_vae(a);
  const at::Tensor z = demo_latent();
  at::Tensor video;
  std::vector<double> times, cpu;  // process CPU time too: steadier than wall time on a busy machine
  for (int i = 0; i < a.runs; ++i) {
    const std::clock_t c0 = std::clock();
    times.push_back(seconds([&] { video = model->decode(z); }));
    cpu.push_back(double(std::clock() - c0) / CLOCKS_PER_SEC);
    std::printf("decode run %d: %.3f s (CPU %.3f s)\n", i + 1, times.back(), cpu.back());
  }
  std::printf("decode median of %d: %.3f s, CPU %.3f s  (video %s)\n", a.runs, median(times), median(cpu),
              c10::str(video.sizes()).c_str());
  if (!a.save.empty()) write_tensor(video, a.save);
  if (!a.compare.empty()) {
    const at::Tensor ref = read_tensor(a.compare);
    std::printf("rel-L2 vs %s: %.3g  max abs %.3g\n", a.compare.c_str(), rel_l2(video, ref),
                (video - ref).abs().max().item<double>());
  }
  return 0;
}

// Inclusive time and count per op name (nested ops count inside their callers too).
struct OpTotal {
  double us = 0;
  int64_t calls = 0;
};

void print_totals(const std::map<std::string, OpTotal>& totals, double wall_s) {
  std::vector<std::pair<std::string, OpTotal>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) { return x.second.us > y.second.us; });
  std::printf("decode wall %.3f s; inclusive time per op (ms, calls):\n", wall_s);
  for (size_t i = 0; i < rows.size() && i < 40; ++i) {
    std::printf("  %-48s %9.1f %6lld\n", rows[i].first.c_str(), rows[i].second.us / 1000.0,
                (long long)rows[i].second.calls);
  }
}

int run_profile(const Args& a) {
  const auto model = make_vae(a);
  const at::Tensor z = demo_latent();
  model->decode(z);  // warm-up outside the profile
  prof::enableProfilerLegacy(prof::ProfilerConfig(prof::ProfilerState::CPU, /*report_input_shapes=*/true));
  const double wall = seconds([&] { model->decode(z); });
  const prof::thread_event_lists lists = prof::disableProfilerLegacy();
  std::map<std::string, OpTotal> totals, conv_shapes;
  for (const auto& list : lists) {
    std::map<uint64_t, const prof::LegacyEvent*> open;  // push events by handle
    for (const auto& e : list) {
      if (e.kind() == prof::EventKind::PushRange) {
        open[e.handle()] = &e;
      } else if (e.kind() == prof::EventKind::PopRange && open.count(e.handle())) {
        const prof::LegacyEvent& push = *open[e.handle()];
        OpTotal& t = totals[push.name()];
        t.us += push.cpuElapsedUs(e);
        t.calls++;
        if (std::string(push.name()) == "aten::conv3d" && push.shapes().size() >= 2) {
          OpTotal& s = conv_shapes[c10::str(push.shapes()[0], " w", push.shapes()[1])];
          s.us += push.cpuElapsedUs(e);
          s.calls++;
        }
      }
    }
  }
  print_totals(totals, wall);
  std::printf("aten::conv3d by input shape / weight shape:\n");
  print_totals(conv_shapes, wall);
  return 0;
}

// A causal conv as the decoder calls it: input already time-padded, spatial padding (k-1)/2.
struct ConvCase {
  at::Tensor x, w, b;
  std::vector<int64_t> pad;
};

// at::conv3d's own choice (slow_conv3d for small single-batch inputs in LibTorch 1.13).
at::Tensor via_conv3d(const ConvCase& c) { return at::conv3d(c.x, c.w, c.b, 1, c.pad); }

at::Tensor via_mkldnn(const ConvCase& c) { return at::mkldnn_convolution(c.x, c.w, c.b, c.pad, {1, 1, 1}, {1, 1, 1}, 1); }

// kt 2-D convolutions over the frames: every input frame through all kt kernel slices in one conv2d
// (frames as the batch), then output frame t sums slice k of input frame t + k.
at::Tensor via_conv2d(const ConvCase& c) {
  const int64_t cin = c.x.size(1), t = c.x.size(2), h = c.x.size(3), w = c.x.size(4);
  const int64_t cout = c.w.size(0), kt = c.w.size(2), tout = t - kt + 1;
  const at::Tensor frames = c.x[0].transpose(0, 1).contiguous();  // [T,Cin,H,W]
  const at::Tensor w2 = c.w.permute({2, 0, 1, 3, 4}).reshape({kt * cout, cin, c.w.size(3), c.w.size(4)});
  const at::Tensor y = at::conv2d(frames, w2, {}, 1, {c.pad[1], c.pad[2]});  // [T,kt*Cout,H,W]
  at::Tensor out = y.slice(0, 0, tout).slice(1, 0, cout) + c.b.view({1, cout, 1, 1});
  for (int64_t k = 1; k < kt; ++k) out.add_(y.slice(0, k, k + tout).slice(1, k * cout, (k + 1) * cout));
  return out.transpose(0, 1).unsqueeze(0);  // [1,Cout,Tout,H,W] (a view; a caller may copy)
}

void time_case(const ConvCase& c) {
  const at::Tensor ref = via_conv3d(c);
  std::printf("x%-22s w%-18s", c10::str(c.x.sizes()).c_str(), c10::str(c.w.sizes()).c_str());
  for (const auto& [name, f] : std::vector<std::pair<const char*, at::Tensor (*)(const ConvCase&)>>{
           {"conv3d", via_conv3d}, {"mkldnn", via_mkldnn}, {"conv2d", via_conv2d}}) {
    std::vector<double> t;
    at::Tensor y;
    for (int i = 0; i < 11; ++i) t.push_back(seconds([&] { y = f(c); }));
    std::printf("  %s %7.2f ms (%.1e)", name, 1e3 * median(t), rel_l2(y, ref));
  }
  std::printf("\n");
}

// The decode's conv shapes per 4-frame chunk (T includes the 2 cached frames).
int run_convs(const Args&) {
  at::manual_seed(0);
  const std::vector<std::array<int64_t, 6>> shapes = {
      // cin, cout, T, H, W, k
      {48, 64, 3, 6, 10, 3},  {64, 64, 3, 6, 10, 3},  {64, 64, 4, 12, 20, 3}, {64, 64, 6, 24, 40, 3},
      {64, 32, 6, 48, 80, 3}, {32, 32, 6, 48, 80, 3}, {32, 12, 6, 48, 80, 3}, {64, 128, 3, 6, 10, 0},
  };
  for (const auto& s : shapes) {
    const int64_t k = s[5] == 0 ? 1 : 3;  // 0 marks the (3,1,1) time_conv
    ConvCase c;
    c.x = at::randn({1, s[0], s[2], s[3], s[4]});
    c.w = at::randn({s[1], s[0], 3, k, k}) * 0.05;
    c.b = at::randn({s[1]});
    c.pad = {0, (k - 1) / 2, (k - 1) / 2};
    time_case(c);
  }
  return 0;
}

// Training goes through the same convolutions: parameter gradients of a decode-encode round trip with
// oneDNN allowed (the fast path) against oneDNN switched off (at::conv3d's slow_conv3d).
int run_grad(const Args& a) {
  const auto model = make_vae(a);
  at::manual_seed(5);
  const at::Tensor z = at::randn({1, 48, 3, 6, 10});
  const at::Tensor r = at::randn({1, 48, 3, 6, 10});
  auto grads = [&](bool onednn) {
    at::globalContext().setUserEnabledMkldnn(onednn);
    model->zero_grad();
    (model->encode_for_training(model->decode_for_training(z)) * r).sum().backward();
    std::vector<at::Tensor> g;
    for (const auto& p : model->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : at::zeros({1}));
    return g;
  };
  const std::vector<at::Tensor> fast = grads(true), slow = grads(false);
  at::globalContext().setUserEnabledMkldnn(true);
  double worst = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    if (slow[i].norm().item<double>() > 0) worst = std::max(worst, rel_l2(fast[i], slow[i]));
  }
  std::printf("parameter gradients, oneDNN vs slow_conv3d: worst rel-L2 %.3g over %zu tensors\n", worst, fast.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  at::set_num_threads(a.threads);
  at::globalContext().setUserEnabledMkldnn(a.onednn);
  std::printf("threads %d, mkldnn %s\n", at::get_num_threads(), at::hasMKLDNN() ? "yes" : "no");
  if (a.mode == "grad") return run_grad(a);
  c10::InferenceMode guard;
  if (a.mode == "profile") return run_profile(a);
  if (a.mode == "convs") return run_convs(a);
  return run_decode(a);
}
