// vidgraph-run run --previews DIR: every step preview (a sampler's per-step estimate, an event with
// max > 0 holding a VIDEO) is saved as a PNG of its first frame in DIR, named <node>_step<NNN>.png
// (node id characters other than letters, digits, '-' and '_' become '_'), through the writers'
// output rules (temporary file, then a no-replace publish; a name already taken gets the next free
// one, <node>_step<NNN>_00002.png, so nothing is ever replaced). The saved path goes into the
// event's `text`, which --json-events prints as "path". Without --previews nothing is written.
// Other previews (Preview Video's clips) are not saved here.
//
// Saving runs on a writer thread of its own, in order, so the sampler does not wait for the PNG
// encode and the synced write (~20 ms on a busy disk, 10% of a demo step); the event is delivered
// after its file is published, hence possibly after later events of the run. flush() waits for the
// queue to drain (before the run's summary).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/events.h"
#include "engine/result.h"

namespace vidgraph::cli {

class PreviewFiles {
 public:
  using Deliver = std::function<void(const engine::Event&)>;

  // DIR made absolute and created (an error names the folder); saved events go to `deliver`.
  static engine::Result<std::unique_ptr<PreviewFiles>> open(const std::string& dir, Deliver deliver);
  ~PreviewFiles();  // flushes

  // True for the events this saves: step previews holding a VIDEO.
  static bool saves(const engine::Event& event);
  // Queues a step preview: saved, then delivered with text = the PNG's path (unchanged when the
  // write failed; the first failure is kept for first_error()).
  void save(const engine::Event& event);
  void flush();
  std::string first_error() const;

 private:
  PreviewFiles(std::string dir, Deliver deliver);
  void run();
  engine::Event saved(const engine::Event& event);

  std::string dir_;
  Deliver deliver_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<engine::Event> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::string first_error_;
  std::thread writer_;
};

}  // namespace vidgraph::cli
