// Safe output placement shared by every writer (Export Video, Save Latent, contact sheets, the
// attention tool): a writer fills a temporary sibling of its target (same folder, so the final move
// is atomic on one file system) and publishes it under a naming policy. No OpenCV or FFmpeg here.
//
// The rules that keep user data safe:
//   - nothing is ever deleted or replaced that the writer did not create: no folder, device, FIFO,
//     symlink or file of another kind; `Overwrite` replaces only a regular file (or a PNG-sequence
//     folder) that the same kind of writer produces, recognised by its content;
//   - publishing never replaces what appeared meanwhile: `renameat2(RENAME_NOREPLACE)`, or
//     `link` + `unlink` (files) and an exclusive `mkdir` (folders) on file systems without it;
//   - `Increment` picks the first free name of `demo.mp4`, `demo_00002.mp4`, ... atomically; only an
//     earlier file or folder is a reason to take the next name, never a device, FIFO or socket;
//   - writers write regular files in real folders: a path in /dev, /proc or /sys (as written or
//     where its links lead), or whose parent exists but is not a folder, is refused with a sentence.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace vidgraph::nodes {

// What a writer does when its target exists. `Increment` (the default) keeps every earlier output.
enum class Naming { Increment, Fail, Overwrite };

// "increment", "fail", "overwrite" (the writers' `naming` choices).
std::optional<Naming> parse_naming(const std::string& name);

// What a writer produces; `Overwrite` replaces only an existing output of the same kind.
enum class OutputKind { Mp4, WebM, Png, Safetensors, Json, PngSequence };

struct OutputTarget {
  std::string path;  // resolved, absolute or relative to the current directory
  Naming naming = Naming::Increment;
  OutputKind kind = OutputKind::Png;
};

// True when `path` holds what a writer of `kind` produces (checked by content, not by name).
bool is_output_of_kind(const std::string& path, OutputKind kind);

// What stands at the target, against its policy: a real place (see the rules above), not a folder
// (except for a PNG sequence), and under `Fail` nothing is there, under `Overwrite` only a
// replaceable output. Returns "" or a sentence naming the path and the ways out. The writers'
// preflight, before a run starts.
std::string check_output_conflict(const OutputTarget& target);

// check_output_conflict, and the target's folder exists and is writable: just before writing.
std::string check_output_target(const OutputTarget& target);

// A fresh temporary name beside `path` (same folder, hidden, unique per process and call):
// ".NAME.tmp-PID-N".
std::string temporary_sibling(const std::string& path);

// Removes the temporaries of `path` that writers left when they were killed: ".NAME.tmp-PID-N"
// entries whose process no longer runs (and, for a folder, only the files a writer puts there).
void remove_stale_temporaries(const std::string& path);

struct Published {
  std::string path;   // where the output now is (differs from the target under `Increment`)
  std::string error;  // "" on success
};

// Moves the finished temporary `temp` (a file, or a folder for a PNG sequence) into place by the
// target's naming policy. On failure `temp` is left for the caller to remove.
Published publish_output(const std::string& temp, const OutputTarget& target);

// Moves `from` to `to` only if nothing is at `to`. Returns 0, or the errno (EEXIST when taken).
// `use_fallback` forces the path taken on file systems without RENAME_NOREPLACE (for tests).
int move_no_replace(const std::string& from, const std::string& to, bool use_fallback = false);

// Removes a temporary (a file, or a folder of the files a writer puts there: frames and
// metadata.json; a folder holding anything else is kept). Returns true when it is gone.
bool remove_temporary(const std::string& path);

// Creates `path` (which must not exist) and writes `bytes` to it, synced. Returns "" or an error.
std::string write_new_file(const std::string& path, const void* bytes, std::size_t size);

// Writes `bytes` through a temporary sibling and publish_output. Returns the published path and
// an error that names the path (an unwritable place and a full disk are reported as such).
Published write_file_atomically(const OutputTarget& target, const void* bytes, std::size_t size);

// A sentence for errno-style failures: "disk is full" for ENOSPC/EDQUOT, the system text otherwise.
std::string describe_errno(int error_number);

}  // namespace vidgraph::nodes
