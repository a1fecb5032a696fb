#include "engine/core/error.h"

#include <cstdint>
#include <cstdio>

namespace mixlab {

namespace {

void append_escape(std::string& out, const char* format, std::uint32_t value) {
  char code[12];
  std::snprintf(code, sizeof code, format, static_cast<unsigned>(value));
  out += code;
}

// Code points a terminal acts on, or that reorder or break the text around them: C1 controls,
// the line and paragraph separators, and the bidirectional marks, embeddings, overrides and
// isolates ("Trojan Source").
bool is_format_control(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

// The length of the well-formed UTF-8 sequence at `s` (1 to 4) and its code point, or 0 when
// the bytes there are not one (a stray continuation byte, a truncated, overlong or surrogate
// sequence, a code point above U+10FFFF).
std::size_t utf8_sequence(std::string_view s, std::uint32_t& cp) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char b0 = byte(0);
  std::size_t length = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
    cp = b0 & 0x1Fu;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    cp = b0 & 0x0Fu;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (s.size() < length) return 0;
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0u) != 0x80u) return 0;
    cp = (cp << 6) | (byte(i) & 0x3Fu);
  }
  const bool overlong = (length == 3 && cp < 0x800) || (length == 4 && cp < 0x10000);
  const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
  if (overlong || surrogate || cp > 0x10FFFF) return 0;
  return length;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      if (b < 0x20 || b == 0x7F) {
        append_escape(out, "\\x%02x", b);
      } else {
        out += static_cast<char>(b);
      }
      ++i;
      continue;
    }
    std::uint32_t cp = 0;
    const std::size_t length = utf8_sequence(text.substr(i), cp);
    if (length == 0) {
      append_escape(out, "\\x%02x", b);
      ++i;
    } else if (is_format_control(cp)) {
      append_escape(out, "\\u%04x", cp);
      i += length;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

std::string quote(std::string_view text) {
  std::string out = "'";  // appended: GCC 12 warns falsely (-Wrestrict) on "'" + std::string
  out += printable(text);
  out += '\'';
  return out;
}

void throw_backend_error(const char* library, const std::string& message, const char* expr,
                         const char* file, int line) {
  throw BackendError(std::string(library) + " error: " + message + " in '" + expr + "' at " + file +
                     ":" + std::to_string(line));
}

}  // namespace mixlab
