// Implements prompt_clean.h: each ftfy fixer is one pass over code points, in ftfy's order.
#include "prompt_clean.h"

#include "html_unescape.h"
#include "unicode_text.h"

namespace vidgraph::t5 {

namespace {

using Text = std::u32string;

Text fix_c1_controls(const Text& text) {
  Text out = text;
  for (char32_t& c : out) c = cp1252_c1(c);
  return out;
}

// ftfy's LIGATURES: Latin typographic ligatures and legacy digraphs (not æ, œ: those are letters).
const char32_t* ligature(char32_t c) {
  switch (c) {
    case 0x0132: return U"IJ";
    case 0x0133: return U"ij";
    case 0x0149: return U"\u02BCn";
    case 0x01F1: return U"DZ";
    case 0x01F2: return U"Dz";
    case 0x01F3: return U"dz";
    case 0x01C4: return U"D\u017D";
    case 0x01C5: return U"D\u017E";
    case 0x01C6: return U"d\u017E";
    case 0x01C7: return U"LJ";
    case 0x01C8: return U"Lj";
    case 0x01C9: return U"lj";
    case 0x01CA: return U"NJ";
    case 0x01CB: return U"Nj";
    case 0x01CC: return U"nj";
    case 0xFB00: return U"ff";
    case 0xFB01: return U"fi";
    case 0xFB02: return U"fl";
    case 0xFB03: return U"ffi";
    case 0xFB04: return U"ffl";
    case 0xFB05: return U"\u017Ft";
    case 0xFB06: return U"st";
    default: return nullptr;
  }
}

Text fix_latin_ligatures(const Text& text) {
  Text out;
  for (const char32_t c : text) {
    const char32_t* parts = ligature(c);
    if (parts != nullptr) {
      out += parts;
    } else {
      out += c;
    }
  }
  return out;
}

// ftfy's WIDTH_MAP: U+3000 -> ' ', U+FF01..U+FFEF -> their NFKC form when it differs.
Text fix_character_width(const Text& text) {
  Text out;
  for (const char32_t c : text) {
    if (c == 0x3000) {
      out += U' ';
    } else if (c >= 0xFF01 && c < 0xFFF0) {
      out += nfkc(Text(1, c));
    } else {
      out += c;
    }
  }
  return out;
}

Text uncurl_quotes(const Text& text) {
  Text out = text;
  for (char32_t& c : out) {
    if (c >= 0x201C && c <= 0x201F) c = U'"';
    if (c == 0x02BC || (c >= 0x2018 && c <= 0x201B)) c = U'\'';
  }
  return out;
}

Text fix_line_breaks(const Text& text) {
  Text out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c == U'\r' && i + 1 < text.size() && text[i + 1] == U'\n') continue;  // CRLF: keep the LF
    out += (c == U'\r' || c == 0x2028 || c == 0x2029 || c == 0x85) ? U'\n' : c;
  }
  return out;
}

// ESC '[' (digit | ';')* letter, digits being any Unicode decimal digit as re's \d.
Text remove_terminal_escapes(const Text& text) {
  Text out;
  auto letter = [](char32_t c) { return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'); };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == 0x1B && i + 1 < text.size() && text[i + 1] == U'[') {
      size_t k = i + 2;
      while (k < text.size() && (text[k] == U';' || is_decimal(text[k]))) ++k;
      if (k < text.size() && letter(text[k])) {
        i = k;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

bool invisible_control(char32_t c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || (c >= 0x206A && c <= 0x206F) ||
         c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFC);
}

Text remove_control_chars(const Text& text) {
  Text out;
  for (const char32_t c : text) {
    if (!invisible_control(c)) out += c;
  }
  return out;
}

// ftfy's fix_and_explain for one line, without fix_encoding.
Text fix_segment(Text text, bool unescape) {
  while (true) {
    const Text before = text;
    if (unescape) text = ftfy_unescape_html(text);
    text = fix_c1_controls(text);
    text = fix_latin_ligatures(text);
    text = fix_character_width(text);
    text = uncurl_quotes(text);
    text = fix_line_breaks(text);
    text = remove_terminal_escapes(text);
    text = remove_control_chars(text);
    text = nfc(text);
    if (text == before) return text;
  }
}

Text fix_text(const Text& text) {
  Text out;
  bool unescape = true;
  for (size_t pos = 0; pos < text.size();) {
    const size_t newline = text.find(U'\n', pos);
    const size_t end = newline == Text::npos ? text.size() : newline + 1;
    const Text segment = text.substr(pos, end - pos);
    if (segment.find(U'<') != Text::npos) unescape = false;  // looks like HTML: keep its entities
    out += fix_segment(segment, unescape);
    pos = end;
  }
  return out;
}

Text collapse_whitespace(const Text& text) {
  Text out;
  bool pending_space = false;
  for (const char32_t c : text) {
    if (is_python_space(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += U' ';
    pending_space = false;
    out += c;
  }
  return out;
}

}  // namespace

std::string ftfy_fix_text(const std::string& text) { return u32_to_utf8(fix_text(utf8_to_u32(text))); }

std::string clean_prompt(const std::string& text) {
  const Text fixed = fix_text(utf8_to_u32(text));
  return u32_to_utf8(collapse_whitespace(python_html_unescape(python_html_unescape(fixed))));
}

}  // namespace vidgraph::t5
