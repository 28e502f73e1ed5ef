// Implements unicode_text.h: a small UTF-8 codec of our own, ICU's normalizers and case mapping.
#include "unicode_text.h"

#if VIDGRAPH_HAVE_ICU
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#endif

namespace vidgraph::t5 {

std::u32string utf8_to_u32(const std::string& text) {
  std::u32string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    bool ok = len > 0 && i + len <= n;
    for (int k = 1; ok && k < len; ++k) {
      ok = (s[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
    static const char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    out += ok ? cp : char32_t(0xFFFD);
    i += ok ? len : 1;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

std::string u32_to_utf8(const std::u32string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char32_t c : text) append_utf8(out, c);
  return out;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

#if VIDGRAPH_HAVE_ICU

namespace {

icu::UnicodeString to_icu(const std::u32string& text) {
  return icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(text.data()), int32_t(text.size()));
}

std::u32string from_icu(const icu::UnicodeString& text) {
  std::u32string out(size_t(text.countChar32()), U'\0');
  UErrorCode status = U_ZERO_ERROR;
  text.toUTF32(reinterpret_cast<UChar32*>(out.data()), int32_t(out.size()), status);
  return out;
}

std::u32string normalize(const std::u32string& text, bool compat) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* normalizer =
      compat ? icu::Normalizer2::getNFKCInstance(status) : icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) return text;  // ICU's data missing: leave the text as it is
  const icu::UnicodeString in = to_icu(text);
  if (normalizer->isNormalized(in, status) && U_SUCCESS(status)) return text;
  status = U_ZERO_ERROR;
  const icu::UnicodeString out = normalizer->normalize(in, status);
  return U_SUCCESS(status) ? from_icu(out) : text;
}

}  // namespace

bool have_icu() { return true; }
bool is_decimal(char32_t c) { return u_charType(UChar32(c)) == U_DECIMAL_DIGIT_NUMBER; }
std::u32string nfc(const std::u32string& text) { return normalize(text, false); }
std::u32string nfkc(const std::u32string& text) { return normalize(text, true); }
std::u32string to_upper(const std::u32string& text) {
  icu::UnicodeString s = to_icu(text);
  return from_icu(s.toUpper(icu::Locale::getRoot()));
}

#else

bool have_icu() { return false; }
bool is_decimal(char32_t c) { return c >= U'0' && c <= U'9'; }
std::u32string nfc(const std::u32string& text) { return text; }
std::u32string nfkc(const std::u32string& text) {
  std::u32string out = text;
  for (char32_t& c : out) {
    if (c >= 0xFF01 && c <= 0xFF5E) c = c - 0xFF01 + 0x21;
  }
  return out;
}
std::u32string to_upper(const std::u32string& text) {
  std::u32string out = text;
  for (char32_t& c : out) {
    if (c >= U'a' && c <= U'z') c = c - U'a' + U'A';
  }
  return out;
}

#endif

}  // namespace vidgraph::t5
