// Calls into oneDNN that report failures as mixlab::BackendError with the expression, file and
// line (oneDNN's C++ API throws dnnl::error; this adds where it came from).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/core/error.h"

#define DNNL_CHECK(expr)                                                            \
  [&]() -> decltype(auto) {                                                         \
    try {                                                                           \
      return expr;                                                                  \
    } catch (const dnnl::error& e) {                                                \
      ::mixlab::throw_backend_error("oneDNN", e.what(), #expr, __FILE__, __LINE__); \
    }                                                                               \
  }()
