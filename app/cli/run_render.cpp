// Run renderers: tty progress bars, plain lines, JSON lines (see run_render.h).
#include "run_render.h"

#include <chrono>
#include <cmath>
#include <mutex>
#include <string>

namespace vidgraph::cli {

using engine::Event;
using engine::EventKind;
using engine::RunResult;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool shows_log(const Event& e, bool verbose) {
  return verbose || (e.level != engine::LogLevel::Debug && e.level != engine::LogLevel::Trace);
}

std::string log_line(const Event& e) {
  std::string line = std::string("[") + engine::to_string(e.level) + "] ";
  if (!e.node_id.empty()) line += e.node_id + ": ";
  return line + e.text;
}

// Progress of the node that is running now.
struct Active {
  std::string node, type, text;
  std::int64_t value = 0, max = 0;
  Clock::time_point started = Clock::now();
  Clock::time_point last_draw{};
  bool active = false;
};

class TtyRenderer final : public RunRenderer {
 public:
  TtyRenderer(std::FILE* out, bool verbose) : out_(out), verbose_(verbose) {}

  void on_event(const Event& e) override {
    std::lock_guard<std::mutex> lock(mutex_);
    switch (e.kind) {
      case EventKind::RunStarted: std::fprintf(out_, "Running %lld node(s)\n", static_cast<long long>(e.value)); break;
      case EventKind::NodeStarted:
        active_ = Active{e.node_id, e.node_type, {}, 0, 0, Clock::now(), {}, true};
        draw(true);
        break;
      case EventKind::NodeProgress:
        active_.value = e.value;
        active_.max = e.max;
        active_.text = e.text;
        draw(e.value >= e.max);
        break;
      case EventKind::NodeCached: line("  = " + e.node_id + " (" + e.node_type + ") cached"); break;
      case EventKind::NodeBypassed: line("  > " + e.node_id + " (" + e.node_type + ") bypassed"); break;
      case EventKind::NodeFinished:
        active_.active = false;
        line("  \xE2\x9C\x93 " + e.node_id + " (" + e.node_type + ") " + format_duration(e.seconds));
        break;
      case EventKind::NodeFailed:
        active_.active = false;
        line("  \xE2\x9C\x97 " + e.node_id + " (" + e.node_type + ") failed: " + e.text);
        break;
      case EventKind::NodeCancelled:
        active_.active = false;
        line("  - " + e.node_id + " (" + e.node_type + ") cancelled");
        break;
      case EventKind::Log:
        if (shows_log(e, verbose_)) line(log_line(e));
        break;
      default: break;
    }
    std::fflush(out_);
  }

  void on_interrupt() override {
    std::lock_guard<std::mutex> lock(mutex_);
    line("Cancelling (press Ctrl-C again to exit at once)...");
    std::fflush(out_);
  }

  void finish(const RunResult& result, int) override {
    std::lock_guard<std::mutex> lock(mutex_);
    clear();
    print_run_summary(out_, result);
    std::fflush(out_);
  }

 private:
  void clear() {
    if (drawn_) std::fputs("\r\033[K", out_);
    drawn_ = false;
  }
  // Prints a permanent line above the bar, then redraws the bar.
  void line(const std::string& text) {
    clear();
    std::fprintf(out_, "%s\n", text.c_str());
    if (active_.active) draw(true);
  }
  void draw(bool force) {
    const auto now = Clock::now();
    if (!force && now - active_.last_draw < std::chrono::milliseconds(100)) return;
    active_.last_draw = now;
    clear();
    std::string bar = "  " + active_.node + " [";
    const int width = 30;
    const double frac = active_.max > 0 ? std::min(1.0, double(active_.value) / double(active_.max)) : 0.0;
    const int filled = static_cast<int>(std::lround(frac * width));
    bar += std::string(static_cast<std::size_t>(filled), '#') + std::string(static_cast<std::size_t>(width - filled), '.');
    bar += "]";
    if (active_.max > 0) {
      const double elapsed = since(active_.started);
      const double rate = elapsed > 0 ? double(active_.value) / elapsed : 0.0;
      char buf[160];
      std::snprintf(buf, sizeof buf, " %lld/%lld  %.2f/s", static_cast<long long>(active_.value),
                    static_cast<long long>(active_.max), rate);
      bar += buf;
      if (rate > 0 && active_.value < active_.max) {
        bar += "  ETA " + format_duration(double(active_.max - active_.value) / rate);
      }
    } else {
      bar += " " + format_duration(since(active_.started));
    }
    if (!active_.text.empty()) bar += "  " + active_.text;
    std::fputs(bar.c_str(), out_);
    drawn_ = true;
  }

  std::FILE* out_;
  bool verbose_;
  std::mutex mutex_;
  Active active_;
  bool drawn_ = false;
};

class PlainRenderer final : public RunRenderer {
 public:
  PlainRenderer(std::FILE* out, bool verbose) : out_(out), verbose_(verbose) {}

