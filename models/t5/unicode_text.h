// Unicode helpers for the prompt cleaning (prompt_clean.h), over UTF-32 strings so that "one
// character" means one code point, as in Python's str.
// NFC, NFKC, upper-casing and the decimal-digit test come from ICU when Vidgraph is built with it
// (libicu-dev; VIDGRAPH_HAVE_ICU); without ICU, nfc() returns its input, nfkc() maps only the
// fullwidth ASCII forms, to_upper() maps only ASCII and is_decimal() accepts only 0-9 (builds on
// machines without ICU headers still tokenize ASCII and already-composed prompts as the reference).
#pragma once

#include <string>

namespace vidgraph::t5 {

// UTF-8 -> code points; every byte that starts no valid sequence becomes U+FFFD.
std::u32string utf8_to_u32(const std::string& text);
std::string u32_to_utf8(const std::u32string& text);
void append_utf8(std::string& out, char32_t c);

// Python's str.isspace() (and so re's \s on str): the characters whose bidi class is WS, B or S
// or whose category is Zs; e.g. \x1c-\x1f, U+0085, NBSP, U+3000 are spaces, U+200B and U+FEFF not.
bool is_python_space(char32_t c);
// Unicode category Nd (re's \d on str).
bool is_decimal(char32_t c);

bool have_icu();
std::u32string nfc(const std::u32string& text);
std::u32string nfkc(const std::u32string& text);
// Full upper-case mapping without locale (Python's str.upper(): 'ß' -> "SS").
std::u32string to_upper(const std::u32string& text);

}  // namespace vidgraph::t5
