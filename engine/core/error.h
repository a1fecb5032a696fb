// Error types of the engine. Library code throws these and never exits: a GUI must survive a
// failed run. Each message names the problem (layer and field, file, library call).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mixlab {

// Text from a file, an option or a store row, made safe to print in a message: control
// characters (C0, DEL, C1), Unicode's line separators and bidirectional overrides, and bytes that
// are not UTF-8 become escapes (\x1b, \u0085, \u202e, \xff), so that no message drives the
// terminal that prints it. Everything else, backslashes too, stays as it is: readable, and
// escaping twice changes nothing. The one place messages escape user text.
std::string printable(std::string_view text);
// The same in single quotes, as a message quotes a name or a value: 'dense\x1b[2J'.
std::string quote(std::string_view text);

// Base of every error the engine throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A model spec that cannot be trained: bad JSON, unknown layer or field, shapes that do not fit.
// The message names the layer ("layer 4 (Conv2D): ...") and the field; layer() gives that index
// too, so that the editor can mark the row without parsing the message.
class SpecError : public Error {
 public:
  // `layer`: the offending layer's index in ModelSpec::layers, or -1 when the error is not about
  // one layer (the file, the JSON, the input shape, the model as a whole).
  explicit SpecError(const std::string& what, int layer = -1) : Error(what), layer_(layer) {}
  int layer() const { return layer_; }

 private:
  int layer_ = -1;
};

// A run configuration that is invalid (batch size 0, unknown optimizer, model/dataset mismatch).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A dataset file that is missing, truncated, corrupt or of the wrong kind; names the file.
class DatasetError : public Error {
 public:
  using Error::Error;
};

// A call into a compute library (oneDNN, CUDA, cuBLAS, cuDNN) that failed; carries the
// expression, file and line.
class BackendError : public Error {
 public:
  using Error::Error;
};

// Memory for a run could not be allocated.
class AllocationError : public Error {
 public:
  AllocationError(const std::string& what, std::size_t bytes) : Error(what), bytes_(bytes) {}
  std::size_t bytes() const { return bytes_; }

 private:
  std::size_t bytes_;
};

// Throws BackendError("<library> error: <message> in '<expr>' at <file>:<line>").
[[noreturn]] void throw_backend_error(const char* library, const std::string& message,
                                      const char* expr, const char* file, int line);

}  // namespace mixlab

// Checks an internal invariant; throws mixlab::Error naming the condition and place.
#define MIXLAB_ASSERT(cond)                                                                     \
  do {                                                                                          \
    if (!(cond))                                                                                \
      ::mixlab::throw_backend_error("internal", "assertion failed", #cond, __FILE__, __LINE__); \
  } while (0)
