// Internal to resources/: the table that embed_models.cmake generates at build time.
#pragma once

#include <span>
#include <string_view>

namespace mixlab::resources_detail {

struct EmbeddedModel {
  std::string_view name;  // file stem: "fashion-cnn"
  std::string_view json;  // the file's bytes
};

// Sorted by name.
std::span<const EmbeddedModel> embedded_models();

}  // namespace mixlab::resources_detail
