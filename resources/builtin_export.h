// The Python text of the scripts `mixlab-cli export --to keras|pytorch` writes
// (resources/export/*.py, embedded at build time): templates with {{PLACEHOLDERS}} that
// engine/interop/script_export.cpp fills through engine/interop/python_code.h.
#pragma once

#include <string_view>

namespace mixlab {

// Imports, the settings block ({{MODEL_NAME}}, {{LOSS}}, ...: Python literals) and --steps.
std::string_view builtin_export_script_head();
// The dataset loader, the batch order and the ms/step report, the same in both scripts.
std::string_view builtin_export_data_loader();
// The Keras 3 script: {{SETTINGS}} (the head), {{DATA_LOADER}}, {{LAYERS}}.
std::string_view builtin_export_keras_template();
// The PyTorch script: {{SETTINGS}}, {{DATA_LOADER}}, {{LAYERS}}.
std::string_view builtin_export_pytorch_template();

}  // namespace mixlab
