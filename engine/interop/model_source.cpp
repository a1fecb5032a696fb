#include <fstream>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"

namespace mixlab {

ImportedModel load_model_source(const std::filesystem::path& path) {
  // A zip (a .keras archive) starts with "PK\3\4", whatever the file is called. Only a regular
  // file is looked into (a FIFO would block): read_model_text() names what the others are.
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    std::ifstream in(path, std::ios::binary);
    char magic[4] = {};
    if (in && in.read(magic, 4) && std::string_view(magic, 4) == std::string_view("PK\3\4", 4)) {
      return import_keras_archive(path);
    }
  }
  if (path.extension() == ".keras") {
    if (std::filesystem::is_regular_file(path, ec)) {
      throw SpecError(path.string() + ": not a .keras archive (a .keras file is a zip file)");
    }
  }
  const std::string text = read_model_text(path);  // its errors name the file
  if (is_keras_json(text)) return import_keras_json(text, path.string());
  ImportedModel model;
  model.spec = parse_model_json(text, path.string());
  model.format = "MixLab JSON";
  return model;
}

}  // namespace mixlab
