#include "tests/ui/editor_test_support.h"

#include <QCoreApplication>
#include <QLocale>
#include <QTest>
#include <QUndoStack>

#include "resources/builtin_models.h"
#include "ui/editor/model_document.h"

namespace mixlab::ui::test {

void init_test_application() {
  QCoreApplication::setOrganizationName(QStringLiteral("MixLabTest"));
  QCoreApplication::setApplicationName(QStringLiteral("editor_test"));
  QLocale::setDefault(QLocale::c());
}

ModelSpec builtin(const QString& name) {
  const std::string n = name.toStdString();
  return parse_model_json(*builtin_model_json(n), n);
}

QString json_of(const ModelSpec& spec) {
  return QString::fromStdString(to_json(spec));
}

void check_undo_redo(ModelDocument& doc, const std::vector<QString>& states) {
  QUndoStack* stack = doc.undo_stack();
  for (std::size_t i = states.size() - 1; i > 0; --i) {
    QVERIFY(stack->canUndo());
    stack->undo();
    QCOMPARE(json_of(doc.spec()), states[i - 1]);
  }
  for (std::size_t i = 1; i < states.size(); ++i) {
    QVERIFY(stack->canRedo());
    stack->redo();
    QCOMPARE(json_of(doc.spec()), states[i]);
  }
}

}  // namespace mixlab::ui::test
