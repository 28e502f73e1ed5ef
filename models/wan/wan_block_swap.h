// Block swap, for GPUs too small for the whole DiT: the last `offload_blocks` blocks keep their
// weights in host memory (pinned when the model runs on a GPU). In a forward, each such block is
// copied to the device just before it runs, the next one on a side stream while the current one
// computes, and its device copy is freed when it is done, so at most two offloaded blocks are on
// the device at once. Results equal the resident model's: only where the weights live changes.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <torch/nn/modules/container/modulelist.h>

namespace vidgraph::wan {

class WanModelImpl;

// Pins the host weights of the offloaded blocks (page-locked memory makes the copies asynchronous).
// No-op when the model runs on the CPU.
void pin_offloaded_blocks(WanModelImpl& model);

// Moves weights so that the last n blocks live in host memory and the others on the model's device
// (the loader builds offloaded blocks on the host directly; this changes a built model).
// Throws std::invalid_argument for n outside 0..num_layers.
void wan_set_offload_blocks(WanModelImpl& model, int64_t n);

// Two experts of one config trade places (experts_on_gpu "active"): `arriving` ends with its last
// `arriving_offload` blocks in host memory and the others on its device, `leaving` with every
// block in host memory. Block by block, arriving's block comes before leaving's goes, so the device
// holds one block more than `arriving` needs and the page-locked memory arriving frees is what
// leaving takes (moving all of leaving first page-locks its whole size anew: 21 s for an A14B
// expert on an H100 machine). Throws std::invalid_argument for mismatched experts or a bad count.
void wan_trade_places(WanModelImpl& leaving, WanModelImpl& arriving, int64_t arriving_offload);

// One forward's streaming of the blocks [first_offloaded, size) to `device`. enter(i) before block
// i runs, leave(i) after; the destructor puts every block back on the host, also when a block threw.
class BlockSwap {
 public:
  BlockSwap(torch::nn::ModuleList& blocks, std::size_t first_offloaded, c10::Device device);
  ~BlockSwap();
  BlockSwap(const BlockSwap&) = delete;
  BlockSwap& operator=(const BlockSwap&) = delete;

  void enter(std::size_t i);  // block i's weights on the device; starts copying block i + 1's
  void leave(std::size_t i);  // block i's weights back to their host copies

 private:
  struct Staged {
    std::vector<at::Tensor> params;  // the block's parameters, whose data is swapped
    std::vector<at::Tensor> host;    // aliases of their host data
    std::vector<at::Tensor> device;  // the device copies
    std::optional<c10::Event> copied;
    bool entered = false;
  };
  void stage(std::size_t i);
  void restore(Staged& s);

  torch::nn::ModuleList blocks_;
  std::size_t first_offloaded_;
  c10::Device device_;
  bool async_;  // GPU: copies on a side stream, ordered by events
  std::optional<c10::Stream> main_, side_;
  std::vector<std::unique_ptr<Staged>> staged_;  // per block index; null when not staged
};

}  // namespace vidgraph::wan
