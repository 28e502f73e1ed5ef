// The Wan2.2 reference's prompt cleaning (wan/modules/tokenizers.py, clean='whitespace'):
//   whitespace_clean(basic_clean(text)) = collapse(strip(unescape(unescape(ftfy.fix_text(text)))))
// Contract of clean_prompt(), over UTF-8 (invalid bytes read as U+FFFD):
// 1. ftfy.fix_text with its default settings, line by line (a line ends after '\n'), each line
//    repeated until it stops changing: ftfy's HTML unescape (off for the line holding a literal
//    '<' and every line after it), C1 controls read as cp1252 (\x85 -> '…'), Latin ligatures
//    split, fullwidth and halfwidth forms to NFKC and U+3000 to ' ', curly quotes straightened
//    (U+2018-201B, U+02BC -> ', U+201C-201F -> "), line breaks to '\n' (CRLF, CR, U+2028/9),
//    ANSI terminal escapes (ESC [ digits/; letter) removed, invisible controls removed (C0 but
//    \t \n \f \r, DEL, U+206A-206F, the BOM U+FEFF, U+FFF9-FFFC), then NFC.
//    Not reproduced: ftfy's mojibake repair (fix_encoding: "cafÃ©" stays as it is).
// 2. Python's html.unescape, twice (html_unescape.h).
// 3. Runs of Python whitespace (unicode_text.h is_python_space) -> one ' ', ends stripped.
// Without ICU (unicode_text.h), step 1's NFC, NFKC and ALL-CAPS entities are reduced to ASCII.
#pragma once

#include <string>

namespace vidgraph::t5 {

std::string clean_prompt(const std::string& text);

// Step 1 alone (ftfy.fix_text as the reference calls it), UTF-8 in and out.
std::string ftfy_fix_text(const std::string& text);

}  // namespace vidgraph::t5
