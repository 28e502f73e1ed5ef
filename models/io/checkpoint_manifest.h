// The checkpoint manifest of one Wan model: every file loading it reads, resolved once from the
// paths given (model_part_files.h's folder rules), the headers of its weight files (read once:
// TensorFile::open_shared), what each part is (model_file_info.h's names) and one fingerprint.
// Load Wan Model asks for it in its cache key, its preflight and its compute; while no file
// changed (file_identity.h) the three get the same object, so none resolves or inspects on its own.
//
// Every part's headers are read here once: the DiT experts' and the text encoder's loaders
// (models/wan, models/t5) open their files through open_shared, so they get these; the VAE's
// loader takes them (TensorFile::load_all). A `.pth` part has no TensorFile header: its
// `detected` comes from inspect_model_file and its loader reads the file itself.
//
// Never throws: a part that cannot be resolved keeps `files.problem`, one whose header cannot be
// read keeps `error`; the loaders name those problems when they run, as they always did.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/io/file_identity.h"
#include "models/io/model_folders.h"
#include "models/io/model_part_files.h"

namespace vidgraph::model_io {

class TensorFile;

// The roles of ManifestPart, in the manifest's order.
inline constexpr char kRoleDit[] = "dit";
inline constexpr char kRoleLowNoiseDit[] = "low-noise dit";
inline constexpr char kRoleVae[] = "vae";
inline constexpr char kRoleTextEncoder[] = "text encoder";

// The paths a load names, already resolved (a folder or a file each; "" when there is none).
struct CheckpointPaths {
  std::string dit;
  std::string low_noise_dit;  // a two-expert model's low-noise expert, or ""
  std::string vae;
  std::string text_encoder;
  std::string tokenizer;  // a spiece.model, or a folder holding one (tokenizer_file)

  bool operator==(const CheckpointPaths& o) const;
};

struct ManifestPart {
  ModelKind kind = ModelKind::Dit;
  std::string role;  // kRoleDit, ...
  std::string path;  // as given
  ModelPartFiles files;
  // One per files.weights, in load order, for the parts that read them (see above); else empty.
  std::vector<std::shared_ptr<const TensorFile>> headers;
  std::string detected;  // "wan2.2-ti2v-5b", "wan2.2-vae", ... (model_file_info.h); "" when not told
  std::string error;     // why a header could not be read, else ""
};

struct CheckpointManifest {
  CheckpointPaths given;
  std::vector<ManifestPart> parts;  // those given, in role order
  std::string tokenizer;            // the tokenizer file, or ""
  // Every file reading the model touches (per part: index, config, weights; then the tokenizer)
  // with what stat said of it when the manifest was built.
  std::vector<std::pair<std::string, FileIdentity>> identities;
  // The same for the folders whose listings chose those files (ModelPartFiles::looked_in): the
  // manifest stands while these and `identities` are unchanged.
  std::vector<std::pair<std::string, FileIdentity>> folders;
  // "path=identity;" over `identities`: the cache key's part for the files (a missing file: "path=;").
  std::string fingerprint;

  // The part of `role`, nullptr when the model has none (no low-noise expert).
  const ManifestPart* part(const std::string& role) const;
  std::vector<std::string> files() const;
};

// The manifest of `paths`: the last one built for them while every file and folder it lists is
// unchanged (one stat each), else a new one, resolved and read anew.
std::shared_ptr<const CheckpointManifest> checkpoint_manifest(const CheckpointPaths& paths);

}  // namespace vidgraph::model_io
