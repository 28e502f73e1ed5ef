// The only file that talks to c10d. LibTorch 1.x: ProcessGroupGloo/NCCL derive from ProcessGroup;
// 2.x: from Backend, with the same collective signatures used here.
#include "models/parallel/process_group.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <utility>

#include <ATen/ops/empty_like.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#if VIDGRAPH_WITH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if VIDGRAPH_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

namespace vidgraph::parallel {
namespace {

#if TORCH_VERSION_MAJOR >= 2
using Collectives = c10d::Backend;
#else
using Collectives = c10d::ProcessGroup;
#endif

// The value of the variable `name`, or "" when it is not among `variables`.
std::string variable(const std::map<std::string, std::string>& variables, const char* name) {
  const auto it = variables.find(name);
  return it == variables.end() ? std::string() : it->second;
}

// Parses a whole decimal integer in [lo, hi] from the environment variable `name`.
std::optional<long> env_int(const std::map<std::string, std::string>& variables, const char* name, long lo,
                            long hi) {
  const std::string value_text = variable(variables, name);
  if (value_text.empty()) return std::nullopt;
  const char* text = value_text.c_str();
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < lo || value > hi) {
    throw std::invalid_argument(std::string("The environment variable ") + name + "='" + text +
                                "' is not a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "].");
  }
  return value;
}

bool is_loopback(const std::string& addr) {
  return addr == "127.0.0.1" || addr == "localhost" || addr == "::1";
}

std::string pick_backend(const ProcessGroupOptions& o) {
  const auto have = available_backends();
  auto offered = [&](const std::string& b) { return std::find(have.begin(), have.end(), b) != have.end(); };
  std::string b = o.backend;
  if (b == "auto") b = o.device.is_cuda() && offered("nccl") ? "nccl" : "gloo";
  if (b != "gloo" && b != "nccl") {
    throw std::invalid_argument("Unknown distributed backend '" + o.backend + "': use auto, gloo or nccl.");
  }
  if (!offered(b)) {
    throw std::invalid_argument("This LibTorch build has no " + b + " backend for the process group; use " +
                                (b == "nccl" ? std::string("gloo") : std::string("nccl")) + " instead.");
  }
  return b;
}

}  // namespace

std::optional<ProcessGroupOptions> process_group_options_from_torchrun(
    const std::map<std::string, std::string>& variables, ProcessGroupOptions base) {
  const auto world = env_int(variables, "WORLD_SIZE", 1, 1 << 20);
  if (!world) return std::nullopt;
  base.world_size = static_cast<int>(*world);
  base.rank = static_cast<int>(env_int(variables, "RANK", 0, *world - 1).value_or(0));
  base.local_rank = static_cast<int>(env_int(variables, "LOCAL_RANK", 0, 1 << 20).value_or(base.rank));
  if (const std::string addr = variable(variables, "MASTER_ADDR"); !addr.empty()) base.master_addr = addr;
  base.master_port = static_cast<int>(env_int(variables, "MASTER_PORT", 1, 65535).value_or(base.master_port));
  base.launcher_hosts_store = variable(variables, "TORCHELASTIC_USE_AGENT_STORE") == "True";
  if (const std::string iface = variable(variables, "GLOO_SOCKET_IFNAME"); !iface.empty()) base.gloo_interface = iface;
  return base;
}

std::vector<std::string> available_backends() {
  std::vector<std::string> out;
#if VIDGRAPH_WITH_GLOO
  out.push_back("gloo");
#endif
#if VIDGRAPH_WITH_NCCL
  out.push_back("nccl");
#endif
  return out;
}

struct ProcessGroupHandle::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<Collectives> group;
  std::chrono::milliseconds timeout;
  int rank = 0, world = 1;

  // Waits for `work`; any failure (a peer gone, a timeout) becomes one sentence with the context.
  void wait(const char* what, const std::function<c10::intrusive_ptr<c10d::Work>()>& start) const {
    try {
      start()->wait(timeout);
    } catch (const c10::Error& e) {  // without LibTorch's C++ backtrace
      fail(what, e.what_without_backtrace());
    } catch (const std::exception& e) {
      fail(what, e.what());
    }
  }

  [[noreturn]] void fail(const char* what, const std::string& cause) const {
    throw std::runtime_error(std::string("The ") + what + " on rank " + std::to_string(rank) + " of " +
                             std::to_string(world) + " failed: " + cause + " (a rank that stops, or does not answer " +
                             "within " + std::to_string((timeout.count() + 999) / 1000) +
                             " s, fails every rank's collectives).");
  }
};

