#include "engine/interop/python_code.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "engine/core/error.h"

namespace mixlab {
namespace {

// The code point of the UTF-8 sequence at text[at], and its length; length 0 where the bytes
// there are not valid UTF-8 (a stray continuation byte, a truncated or overlong sequence, a
// surrogate, a value past U+10FFFF).
std::pair<char32_t, std::size_t> decode_utf8(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  std::size_t length = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, cp = lead & 0x1fU, min = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, cp = lead & 0x0fU, min = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, cp = lead & 0x07U, min = 0x10000;
  } else {
    return {0, 0};
  }
  if (at + length > text.size()) return {0, 0};
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0U) != 0x80) return {0, 0};
    cp = (cp << 6) | (byte(i) & 0x3fU);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return {0, 0};
  return {cp, length};
}

void append_escape(std::string& out, char32_t cp) {
  char escaped[12];
  if (cp < 0x100) {
    std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(cp));
  } else if (cp < 0x10000) {
    std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(cp));
  } else {
    std::snprintf(escaped, sizeof escaped, "\\U%08x", static_cast<unsigned>(cp));
  }
  out += escaped;
}

}  // namespace

PyCode py_str(std::string_view text) {
  std::string out = "\"";
  for (std::size_t at = 0; at < text.size();) {
    const char c = text[at];
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else if (u < 0x80) {
      append_escape(out, u);  // the other control characters, NUL and DEL among them
    } else {
      const auto [cp, length] = decode_utf8(text, at);
      if (length == 0) {
        append_escape(out, 0xdc00 + u);  // surrogateescape, as Python decodes file names
        ++at;
        continue;
      }
      append_escape(out, cp);
      at += length;
      continue;
    }
    ++at;
  }
  out += '"';
  return {PyCode::Made{}, std::move(out)};
}

PyCode py_float(double value, std::string_view what) {
  if (!std::isfinite(value)) {
    throw ConfigError("export: the " + std::string(what) + " is " +
                      (std::isnan(value) ? "NaN" : "infinite") +
                      ", which a Python script cannot take as a number");
  }
  // std::to_chars never consults the locale; without a precision it writes the shortest form
  // that reads back as the same double.
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  std::string out(buf, result.ptr);
  if (out.find_first_of(".e") == std::string::npos) out += ".0";  // a float, not an int
  return {PyCode::Made{}, std::move(out)};
}

PyCode py_bool(bool value) {
  if (value) return "True";
  return "False";
}

PyCode py_tuple(const std::vector<std::int64_t>& values) {
  PyCode out = "(";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += ", ";
    out += py_int(values[i]);
  }
  return out + (values.size() == 1 ? PyCode(",)") : PyCode(")"));
}

PyCode py_template(std::string_view (*resource)()) {
  return {PyCode::Made{}, std::string(resource())};
}

PyCode fill_template(const PyCode& text,
                     std::initializer_list<std::pair<std::string_view, PyCode>> values) {
  const std::string& in = text.text();
  std::vector<bool> used(values.size(), false);
  std::string out;
  std::size_t at = 0;
  while (true) {
    const std::size_t open = in.find("{{", at);
    if (open == std::string::npos) break;
    const std::size_t close = in.find("}}", open + 2);
    if (close == std::string::npos) throw std::logic_error("export template: '{{' without '}}'");
    const std::string_view name(in.data() + open + 2, close - open - 2);
    std::size_t i = 0;
    for (const auto& [key, value] : values) {
      if (key == name) break;
      ++i;
    }
    if (i == values.size()) {
      throw std::logic_error("export template: no value for {{" + std::string(name) + "}}");
    }
    used[i] = true;
    out.append(in, at, open - at);
    out += (values.begin() + i)->second.text();
    at = close + 2;
  }
  out.append(in, at);
  for (std::size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) {
      throw std::logic_error("export template: {{" + std::string((values.begin() + i)->first) +
                             "}} is not in the template");
    }
  }
  return {PyCode::Made{}, std::move(out)};
}

}  // namespace mixlab
