// Fuzzes Keras model JSON (what users import from files they did not write): import_keras_json,
// then, on what imports, the export's round trip import(export(s, p)) == s under the imported
// policy (a graph whose shapes do not infer is refused by the export, and only such a one) and
// shape inference. Bad input must end in a SpecError; any other exception, a crash,
// a leak or a broken round trip is a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/interop/keras_model.h"
#include "engine/spec/shape_inference.h"
#include "fuzz/fuzz_support.h"

using mixlab::fuzz::finding;
using mixlab::fuzz::unexpected_exception;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  mixlab::ImportedModel model;
  try {
    (void)mixlab::is_keras_json(text);
    model = mixlab::import_keras_json(text, "fuzz.json");
  } catch (const mixlab::SpecError&) {
    return 0;
  } catch (const std::exception& e) {
    unexpected_exception("import_keras_json", e);
  }
  if (model.keras_names.size() != model.spec.layers.size()) {
    finding("import_keras_json: one Keras name per layer");
  }
  const mixlab::Policy policy = model.policy.value_or(mixlab::Policy::float32);
  try {
    const std::string written = mixlab::export_keras_json(model.spec, policy);
    const mixlab::ImportedModel again = mixlab::import_keras_json(written, "export");
    if (!(again.spec == model.spec) || again.policy != policy) {
      finding("import_keras_json(export_keras_json(s)) != s; export wrote:\n" + written);
    }
  } catch (const mixlab::SpecError& e) {
    // A graph's export writes each tensor's shape: it refuses a model whose shapes do not
    // infer, with shape inference's error, and only such a model.
    bool infers = true;
    try {
      (void)mixlab::infer_shapes(model.spec, policy);
    } catch (const mixlab::SpecError&) {
      infers = false;
    }
    if (infers) unexpected_exception("export_keras_json of a model whose shapes infer", e);
  } catch (const std::exception& e) {
    unexpected_exception("export_keras_json / import_keras_json of an imported spec", e);
  }
  try {
    (void)mixlab::infer_shapes(model.spec, policy);
  } catch (const mixlab::SpecError&) {
  } catch (const std::exception& e) {
    unexpected_exception("infer_shapes", e);
  }
  return 0;
}
