// Implements checkpoint_manifest.h: a manifest is kept while one stat of each of its files and
// folders says nothing changed; only a new one lists folders, parses an index or reads headers.
// The last few are kept, as tensor_file_cache.cpp keeps files.
#include "models/io/checkpoint_manifest.h"

#include <list>
#include <mutex>
#include <tuple>

#include "models/io/file_kind.h"
#include "models/io/model_file_info.h"
#include "models/io/tensor_file.h"

namespace vidgraph::model_io {
namespace {

// A run's manifest and a few earlier ones (a GUI switching between two models keeps both).
constexpr size_t kKeptManifests = 4;

std::mutex g_mutex;
std::list<std::shared_ptr<const CheckpointManifest>> g_manifests;  // most recently used first

using Identities = std::vector<std::pair<std::string, FileIdentity>>;

void add_identities(const std::vector<std::string>& paths, Identities& out) {
  for (const std::string& path : paths) out.emplace_back(path, file_identity(path));
}

bool unchanged(const Identities& identities) {
  for (const auto& [path, identity] : identities) {
    if (file_identity(path) != identity) return false;
  }
  return true;
}

// The parts of `paths` with their files, the tokenizer, and every file's and folder's identity
// (taken just after the listings: a folder changed while being listed is seen at its next change).
CheckpointManifest resolve(const CheckpointPaths& paths) {
  CheckpointManifest m;
  m.given = paths;
  for (const auto& [kind, role, path] : {std::tuple{ModelKind::Dit, kRoleDit, &paths.dit},
                                         std::tuple{ModelKind::Dit, kRoleLowNoiseDit, &paths.low_noise_dit},
                                         std::tuple{ModelKind::Vae, kRoleVae, &paths.vae},
                                         std::tuple{ModelKind::TextEncoder, kRoleTextEncoder, &paths.text_encoder}}) {
    if (path->empty()) continue;
    add_identities({*path}, m.folders);
    m.parts.push_back(ManifestPart{kind, role, *path, model_part_files(kind, *path), {}, "", ""});
    add_identities(m.parts.back().files.looked_in, m.folders);
  }
  std::vector<std::string> tokenizer_folders;
  m.tokenizer = tokenizer_file(paths.tokenizer, &tokenizer_folders);
  add_identities(tokenizer_folders, m.folders);
  add_identities(m.files(), m.identities);
  for (const auto& [file, identity] : m.identities) m.fingerprint += file + "=" + identity.to_string() + ";";
  return m;
}

// The headers of a part and what it is. A part that cannot be resolved is left to its
// loader (which names the problem), so a FIFO among its files is never opened here.
void read_headers(ManifestPart& part) {
  if (!part.files.problem.empty()) return;
  try {
    // A file given by name may be a .pth, which TensorFile does not read: its loader reads it. A
    // folder's weights are *.safetensors (model_part_files), so they are not opened twice to sniff.
    if (part.files.folder.empty()) {
      const std::string& file = part.files.weights.front();
      const FileKind kind = sniff_file_kind(read_file_head(file));
      if (kind != FileKind::Safetensors && kind != FileKind::Gguf) {
        part.detected = inspect_model_file(file).detected;
        return;
      }
    }
    for (const std::string& file : part.files.weights) part.headers.push_back(TensorFile::open_shared(file));
    part.detected = inspect_headers(part.path, part.headers).detected;
  } catch (const std::exception& e) {
    part.headers.clear();
    part.error = e.what();
  }
}

// The kept manifest of `paths` (moved to the front) when nothing it lists changed; else nullptr,
// and a stale one is dropped.
std::shared_ptr<const CheckpointManifest> kept(const CheckpointPaths& paths) {
  for (auto it = g_manifests.begin(); it != g_manifests.end(); ++it) {
    if (!((*it)->given == paths)) continue;
    if (!unchanged((*it)->folders) || !unchanged((*it)->identities)) {
      g_manifests.erase(it);
      return nullptr;
    }
    g_manifests.splice(g_manifests.begin(), g_manifests, it);
    return g_manifests.front();
  }
  return nullptr;
}

}  // namespace

bool CheckpointPaths::operator==(const CheckpointPaths& o) const {
  return std::tie(dit, low_noise_dit, vae, text_encoder, tokenizer) ==
         std::tie(o.dit, o.low_noise_dit, o.vae, o.text_encoder, o.tokenizer);
}

const ManifestPart* CheckpointManifest::part(const std::string& role) const {
  for (const ManifestPart& p : parts) {
    if (p.role == role) return &p;
  }
  return nullptr;
}

std::vector<std::string> CheckpointManifest::files() const {
  std::vector<std::string> out;
  for (const ManifestPart& p : parts) {
    const std::vector<std::string> all = p.files.all();
    out.insert(out.end(), all.begin(), all.end());
  }
  if (!tokenizer.empty()) out.push_back(tokenizer);
  return out;
}

std::shared_ptr<const CheckpointManifest> checkpoint_manifest(const CheckpointPaths& paths) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (auto same = kept(paths)) return same;
  }
  // Built outside the lock: reading a large model's headers must not hold up another's lookups.
  auto built = std::make_shared<CheckpointManifest>(resolve(paths));
  for (ManifestPart& part : built->parts) read_headers(part);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (auto same = kept(paths)) return same;  // built meanwhile by another thread
  g_manifests.push_front(built);
  if (g_manifests.size() > kKeptManifests) g_manifests.pop_back();
  return built;
}

}  // namespace vidgraph::model_io