std::shared_ptr<ProcessGroupHandle> ProcessGroupHandle::create(const ProcessGroupOptions& o) {
  if (o.world_size < 1 || o.rank < 0 || o.rank >= o.world_size) {
    throw std::invalid_argument("Process group: rank " + std::to_string(o.rank) + " is outside a world of " +
                                std::to_string(o.world_size) + " processes.");
  }
  if (o.master_port < 1 || o.master_port > 65535) {
    throw std::invalid_argument("Process group: master port " + std::to_string(o.master_port) +
                                " is not in [1, 65535].");
  }
  const std::string backend = pick_backend(o);
  auto impl = std::make_unique<Impl>();
  impl->timeout = o.timeout;
  impl->rank = o.rank;
  impl->world = o.world_size;
  const std::string where = o.master_addr + ":" + std::to_string(o.master_port);
  try {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(o.master_port);
    so.isServer = o.rank == 0 && !o.launcher_hosts_store;
    so.numWorkers = static_cast<std::size_t>(o.world_size);
    so.waitWorkers = true;
    so.timeout = o.timeout;
    impl->store = c10::make_intrusive<c10d::TCPStore>(o.master_addr, so);
    if (o.launcher_hosts_store) {  // the launcher's own keys live there too
      impl->store = c10::make_intrusive<c10d::PrefixStore>("vidgraph", impl->store);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error("Rank " + std::to_string(o.rank) + " could not " +
                             (o.rank == 0 ? "open" : "reach") + " the process-group store at " + where + " (" +
                             e.what() + "); check the master address and port, or pick a free port.");
  }
  try {
#if VIDGRAPH_WITH_NCCL
    if (backend == "nccl") {
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = o.timeout;
      impl->group = c10::make_intrusive<c10d::ProcessGroupNCCL>(impl->store, o.rank, o.world_size, opts);
    }
#endif
#if VIDGRAPH_WITH_GLOO
    if (backend == "gloo") {
      auto opts = c10d::ProcessGroupGloo::Options::create(o.timeout);
      if (!o.gloo_interface.empty()) {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(o.gloo_interface));
      } else if (is_loopback(o.master_addr)) {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      } else {
        opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      }
      impl->group = c10::make_intrusive<c10d::ProcessGroupGloo>(impl->store, o.rank, o.world_size, opts);
    }
#endif
  } catch (const std::exception& e) {
    throw std::runtime_error("Rank " + std::to_string(o.rank) + " could not join the " + backend +
                             " process group at " + where + " (" + e.what() + ").");
  }
  if (!impl->group) {
    throw std::invalid_argument("This LibTorch build has no " + backend + " backend for the process group.");
  }
  return std::shared_ptr<ProcessGroupHandle>(new ProcessGroupHandle(o, std::move(impl), backend));
}

ProcessGroupHandle::ProcessGroupHandle(const ProcessGroupOptions& options, std::unique_ptr<Impl> impl,
                                       std::string backend)
    : options_(options), impl_(std::move(impl)), backend_(std::move(backend)) {}

ProcessGroupHandle::~ProcessGroupHandle() = default;

void ProcessGroupHandle::all_to_all(at::Tensor& output, at::Tensor& input) {
  std::vector<int64_t> even;  // empty split sizes = equal chunks
  impl_->wait("all-to-all", [&] {
    return impl_->group->alltoall_base(output, input, even, even, c10d::AllToAllOptions());
  });
}

std::vector<at::Tensor> ProcessGroupHandle::all_gather(const at::Tensor& input) {
  std::vector<at::Tensor> in{input};
  std::vector<std::vector<at::Tensor>> out(1);
  {
    // Gloo copies into the outputs on its own thread, outside any InferenceMode of the caller, and
    // an inference tensor may not be written there: the outputs are ordinary tensors.
    c10::InferenceMode ordinary(false);
    for (int r = 0; r < world_size(); ++r) out[0].push_back(at::empty_like(input));
  }
  impl_->wait("all-gather", [&] { return impl_->group->allgather(out, in, c10d::AllgatherOptions()); });
  return out[0];
}

void ProcessGroupHandle::all_reduce_sum(at::Tensor& tensor) {
  std::vector<at::Tensor> t{tensor};
  impl_->wait("all-reduce", [&] { return impl_->group->allreduce(t, c10d::AllreduceOptions()); });
}

void ProcessGroupHandle::broadcast(at::Tensor& tensor, int root) {
  std::vector<at::Tensor> t{tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  impl_->wait("broadcast", [&] { return impl_->group->broadcast(t, opts); });
}

void ProcessGroupHandle::barrier() {
  impl_->wait("barrier", [&] { return impl_->group->barrier(c10d::BarrierOptions()); });
}

}  // namespace vidgraph::parallel
