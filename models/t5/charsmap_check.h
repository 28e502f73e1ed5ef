// Checks a SentencePiece normaliser table (`precompiled_charsmap`) before libsentencepiece uses it.
// libsentencepiece (normalizer.cc) checks little of it and then follows its offsets blindly while
// encoding: a hostile table makes it read outside the table (a crash in the normaliser, issue #41).
//
// The layout, from SentencePiece's normalizer.cc and darts_clone/darts.h: a little-endian uint32,
// the trie's size in bytes; the Darts-clone double-array trie, that many bytes of uint32 units; then
// the normalised strings, each ending in NUL. Matching a text walks the trie from unit 0 one byte at
// a time; a unit with a rule leads to a leaf unit whose value is the offset of its string.
#pragma once

#include <string>
#include <string_view>

namespace vidgraph::t5 {

// What is wrong with `charsmap`, as a phrase that follows the key's name ("declares a trie of 9000
// bytes, but only 120 bytes follow its size"); empty when libsentencepiece can use it safely: the
// trie lies inside the table, every unit a text can reach has its children and its leaf inside the
// trie, every reachable value starts a NUL-terminated string inside the strings, the trie has no
// loop, and no text matches more rules at one place than the normaliser has room for.
std::string charsmap_problem(std::string_view charsmap);

}  // namespace vidgraph::t5
