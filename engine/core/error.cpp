#include "engine/core/error.h"

namespace mixlab {

void throw_backend_error(const char* library, const std::string& message, const char* expr,
                         const char* file, int line) {
  throw BackendError(std::string(library) + " error: " + message + " in '" + expr + "' at " + file +
                     ":" + std::to_string(line));
}

}  // namespace mixlab
