#include "models/wan/wan_block_swap.h"

#include <stdexcept>
#include <string>

#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include "models/wan/wan_model.h"

namespace vidgraph::wan {

void pin_offloaded_blocks(WanModelImpl& model) {
  if (model.device().is_cpu()) {
    return;
  }
  const std::size_t n = model.blocks->size();
  for (std::size_t i = n - static_cast<std::size_t>(model.options.offload_blocks); i < n; ++i) {
    for (at::Tensor& p : model.blocks->ptr(i)->parameters()) {
      if (!p.is_pinned()) {
        p.set_data(p.pin_memory());
      }
    }
  }
}

namespace {

void check_offload_count(const WanModelImpl& model, int64_t n) {
  const int64_t layers = static_cast<int64_t>(model.blocks->size());
  if (n < 0 || n > layers) {
    throw std::invalid_argument("Cannot offload " + std::to_string(n) + " blocks: the Wan DiT has " +
                                std::to_string(layers) + "; choose 0 to " + std::to_string(layers) + ".");
  }
}

// Block i's weights to `target`; into page-locked memory when `pin` and the target is the host.
void move_block(WanModelImpl& model, int64_t i, c10::Device target, bool pin) {
  for (at::Tensor& p : model.blocks->ptr(i)->parameters()) {
    if (p.device() == target) continue;
    if (target.is_cpu() && pin) {  // straight into page-locked memory: one copy, not two
      at::Tensor host = at::empty(p.sizes(), p.options().device(target).pinned_memory(true));
      p.set_data(host.copy_(p));
    } else {
      p.set_data(p.to(target));
    }
  }
}

}  // namespace

void wan_set_offload_blocks(WanModelImpl& model, int64_t n) {
  check_offload_count(model, n);
  const int64_t layers = static_cast<int64_t>(model.blocks->size());
  const bool pin = !model.device().is_cpu();
  c10::NoGradGuard no_grad;  // moving weights is no computation to record
  for (int64_t i = 0; i < layers; ++i) {
    move_block(model, i, i >= layers - n ? c10::Device(c10::kCPU) : model.device(), pin);
  }
  model.options.offload_blocks = n;
  pin_offloaded_blocks(model);
}

void wan_trade_places(WanModelImpl& leaving, WanModelImpl& arriving, int64_t arriving_offload) {
  check_offload_count(arriving, arriving_offload);
  const int64_t layers = static_cast<int64_t>(arriving.blocks->size());
  if (static_cast<int64_t>(leaving.blocks->size()) != layers || leaving.device() != arriving.device()) {
    throw std::invalid_argument("Two experts trade places only with as many blocks on one device (" +
                                std::to_string(leaving.blocks->size()) + " and " + std::to_string(layers) + ").");
  }
  const bool pin = !arriving.device().is_cpu();
  c10::NoGradGuard no_grad;
  for (int64_t i = 0; i < layers; ++i) {
    move_block(arriving, i, i >= layers - arriving_offload ? c10::Device(c10::kCPU) : arriving.device(), pin);
    move_block(leaving, i, c10::Device(c10::kCPU), pin);
  }
  arriving.options.offload_blocks = arriving_offload;
  leaving.options.offload_blocks = layers;
  pin_offloaded_blocks(arriving);
  pin_offloaded_blocks(leaving);
}

BlockSwap::BlockSwap(torch::nn::ModuleList& blocks, std::size_t first_offloaded, c10::Device device)
    : blocks_(blocks), first_offloaded_(first_offloaded), device_(device), async_(!device.is_cpu()),
      staged_(blocks->size()) {
  if (async_) {
    const c10::impl::VirtualGuardImpl impl(device.type());
    main_ = impl.getStream(device);
    side_ = impl.getStreamFromGlobalPool(device);
  }
  stage(first_offloaded_);  // overlaps with the resident blocks before it
}

BlockSwap::~BlockSwap() {
  for (auto& s : staged_) {
    if (s) {
      restore(*s);
    }
  }
}

void BlockSwap::stage(std::size_t i) {
  if (i < first_offloaded_ || i >= staged_.size() || staged_[i]) {
    return;
  }
  auto s = std::make_unique<Staged>();
  for (const at::Tensor& p : blocks_->ptr(i)->parameters()) {
    s->params.push_back(p);
    s->host.push_back(p.detach());
    // Allocated on the main stream, so freeing it after the block ran is ordered there.
    s->device.push_back(at::empty(p.sizes(), p.options().device(device_).pinned_memory(false)));
  }
  if (async_) {
    // The new buffers may reuse memory that work already queued on the main stream still uses.
    c10::Event queued(device_.type());
    queued.record(*main_);
    queued.block(*side_);
    const c10::StreamGuard on_side(*side_);
    for (std::size_t k = 0; k < s->params.size(); ++k) {
      s->device[k].copy_(s->host[k], /*non_blocking=*/true);
    }
    s->copied.emplace(device_.type());
    s->copied->record(*side_);
  } else {
    for (std::size_t k = 0; k < s->params.size(); ++k) {
      s->device[k].copy_(s->host[k]);
    }
  }
  staged_[i] = std::move(s);
}

void BlockSwap::enter(std::size_t i) {
  if (i < first_offloaded_) {
    return;
  }
  stage(i);
  Staged& s = *staged_[i];
  if (s.copied) {
    s.copied->block(*main_);
  }
  for (std::size_t k = 0; k < s.params.size(); ++k) {
    s.params[k].set_data(s.device[k]);
  }
  s.entered = true;
  stage(i + 1);
}

void BlockSwap::leave(std::size_t i) {
  if (i < first_offloaded_ || !staged_[i]) {
    return;
  }
  restore(*staged_[i]);
  staged_[i].reset();
}

void BlockSwap::restore(Staged& s) {
  if (s.copied && !s.entered) {
    s.copied->block(*main_);  // a copy still in flight must land before its buffers are reused
  }
  if (s.entered) {
    for (std::size_t k = 0; k < s.params.size(); ++k) {
      s.params[k].set_data(s.host[k]);
    }
  }
}

}  // namespace vidgraph::wan
