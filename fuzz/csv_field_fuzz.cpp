// Fuzzes the CSV writer's quoting. csv_field(text) is read back with a small RFC 4180 field
// reader, and must give the text again, with a ' before it when the text starts with one of
// = + - @ TAB CR (neutralised against formula injection); the field itself (after an opening
// quote) never starts with one of those. The input's first 8 bytes, as a double, also go
// through csv_number, which must read back to the same double ("" for NaN).
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>

#include "app/store/csv_export.h"
#include "fuzz/fuzz_support.h"

namespace {

using mixlab::fuzz::finding;

constexpr std::string_view kFormulaStarts = "=+-@\t\r";

bool starts_formula(std::string_view text) {
  return !text.empty() && kFormulaStarts.find(text.front()) != std::string_view::npos;
}

// One RFC 4180 field, the whole of `field`: either quoted ("..." with "" for a quote) or bare
// (no comma, quote, CR or LF). Nothing when it is not a valid field.
std::optional<std::string> read_field(std::string_view field) {
  if (field.empty() || field.front() != '"') {
    if (field.find_first_of(",\"\r\n") != std::string_view::npos) return std::nullopt;
    return std::string(field);
  }
  std::string value;
  std::size_t i = 1;
  for (;;) {
    if (i >= field.size()) return std::nullopt;  // no closing quote
    const char c = field[i++];
    if (c != '"') {
      value += c;
      continue;
    }
    if (i < field.size() && field[i] == '"') {  // a doubled quote
      value += '"';
      ++i;
      continue;
    }
    break;  // the closing quote
  }
  if (i != field.size()) return std::nullopt;  // something after the closing quote
  return value;
}

std::string escaped(std::string_view text) {
  std::string out;
  for (const unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

void check_field(std::string_view text) {
  std::string field;
  try {
    field = mixlab::store::csv_field(text);
  } catch (const std::exception& e) {
    mixlab::fuzz::unexpected_exception("csv_field", e);
  }
  const std::string context = " (text \"" + escaped(text) + "\", field \"" + escaped(field) + "\")";
  const std::optional<std::string> parsed = read_field(field);
  if (!parsed) finding("csv_field wrote an invalid RFC 4180 field" + context);
  const std::string expected = starts_formula(text) ? "'" + std::string(text) : std::string(text);
  if (*parsed != expected) {
    finding(std::string("csv_field does not read back as ") +
            (starts_formula(text) ? "' + the text (formula neutralised)" : "the text") + context);
  }
  const std::string_view cell = !field.empty() && field.front() == '"'
                                    ? std::string_view(field).substr(1)
                                    : std::string_view(field);
  if (starts_formula(cell)) finding("csv_field wrote a cell that starts a formula" + context);
}

void check_number(double value) {
  std::string number;
  try {
    number = mixlab::store::csv_number(value);
  } catch (const std::exception& e) {
    mixlab::fuzz::unexpected_exception("csv_number", e);
  }
  if (std::isnan(value)) {
    if (!number.empty()) finding("csv_number(NaN) is not empty: " + number);
    return;
  }
  if (std::isinf(value)) {
    if (number != (value > 0 ? "inf" : "-inf")) finding("csv_number(inf) wrote " + number);
    return;
  }
  if (number.find_first_not_of("0123456789.-+e") != std::string::npos)
    finding("csv_number wrote a character that is not part of a number: " + number);
  double back = 0.0;
  const auto result = std::from_chars(number.data(), number.data() + number.size(), back);
  if (result.ec != std::errc() || result.ptr != number.data() + number.size() ||
      std::memcmp(&back, &value, sizeof value) != 0) {
    finding("csv_number does not read back to the same double: " + number);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check_field(std::string_view(reinterpret_cast<const char*>(data), size));
  if (size >= sizeof(double)) {
    double value;
    std::memcpy(&value, data, sizeof value);
    check_number(value);
  }
  return 0;
}
