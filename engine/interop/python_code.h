// Python source text that MixLab generates (script_export.cpp), built so that no value can turn
// into code. A PyCode is made in two ways only: from program text (a string literal, or an
// embedded template under resources/export/) and from a value written as a Python literal by
// py_str / py_float / py_int / py_bool / py_tuple. A run-time std::string (a model or layer name,
// a path, a note) does not convert to PyCode, so pasting one into a script does not compile;
// it has to go through py_str. Templates take their values through named placeholders
// ({{NAME}}) filled in one pass, so a value that looks like a placeholder stays text.
#pragma once

#include <charconv>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mixlab {

class PyCode {
 public:
  PyCode() = default;
  // Program text: a string literal in MixLab's source ("keras.layers.Dense(").
  template <std::size_t N>
  PyCode(const char (&fixed)[N])  // implicit on purpose: literals read as code
      : text_(fixed, N - 1) {}

  PyCode& operator+=(const PyCode& more) {
    text_ += more.text_;
    return *this;
  }
  friend PyCode operator+(PyCode a, const PyCode& b) { return a += b; }

  bool empty() const { return text_.empty(); }
  const std::string& text() const { return text_; }

 private:
  struct Made {};  // only this file's functions make a PyCode out of a run-time string
  PyCode(Made, std::string text) : text_(std::move(text)) {}

  friend PyCode py_str(std::string_view text);
  friend PyCode py_float(double value, std::string_view what);
  template <std::integral Int>
  friend PyCode py_int(Int value);
  friend PyCode py_template(std::string_view (*resource)());
  friend PyCode fill_template(const PyCode& text,
                              std::initializer_list<std::pair<std::string_view, PyCode>> values);

  std::string text_;
};

// The one way text reaches a script: a double-quoted str literal in pure ASCII that Python reads
// back as `text`. Printable ASCII passes through except " and \ (escaped, so "\N{...}" and
// quotes stay text); every other character is escaped (\n, \t, \r, \xXX, \uXXXX, \UXXXXXXXX:
// NUL, U+2028, U+2029, non-ASCII alike). A byte that is not part of valid UTF-8 becomes \udcXX,
// the lone surrogate by which Python keeps an undecodable file-name byte (os.fsdecode's
// surrogateescape), so that a path reads back as the same bytes.
PyCode py_str(std::string_view text);

// The one way a number reaches a script: the shortest literal that Python reads back as the same
// double, whatever the C locale ("0.001", "1e-07", "32768.0"). A non-finite value has no literal:
// ConfigError naming `what` ("learning rate").
PyCode py_float(double value, std::string_view what);
// An integer literal ("-3", "128", "18446744073709551615"), of any integer type but bool.
template <std::integral Int>
PyCode py_int(Int value) {
  static_assert(!std::same_as<Int, bool>, "py_bool writes a bool");
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof buf, value);
  return {PyCode::Made{}, std::string(buf, result.ptr)};
}

PyCode py_bool(bool value);
// A tuple of integers: "(28, 28, 1)", "(784,)", "()".
PyCode py_tuple(const std::vector<std::int64_t>& values);

// An embedded template (resources/builtin_export.h) as program text.
PyCode py_template(std::string_view (*resource)());

// `text` with each placeholder {{NAME}} replaced by values' NAME, in one pass (what a value
// holds is never searched for placeholders). A placeholder without a value, or a value without
// a placeholder, is a bug of MixLab's: std::logic_error.
PyCode fill_template(const PyCode& text,
                     std::initializer_list<std::pair<std::string_view, PyCode>> values);

}  // namespace mixlab
