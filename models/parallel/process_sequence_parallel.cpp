#include "models/parallel/process_sequence_parallel.h"

#include <mutex>
#include <utility>

namespace vidgraph::parallel {
namespace {

std::mutex& mutex() {
  static std::mutex m;
  return m;
}

std::shared_ptr<SequenceParallel>& slot() {
  static std::shared_ptr<SequenceParallel> sp;
  return sp;
}

}  // namespace

void set_process_sequence_parallel(std::shared_ptr<SequenceParallel> sp) {
  std::lock_guard<std::mutex> lock(mutex());
  slot() = std::move(sp);
}

std::shared_ptr<SequenceParallel> process_sequence_parallel() {
  std::lock_guard<std::mutex> lock(mutex());
  return slot();
}

}  // namespace vidgraph::parallel