  void on_event(const Event& e) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string who = "node " + e.node_id + " (" + e.node_type + ")";
    switch (e.kind) {
      case EventKind::RunStarted: print("run " + std::to_string(e.run_id) + ": " + std::to_string(e.value) + " node(s) planned"); break;
      case EventKind::NodeStarted:
        last_decile_ = -1;
        print(who + ": started");
        break;
      case EventKind::NodeProgress: progress(e); break;
      case EventKind::NodeCached: print(who + ": cached"); break;
      case EventKind::NodeBypassed: print(who + ": bypassed"); break;
      case EventKind::NodeFinished: print(who + ": finished in " + format_duration(e.seconds)); break;
      case EventKind::NodeFailed: print(who + ": FAILED: " + e.text); break;
      case EventKind::NodeCancelled: print(who + ": cancelled"); break;
      case EventKind::Log:
        if (shows_log(e, verbose_)) print(log_line(e));
        break;
      case EventKind::RunFinished:
        print("run " + std::to_string(e.run_id) + ": " + engine::to_string(e.status) + " in " +
              format_duration(e.seconds));
        break;
      default: break;
    }
  }
  void on_interrupt() override {
    std::lock_guard<std::mutex> lock(mutex_);
    print("cancelling (Ctrl-C again exits at once)");
  }
  void finish(const RunResult& result, int) override {
    std::lock_guard<std::mutex> lock(mutex_);
    print_run_summary(out_, result);
    std::fflush(out_);
  }

 private:
  void print(const std::string& s) {
    std::fprintf(out_, "%s\n", s.c_str());
    std::fflush(out_);
  }
  void progress(const Event& e) {
    const int decile = e.max > 0 ? static_cast<int>(10 * e.value / e.max) : -1;
    if (decile == last_decile_ && e.value < e.max) return;
    last_decile_ = decile;
    print("node " + e.node_id + ": " + std::to_string(e.value) + "/" + std::to_string(e.max) +
          (e.text.empty() ? "" : " " + e.text));
  }

  std::FILE* out_;
  bool verbose_;
  std::mutex mutex_;
  int last_decile_ = -1;
};

class JsonRenderer final : public RunRenderer {
 public:
  JsonRenderer(std::FILE* out, bool verbose, nlohmann::json tag) : out_(out), verbose_(verbose), tag_(std::move(tag)) {}
  void on_event(const Event& e) override {
    if (e.kind == EventKind::Log && !shows_log(e, verbose_)) return;
    write(engine::event_to_json(e));
  }
  void on_interrupt() override { write(nlohmann::json{{"event", "interrupt"}}); }
  void finish(const RunResult& result, int exit_code) override { write(run_summary_json(result, exit_code)); }

 private:
  void write(nlohmann::json j) {
    for (const auto& [key, value] : tag_.items()) j[key] = value;
    const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::lock_guard<std::mutex> lock(mutex_);
    std::fprintf(out_, "%s\n", text.c_str());
    std::fflush(out_);
  }
  std::FILE* out_;
  bool verbose_;
  nlohmann::json tag_;
  std::mutex mutex_;
};

}  // namespace

std::unique_ptr<RunRenderer> make_tty_renderer(std::FILE* out, bool verbose) {
  return std::make_unique<TtyRenderer>(out, verbose);
}
std::unique_ptr<RunRenderer> make_plain_renderer(std::FILE* out, bool verbose) {
  return std::make_unique<PlainRenderer>(out, verbose);
}
std::unique_ptr<RunRenderer> make_json_renderer(std::FILE* out, bool verbose, const nlohmann::json& tag) {
  return std::make_unique<JsonRenderer>(out, verbose, tag.is_object() ? tag : nlohmann::json::object());
}

std::string format_duration(double seconds) {
  char buf[64];
  if (seconds < 60.0) {
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  } else {
    const long total = static_cast<long>(std::lround(seconds));
    if (total < 3600) {
      std::snprintf(buf, sizeof buf, "%ld:%02ld", total / 60, total % 60);
    } else {
      std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", total / 3600, (total / 60) % 60, total % 60);
    }
  }
  return buf;
}

void print_run_summary(std::FILE* out, const RunResult& result) {
  if (!result.nodes.empty()) {
    std::size_t w_id = 4, w_type = 4;
    for (const auto& n : result.nodes) {
      w_id = std::max(w_id, n.node_id.size());
      w_type = std::max(w_type, n.node_type.size());
    }
    std::fprintf(out, "\nSummary: %s in %s\n", engine::to_string(result.status), format_duration(result.seconds).c_str());
    std::fprintf(out, "  %-*s  %-*s  %-9s  %s\n", int(w_id), "node", int(w_type), "type", "outcome", "time");
    for (const auto& n : result.nodes) {
      const bool timed = n.outcome != engine::NodeOutcome::Cached && n.outcome != engine::NodeOutcome::Pending &&
                         n.outcome != engine::NodeOutcome::Bypassed;
      std::fprintf(out, "  %-*s  %-*s  %-9s  %s\n", int(w_id), n.node_id.c_str(), int(w_type), n.node_type.c_str(),
                   engine::to_string(n.outcome), timed ? format_duration(n.seconds).c_str() : "-");
    }
  }
  for (const auto& w : result.warnings) std::fprintf(stderr, "warning: %s\n", w.to_string().c_str());
  for (const auto& e : result.errors) std::fprintf(stderr, "error: %s\n", e.to_string().c_str());
}

nlohmann::json run_summary_json(const RunResult& result, int exit_code) {
  auto errors = [](const std::vector<engine::Error>& list) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : list) arr.push_back({{"node", e.node_id}, {"message", e.message}});
    return arr;
  };
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : result.nodes) {
    nodes.push_back({{"node", n.node_id}, {"type", n.node_type}, {"outcome", engine::to_string(n.outcome)},
                     {"seconds", n.seconds}});
  }
  return {{"event", "summary"}, {"run_id", result.run_id}, {"status", engine::to_string(result.status)},
          {"exit_code", exit_code}, {"seconds", result.seconds}, {"errors", errors(result.errors)},
          {"warnings", errors(result.warnings)}, {"nodes", nodes}};
}

}  // namespace vidgraph::cli
