// Implements rank_broadcast.h.
#include "nodes/common/rank_broadcast.h"

#include <algorithm>

#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>


namespace vidgraph::nodes {

namespace {

struct RankGroup final : engine::RunServices {
  std::shared_ptr<parallel::SequenceParallel> sp;
};

}  // namespace

std::shared_ptr<const engine::RunServices> rank_group(std::shared_ptr<parallel::SequenceParallel> sp) {
  auto group = std::make_shared<RankGroup>();
  group->sp = std::move(sp);
  return group;
}

std::shared_ptr<parallel::SequenceParallel> run_ranks(const engine::RunOptions& options) {
  const auto* group = dynamic_cast<const RankGroup*>(options.services.get());
  return group && group->sp && group->sp->world_size() > 1 ? group->sp : nullptr;
}

bool receives_from_rank0(const engine::RunOptions& options) {
  const auto sp = run_ranks(options);
  return sp && sp->rank() > 0;
}

std::shared_ptr<parallel::SequenceParallel> node_ranks(const engine::NodeContext& ctx) {
  auto sp = run_ranks(ctx.options());
  const std::vector<std::string>& shared = ctx.options().every_rank_nodes;
  const bool shares = std::find(shared.begin(), shared.end(), ctx.node_id()) != shared.end();
  return sp && shares ? sp : nullptr;
}

bool sends_to_other_ranks(const engine::NodeContext& ctx) {
  const auto sp = node_ranks(ctx);
  return sp && sp->rank() == 0;
}

std::optional<std::vector<at::Tensor>> broadcast_from_rank0(parallel::SequenceParallel& sp,
                                                            const std::optional<std::vector<at::Tensor>>& tensors) {
  parallel::ProcessGroupHandle& group = sp.group();
  const c10::Device device = group.options().device;  // NCCL exchanges GPU tensors, Gloo CPU ones
  const auto longs = at::TensorOptions().dtype(at::kLong);
  // Header: [ok, count, rank of each, sizes of each...], its length first.
  std::vector<int64_t> header;
  if (sp.rank() == 0) {
    header = {tensors ? 1 : 0, tensors ? int64_t(tensors->size()) : 0};
    if (tensors) {
      for (const at::Tensor& t : *tensors) header.push_back(t.dim());
      for (const at::Tensor& t : *tensors)
        for (int64_t s : t.sizes()) header.push_back(s);
    }
  }
  at::Tensor length = at::tensor({int64_t(header.size())}, longs).to(device);
  group.broadcast(length, 0);
  const int64_t n = length.cpu().item<int64_t>();
  at::Tensor head = sp.rank() == 0 ? at::tensor(header, longs).to(device) : at::empty({n}, longs.device(device));
  group.broadcast(head, 0);
  const at::Tensor h = head.cpu();
  const int64_t* v = h.data_ptr<int64_t>();
  if (v[0] == 0) return std::nullopt;
  const int64_t count = v[1];
  std::vector<at::Tensor> out;
  int64_t at_size = 2 + count;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int64_t> sizes(v + at_size, v + at_size + v[2 + i]);
    at_size += v[2 + i];
    at::Tensor t = sp.rank() == 0 ? (*tensors)[std::size_t(i)].to(device, at::kFloat).contiguous()
                                   : at::empty(sizes, at::TensorOptions().dtype(at::kFloat).device(device));
    group.broadcast(t, 0);
    out.push_back(t.cpu());
  }
  return out;
}

}  // namespace vidgraph::nodes
