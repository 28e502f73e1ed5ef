// Checks of the files and folders that node params name, made before anything opens them: a
// regular file (or, where the loader takes one, a folder), never a FIFO, a device or a socket
// (reading /dev/zero or a FIFO blocks forever or never ends), and names that are valid UTF-8
// (params travel as JSON strings, which must be UTF-8).
//
// Contract: each check returns "" when the path is fine, else one sentence that names the param,
// the path (bytes that are not UTF-8 written as \xNN) and what to do. stat() only: nothing is
// opened, so a FIFO never blocks here.
#pragma once

#include <sys/types.h>

#include <string>

namespace vidgraph::nodes {

// True when `text` is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(const std::string& text);

// `text` with every byte that is not part of valid UTF-8 written as \xNN: safe to put in a message
// that is sent as JSON (--json-events) or shown in the GUI.
std::string printable_text(const std::string& text);

// "" when the string param `param` is valid UTF-8, else a sentence saying which param is not.
std::string check_utf8_param(const std::string& param, const std::string& value);

enum class InputKind { File, FileOrFolder, Folder };

// What a stat mode is, for messages: "a folder", "a FIFO (named pipe)", "a character device", ...
const char* file_kind_name(mode_t mode);

// Checks that `path` (the value of param `param`) is what the node reads: a readable regular file,
// or a folder where `kind` allows one. `wanted` completes "set <param> to ...", e.g. "an image
// file (PNG, JPEG or WebP)". Symbolic links are followed (a link to /dev/zero is a device).
std::string check_input_path(const std::string& param, const std::string& path, InputKind kind,
                             const std::string& wanted);

}  // namespace vidgraph::nodes
