#include "train_fixtures.h"

#include <filesystem>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/sin.h>

#include "models/wan/wan_tiny.h"

#include <QtCore/QTemporaryDir>

namespace train_test {

using namespace vidgraph;

wan::WanConfig small_config() {
  wan::WanConfig c = wan::wan_tiny_config();
  c.in_dim = 4;
  c.out_dim = 4;
  c.text_len = 8;
  c.text_dim = 16;
  return c;
}

at::Tensor randn_seeded(at::IntArrayRef shape, uint64_t seed, at::ScalarType dtype) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randn(shape, g, at::TensorOptions().dtype(at::kFloat)).to(dtype);
}

train::TrainingSample make_sample(int index, int64_t frames, bool image_to_video) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  at::Tensor c = at::arange(4, f32).view({4, 1, 1, 1});
  at::Tensor f = at::arange(frames, f32).view({1, frames, 1, 1});
  at::Tensor y = at::arange(8, f32).view({1, 1, 8, 1});
  at::Tensor x = at::arange(8, f32).view({1, 1, 1, 8});
  const double phase = 1.3 * index;
  train::TrainingSample s;
  s.latent = at::sin(c * 0.7 + f * 0.5 + y * 0.4 + x * 0.3 + phase) * 0.8;  // [4, F, 8, 8]
  s.context = randn_seeded({3, 16}, 100 + index);
  s.image_to_video = image_to_video;
  s.name = "synthetic " + std::to_string(index);
  return s;
}

std::vector<train::TrainingSample> make_samples(int count, int64_t frames) {
  std::vector<train::TrainingSample> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(make_sample(i, frames, i % 2 == 1));
  }
  return out;
}

plugin::ParamMap small_tiles() {
  return {{"tile", std::vector<int64_t>{2, 2, 2}}};
}

double rel_err(const at::Tensor& a, const at::Tensor& b) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  return (ad - bd).norm().item<double>() / std::max(bd.norm().item<double>(), 1e-30);
}

std::string temp_dir(const std::string& name) {
  // QTemporaryDir removes the tree at exit; every call gets a fresh folder.
  static QTemporaryDir root;
  static int counter = 0;
  const auto dir = std::filesystem::path(root.path().toStdString()) / (name + "-" + std::to_string(++counter));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace train_test
