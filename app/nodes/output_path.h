// Safe output placement shared by the media writers: checks the target folder, refuses to
// overwrite unless told, names a temporary sibling in the same folder (so the final rename is
// atomic on one file system) and renames it into place. No OpenCV or FFmpeg here.
#pragma once

#include <cstddef>
#include <string>

namespace vidgraph::nodes {

// Checks that `path` can be written: its folder exists and is a writable folder, and the path
// itself does not exist unless `overwrite`. Returns an empty string when fine, otherwise a
// sentence naming the path and what to do.
std::string check_output_path(const std::string& path, bool overwrite);

// A fresh temporary name beside `path` (same folder, hidden, unique per process and call).
std::string temporary_sibling(const std::string& path);

// Renames `from` onto `to` (replacing `to` when `overwrite`; refusing when it exists otherwise,
// even if it appeared after the check). Works for files and folders. Returns "" or an error.
std::string commit_output(const std::string& from, const std::string& to, bool overwrite);

// Removes a file or folder tree, ignoring errors (used to clean temporaries after a failure).
void remove_quietly(const std::string& path);

// Writes `bytes` to `path` through a temporary sibling and a rename. Returns "" or an error that
// names the path (an unwritable place and a full disk are reported as such).
std::string write_file_atomically(const std::string& path, const void* bytes, std::size_t size,
                                  bool overwrite);

// A sentence for errno-style failures: "disk is full" for ENOSPC/EDQUOT, the system text otherwise.
std::string describe_errno(int error_number);

}  // namespace vidgraph::nodes
