// Helpers shared by the layer-stack editor's GUI tests.
#pragma once

#include <QString>
#include <vector>

#include "engine/spec/model_spec.h"

namespace mixlab::ui {
class ModelDocument;
}

namespace mixlab::ui::test {

// Names the application (QSettings go to the test's XDG_CONFIG_HOME) and sets the C locale, so
// that the numbers the editor formats are the same on every machine.
void init_test_application();

// A built-in model (resources/models), parsed.
ModelSpec builtin(const QString& name);
// The spec as its file would read: comparing these compares every field.
QString json_of(const ModelSpec& spec);
// Undoes `states.size() - 1` steps, checking each state on the way back, then redoes them all.
void check_undo_redo(ModelDocument& doc, const std::vector<QString>& states);

}  // namespace mixlab::ui::test
