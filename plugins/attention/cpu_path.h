// The CPU device path: exact block-sparse attention forward/backward in ATen, computed blockwise
// (chunks of query tiles against their gathered KV tiles; never an Sp x Sp matrix). Computes in fp64
// for fp64 inputs and in fp32 otherwise (results cast back to the input dtype). Deterministic.
#pragma once

#include "plugins/attention/device_path.h"

namespace vidgraph::attention {

class CpuPath : public DevicePath {
 public:
  std::string name() const override { return "cpu-aten"; }
  bool supports(int64_t d, int64_t tile_volume, at::ScalarType dtype, std::string* why) const override;
  SparseForwardResult sparse_forward(const SparseForwardArgs& args) override;
  SparseBackwardResult sparse_backward(const SparseBackwardArgs& args) override;
};

// Largest head dim the CPU path accepts.
constexpr int64_t kCpuMaxHeadDim = 256;

// Work is split into blocks of (batch*head) rows x query tiles whose logits and gathered K/V stay
// under this many elements (16M: 64 MiB of fp32 logits).
constexpr int64_t kCpuDefaultBlockElements = int64_t(1) << 24;

// Changes the bound (tests use tiny values to exercise the blocking); <= 0 restores the default.
void set_cpu_block_elements(int64_t elements);

}  // namespace vidgraph::attention
