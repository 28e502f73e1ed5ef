// Implements run_previews.h.
#include "run_previews.h"

#include <cctype>
#include <cstdio>
#include <filesystem>

#include "nodes/media/image_io.h"
#include "nodes/output_path.h"
#include "nodes/value_types.h"

namespace vidgraph::cli {

namespace fs = std::filesystem;

namespace {

// A node id as a file name part: letters, digits, '-' and '_' kept, anything else '_'.
std::string file_part(const std::string& id) {
  std::string out = id.empty() ? "node" : id;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  return out;
}

}  // namespace

engine::Result<std::unique_ptr<PreviewFiles>> PreviewFiles::open(const std::string& dir, Deliver deliver) {
  std::error_code ec;
  const fs::path path = fs::absolute(dir, ec).lexically_normal();
  if (!ec) fs::create_directories(path, ec);
  if (ec || !fs::is_directory(path)) {
    return engine::make_error("cannot use preview folder '" + path.string() + "'" + (ec ? ": " + ec.message() : "") +
                              "; check --previews");
  }
  return std::unique_ptr<PreviewFiles>(new PreviewFiles(path.string(), std::move(deliver)));
}

PreviewFiles::PreviewFiles(std::string dir, Deliver deliver)
    : dir_(std::move(dir)), deliver_(std::move(deliver)), writer_([this] { run(); }) {}

PreviewFiles::~PreviewFiles() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  writer_.join();  // the writer drains the queue before it stops
}

bool PreviewFiles::saves(const engine::Event& event) {
  const auto* video = engine::value_as<nodes::Video>(event.preview);
  return event.kind == engine::EventKind::Preview && event.max > 0 && video && video->frames.consistent();
}

void PreviewFiles::save(const engine::Event& event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(event);
  }
  changed_.notify_all();
}

void PreviewFiles::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void PreviewFiles::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and nothing left
    const engine::Event event = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    deliver_(saved(event));
    lock.lock();
    busy_ = false;
    changed_.notify_all();
  }
}

engine::Event PreviewFiles::saved(const engine::Event& event) {
  const nodes::Frames& f = engine::value_as<nodes::Video>(event.preview)->frames;
  nodes::Image image;
  image.width = f.width;
  image.height = f.height;
  image.rgb.assign(f.frame(0), f.frame(0) + f.frame_bytes());
  std::string png, error;
  nodes::Published published;
  if (nodes::media::encode_png(image, &png, &error)) {
    char name[64];
    std::snprintf(name, sizeof name, "_step%03lld.png", static_cast<long long>(event.value));
    const nodes::OutputTarget target{(fs::path(dir_) / (file_part(event.node_id) + name)).string(), nodes::Naming::Increment,
                                     nodes::OutputKind::Png};
    published = nodes::write_file_atomically(target, png.data(), png.size());
    error = published.error;
  }
  engine::Event out = event;
  if (error.empty()) {
    out.text = published.path;
  } else {
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_error_.empty()) first_error_ = "could not save the preview of '" + event.node_id + "': " + error;
  }
  return out;
}

std::string PreviewFiles::first_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return first_error_;
}

}  // namespace vidgraph::cli
