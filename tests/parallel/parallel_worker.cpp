// One rank of the tests/parallel suite: joins a real Gloo process group over a TCPStore on
// loopback and runs the DiT case sequence-parallel.
//   parallel_worker MODE RANK WORLD PORT OUT_DIR TIMEOUT_S
// MODE dit:   the case for full, vsa and sla_star; rank 0 writes OUT_DIR/<method>.safetensors
//             (out, x_grad, param_grads), then OUT_DIR/heads_error.txt with the error a model of
//             WORLD + 1 heads gives.
// MODE heads40: the case with 40 heads and full attention; rank 0 writes OUT_DIR/heads40.safetensors.
// MODE fail:  rank 1 leaves right after joining; the others run the forward, which must fail
//             within the timeout; they print the error and exit 1.
// MODE store: hosts a TCPStore on PORT, as torchrun's agent does, until its stdin closes.
// MODE agent: a rank as torchrun starts it with its agent's store: the options come from the
//             environment (WORLD_SIZE, RANK, MASTER_PORT, TORCHELASTIC_USE_AGENT_STORE=True; the
//             arguments' RANK and WORLD are ignored); runs the case with full attention, rank 0 writes
//             OUT_DIR/full.safetensors.
// MODE train: the training case with vsa, without and with gradient checkpointing; rank 0 writes
//             OUT_DIR/train-<checkpointing 0|1>.safetensors (losses, trained). Then the case with
//             rank 1 cancelling before step 2: every rank writes OUT_DIR/cancel-<rank>.txt
//             ("<cancelled 0|1> <steps done> <checkpoint path or ->"), checkpoints in OUT_DIR/ckpt.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "engine/environment.h"
#include "models/io/safetensors.h"
#include "parallel_case.h"
#include "plugins/api/plugin_loader.h"

using namespace vidgraph;

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: parallel_worker MODE RANK WORLD PORT OUT_DIR TIMEOUT_S\n");
    return 2;
  }
  const std::string mode = argv[1], out_dir = argv[5];
  parallel::ProcessGroupOptions o;
  o.rank = std::atoi(argv[2]);
  o.world_size = std::atoi(argv[3]);
  o.master_port = std::atoi(argv[4]);
  o.backend = "gloo";
  o.timeout = std::chrono::milliseconds(std::atoi(argv[6]) * 1000);
  try {
    if (mode == "store") {
      c10d::TCPStoreOptions so;
      so.port = static_cast<std::uint16_t>(o.master_port);
      so.isServer = true;
      so.waitWorkers = false;
      so.timeout = o.timeout;
      const c10d::TCPStore store("127.0.0.1", so);
      while (std::getchar() != EOF) {
      }
      return 0;
    }
    if (mode == "agent") {
      o = parallel::process_group_options_from_torchrun(engine::read_environment().torchrun, o).value();
      o.backend = "gloo";
    }
    parallel::SequenceParallel sp(parallel::ProcessGroupHandle::create(o));
    if (mode == "fail") {
      if (sp.rank() == 1) {
        std::fprintf(stderr, "rank 1 stops on purpose\n");
        return 3;
      }
      parallel_case::run("full", nullptr, &sp);
      std::fprintf(stderr, "rank %d: the forward did not fail\n", sp.rank());
      return 0;
    }
    if (mode == "heads40") {  // the A14B's 40 heads (full attention: no plugin needed)
      const parallel_case::Result r = parallel_case::run("full", nullptr, &sp, 40);
      if (sp.rank() == 0) {
        model_io::save_safetensors(out_dir + "/heads40.safetensors",
                                   {{"out", r.out}, {"x_grad", r.x_grad}, {"param_grads", r.param_grads}});
      }
      sp.group().barrier();
      return 0;
    }
    if (mode == "agent") {
      const parallel_case::Result r = parallel_case::run("full", nullptr, &sp);
      if (sp.rank() == 0) {
        model_io::save_safetensors(out_dir + "/full.safetensors",
                                   {{"out", r.out}, {"x_grad", r.x_grad}, {"param_grads", r.param_grads}});
      }
      sp.group().barrier();
      return 0;
    }
    auto report = plugin::load_attention_plugin_from({VIDGRAPH_BINARY_DIR "/lib/vidgraph/plugins"});
    if (report.plugin == nullptr) throw std::runtime_error(report.message());
    if (mode == "train") {
      for (const bool checkpointing : {false, true}) {
        const auto r = parallel_case::train("vsa", &report.plugin->backend(), &sp, checkpointing);
        if (sp.rank() == 0) {
          model_io::save_safetensors(out_dir + "/train-" + std::to_string(int(checkpointing)) + ".safetensors",
                                     {{"losses", r.losses}, {"trained", r.trained}});
        }
      }
      const auto r = parallel_case::train("vsa", &report.plugin->backend(), &sp, false, 2, out_dir + "/ckpt");
      std::ofstream(out_dir + "/cancel-" + std::to_string(sp.rank()) + ".txt")
          << int(r.cancelled) << " " << r.losses.numel() << " " << (r.checkpoint.empty() ? "-" : r.checkpoint);
      sp.group().barrier();
      return 0;
    }
    for (const std::string method : {"full", "vsa", "sla_star"}) {
      const parallel_case::Result r = parallel_case::run(method, &report.plugin->backend(), &sp);
      if (sp.rank() == 0) {
        model_io::save_safetensors(out_dir + "/" + method + ".safetensors",
                                   {{"out", r.out}, {"x_grad", r.x_grad}, {"param_grads", r.param_grads}});
      }
    }
    std::string heads_error = "no error";
    try {
      parallel_case::run("full", nullptr, &sp, o.world_size + 1);
    } catch (const std::exception& e) {
      heads_error = e.what();
    }
    if (sp.rank() == 0) std::ofstream(out_dir + "/heads_error.txt") << heads_error;
    sp.group().barrier();  // rank 0 hosts the store: leave together
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", o.rank, e.what());
    return 1;
  }
  return 0;
}
