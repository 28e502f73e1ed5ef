// Implements html_unescape.h with a sorted table of the WHATWG names (binary search).
#include "html_unescape.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "unicode_text.h"

namespace vidgraph::t5 {

namespace {

struct Entity {
  const char* name;  // without ';'
  char32_t first;
  char32_t second;   // 0: one code point
  bool legacy;       // also valid without ';'
};

const Entity kEntities[] = {
#include "html5_entities.inc"
};

std::string ascii(const std::u32string& s) {
  std::string out;
  for (const char32_t c : s) out += c < 0x80 ? char(c) : '\x7f';  // a non-ASCII name matches nothing
  return out;
}

const Entity* lookup(const std::string& name) {
  const auto end = std::end(kEntities);
  const auto it = std::lower_bound(std::begin(kEntities), end, name,
                                   [](const Entity& e, const std::string& n) { return std::strcmp(e.name, n.c_str()) < 0; });
  return it != end && name == it->name ? it : nullptr;
}

std::u32string value(const Entity& e) {
  std::u32string out(1, e.first);
  if (e.second != 0) out += e.second;
  return out;
}

// Python's html5 dict: "name;" for every entity, "name" for legacy ones.
const Entity* html5(const std::u32string& key) {
  const std::string k = ascii(key);
  if (!k.empty() && k.back() == ';') return lookup(k.substr(0, k.size() - 1));
  const Entity* e = lookup(k);
  return e != nullptr && e->legacy ? e : nullptr;
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool is_hex(char32_t c) { return is_digit(c) || (c >= U'a' && c <= U'f') || (c >= U'A' && c <= U'F'); }

std::u32string numeric(const std::u32string& digits, bool hex) {
  unsigned long long num = 0;
  for (const char32_t c : digits) {
    const unsigned d = is_digit(c) ? unsigned(c - U'0') : unsigned((c | 0x20) - U'a' + 10);
    num = std::min<unsigned long long>(num * (hex ? 16 : 10) + d, 0x7FFFFFFFull);  // past U+10FFFF is all alike
  }
  if (num == 0) return U"\uFFFD";
  if (num == 0x0D) return U"\r";
  if (num >= 0x80 && num <= 0x9F) return std::u32string(1, cp1252_c1(char32_t(num)));
  if ((num >= 0xD800 && num <= 0xDFFF) || num > 0x10FFFF) return U"\uFFFD";
  const bool invalid = (num >= 0x01 && num <= 0x08) || num == 0x0B || (num >= 0x0E && num <= 0x1F) ||
                       num == 0x7F || (num >= 0xFDD0 && num <= 0xFDEF) || (num & 0xFFFE) == 0xFFFE;
  return invalid ? std::u32string() : std::u32string(1, char32_t(num));
}

// One html.unescape match starting at text[i] == '&'; sets `used` to its length (0: no match).
std::u32string python_reference(const std::u32string& text, size_t i, size_t* used) {
  const size_t n = text.size();
  size_t j = i + 1;
  *used = 0;
  if (j < n && text[j] == U'#') {
    const bool hex = j + 1 < n && (text[j + 1] == U'x' || text[j + 1] == U'X');
    const size_t start = j + (hex ? 2 : 1);
    size_t k = start;
    while (k < n && (hex ? is_hex(text[k]) : is_digit(text[k]))) ++k;
    if (k == start) return {};
    const std::u32string digits = text.substr(start, k - start);
    if (k < n && text[k] == U';') ++k;
    *used = k - i;
    return numeric(digits, hex);
  }
  size_t k = j;
  auto name_char = [](char32_t c) { return c != U'\t' && c != U'\n' && c != U'\f' && c != U' ' && c != U'<' && c != U'&' && c != U'#' && c != U';'; };
  while (k < n && k - j < 32 && name_char(text[k])) ++k;
  if (k == j) return {};
  if (k < n && text[k] == U';') ++k;
  *used = k - i;
  const std::u32string s = text.substr(j, k - j);
  if (const Entity* e = html5(s)) return value(*e);
  for (size_t x = s.size() - 1; x >= 2; --x) {  // the longest known prefix
    if (const Entity* e = html5(s.substr(0, x))) return value(*e) + s.substr(x);
  }
  return U"&" + s;
}

// ftfy's extra ALL-CAPS names: "&NAME;" -> upper(value) for lower-case names whose capitals
// html.unescape leaves alone (neither "NAME;" nor any legacy prefix of NAME is an entity).
const std::map<std::string, std::u32string>& upper_case_entities() {
  static const std::map<std::string, std::u32string> table = [] {
    std::map<std::string, std::u32string> out;
    for (const Entity& e : kEntities) {
      std::string name = e.name;
      if (std::any_of(name.begin(), name.end(), [](char c) { return c >= 'A' && c <= 'Z'; })) continue;
      std::string upper = name;
      for (char& c : upper) c = (c >= 'a' && c <= 'z') ? char(c - 'a' + 'A') : c;
      const std::u32string probe = utf8_to_u32("&" + upper + ";");
      if (python_html_unescape(probe) == probe) out[upper] = to_upper(value(e));
    }
    return out;
  }();
  return table;
}

}  // namespace

char32_t cp1252_c1(char32_t c) {
  static const char32_t kTable[32] = {
      0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
      0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
      0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};
  return (c >= 0x80 && c <= 0x9F) ? kTable[c - 0x80] : c;
}

std::u32string python_html_unescape(const std::u32string& text) {
  if (text.find(U'&') == std::u32string::npos) return text;
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t used = 0;
    if (text[i] == U'&') {
      const std::u32string replaced = python_reference(text, i, &used);
      if (used > 0) {
        out += replaced;
        i += used;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::u32string ftfy_unescape_html(const std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  auto alnum = [](char32_t c) { return is_digit(c) || (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'); };
  for (size_t i = 0; i < text.size();) {
    // &#?[0-9A-Za-z]{1,24};
    size_t j = i + 1;
    if (text[i] == U'&' && j < text.size()) {
      const bool number = text[j] == U'#';
      if (number) ++j;
      size_t k = j;
      while (k < text.size() && k - j < 24 && alnum(text[k])) ++k;
      if (k > j && k < text.size() && text[k] == U';') {
        const std::u32string match = text.substr(i, k + 1 - i);
        std::u32string replaced = match;
        if (const Entity* e = number ? nullptr : html5(text.substr(j, k + 1 - j))) {
          replaced = value(*e);
        } else if (number) {
          const std::u32string decoded = python_html_unescape(match);
          if (decoded.find(U';') == std::u32string::npos) replaced = decoded;
        } else {
          const auto& upper = upper_case_entities();
          const auto it = upper.find(ascii(text.substr(j, k - j)));
          if (it != upper.end()) replaced = it->second;
        }
        out += replaced;
        i = k + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

}  // namespace vidgraph::t5
