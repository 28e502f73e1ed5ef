// The two HTML entity decoders of the reference's prompt cleaning, over code points:
// - python_html_unescape: Python's html.unescape (HTML5 rules): every named reference of the
//   WHATWG list (html5_entities.inc), the 106 legacy names also without ';', and for an unknown
//   name the longest known legacy prefix ("&notit;" -> "¬it;"); numeric references with the
//   cp1252 meaning of &#128;-&#159;, U+FFFD for 0, surrogates and values past U+10FFFF, nothing
//   for the other control and non-character code points.
// - ftfy_unescape_html: ftfy's unescape_html: only `&name;` / `&#...;` forms of at most 24
//   letters and digits, the names of the WHATWG list, plus ALL-CAPS forms of lower-case names
//   whose capitals mean nothing to html.unescape ("&EACUTE;" -> "É"); a numeric reference that
//   html.unescape decodes only partly stays as it is.
#pragma once

#include <string>

namespace vidgraph::t5 {

std::u32string python_html_unescape(const std::u32string& text);
std::u32string ftfy_unescape_html(const std::u32string& text);

// cp1252 (as browsers and Python's "sloppy" codec read it) for U+0080..U+009F: the code point
// that byte means there; the five bytes cp1252 leaves undefined keep their C1 code point.
char32_t cp1252_c1(char32_t c);

}  // namespace vidgraph::t5
