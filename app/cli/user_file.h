// The one check every vidgraph-run entry point makes before it opens a file the user named: the
// workflow of `run`/`validate` (a .vgflow, or a video or PNG-sequence folder with an embedded
// workflow, and that folder's metadata.json), `compare`'s two inputs, and `models`' files.
//
// Contract: stat() only, nothing is opened, so a FIFO never blocks and a device never streams here.
// Returns "" when `path` is a regular file (or a folder, where `kind` allows one) or does not exist
// (the reader then says so in its own words); else one sentence that names the role, the path
// (bytes that are not UTF-8 written as \xNN), what it is instead (a FIFO, a socket, a device, a
// folder) and what to do. Symbolic links are followed: a link to /dev/zero is a device.
#pragma once

#include <string>

namespace vidgraph::cli {

enum class UserFileKind { File, FileOrFolder };

// `role` starts the sentence, e.g. "The workflow", "compare's first input".
std::string check_user_file(const std::string& role, const std::string& path, UserFileKind kind);

}  // namespace vidgraph::cli
