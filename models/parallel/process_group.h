// A c10d process group for one run: the rank, the world size and the collectives the sequence
// parallelism needs. Built from a TCPStore (rank 0 hosts it) on the master address and port, either
// given explicitly or parsed from torchrun's variables, which the front end reads from its
// environment and passes in (this layer reads no environment). Backend: Gloo on the CPU, NCCL on CUDA
// when this LibTorch has it ("auto" picks by the device of the tensors).
//
// Every collective waits at most `timeout`; a peer that stopped or stalled makes the call throw a
// std::runtime_error naming the collective, this rank and the cause, so no rank hangs forever.
// The c10d calls all live in process_group.cpp, the one file that differs between LibTorch versions.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace vidgraph::parallel {

struct ProcessGroupOptions {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // the GPU index on this machine (LOCAL_RANK)
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string backend = "auto";  // "auto", "gloo" or "nccl"
  c10::Device device = c10::Device(c10::kCPU);  // where the exchanged tensors live
  std::chrono::milliseconds timeout{60000};
  // The launcher already serves the store at the master address (torchrun's agent, which says so
  // with TORCHELASTIC_USE_AGENT_STORE=True): rank 0 joins it as a client too, under a key prefix.
  bool launcher_hosts_store = false;
  // Gloo's network interface (GLOO_SOCKET_IFNAME); empty: 127.0.0.1 for a loopback master address,
  // else Gloo's default device.
  std::string gloo_interface;
};

// Parses torchrun's variables, given by name as the front end read them (RANK, WORLD_SIZE,
// LOCAL_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE, GLOO_SOCKET_IFNAME; missing or
// empty = unset), into `base`; returns nullopt when WORLD_SIZE is unset. Throws
// std::invalid_argument naming the variable when one is present but malformed or out of range.
std::optional<ProcessGroupOptions> process_group_options_from_torchrun(
    const std::map<std::string, std::string>& variables, ProcessGroupOptions base = {});

// The backends this LibTorch build offers ("gloo", "nccl").
std::vector<std::string> available_backends();

class ProcessGroupHandle {
 public:
  // Joins the group: blocks until every rank has connected (or `timeout` passes: then throws).
  static std::shared_ptr<ProcessGroupHandle> create(const ProcessGroupOptions& options);
  ~ProcessGroupHandle();
  ProcessGroupHandle(const ProcessGroupHandle&) = delete;
  ProcessGroupHandle& operator=(const ProcessGroupHandle&) = delete;

  int rank() const { return options_.rank; }
  int world_size() const { return options_.world_size; }
  const std::string& backend() const { return backend_; }
  const ProcessGroupOptions& options() const { return options_; }

  // Equal chunks along dim 0: chunk j of `input` goes to rank j, chunk j of `output` comes from
  // rank j. Both contiguous, same shape, dtype and device.
  void all_to_all(at::Tensor& output, at::Tensor& input);
  // Every rank's `input` (contiguous, same shape everywhere), in rank order.
  std::vector<at::Tensor> all_gather(const at::Tensor& input);
  // In place: the sum over ranks.
  void all_reduce_sum(at::Tensor& tensor);
  // In place: rank `root`'s tensor on every rank.
  void broadcast(at::Tensor& tensor, int root);
  void barrier();

 private:
  struct Impl;
  ProcessGroupHandle(const ProcessGroupOptions& options, std::unique_ptr<Impl> impl, std::string backend);
  ProcessGroupOptions options_;
  std::unique_ptr<Impl> impl_;
  std::string backend_;
};

}  // namespace vidgraph::parallel
