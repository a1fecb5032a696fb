// The editor's files: save/load round trips, bad files reported with the file's name and the
// engine's message, the save-changes prompt, and the templates (every built-in model).
#include <sys/stat.h>

#include <QAction>
#include <QFile>
#include <QMenu>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <vector>

#include "app/store/run_store.h"
#include "engine/spec/model_spec.h"
#include "resources/builtin_models.h"
#include "tests/ui/editor_test_support.h"
#include "ui/editor/document_actions.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/model_document.h"
#include "ui/settings.h"

namespace mixlab::ui {
namespace {

using test::builtin;
using test::check_undo_redo;
using test::json_of;
QString write_file(const QTemporaryDir& dir, const QString& name, const QByteArray& text) {
  const QString path = dir.filePath(name);
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly)) return {};
  file.write(text);
  return path;
}

}  // namespace

class DocumentActionsTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() { test::init_test_application(); }

  void save_and_load_round_trip() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    ModelDocument doc;
    doc.reset(builtin("cifar100-convnet"), {}, QStringLiteral("cifar100-convnet"));
    LayerSpec dense = doc.spec().layers[6];
    dense.units = 2048;
    doc.undo_stack()->push(new EditLayerCommand(&doc, 6, LayerField::units, dense));
    QVERIFY(doc.is_modified());

    QSignalSpy paths(&doc, &ModelDocument::file_path_changed);
    QSignalSpy modified(&doc, &ModelDocument::modified_changed);
    const QString path = dir.filePath(QStringLiteral("convnet.json"));
    QString error;
    QVERIFY2(doc.save(path, &error), qPrintable(error));
    QVERIFY(!doc.is_modified());
    QCOMPARE(modified.count(), 1);
    QCOMPARE(paths.count(), 1);
    QCOMPARE(doc.file_path(), path);
    QCOMPARE(doc.display_name(), QStringLiteral("convnet.json"));
    QVERIFY(!QFile::exists(path + QStringLiteral(".tmp")));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(file.readAll()), json_of(doc.spec()));

    ModelDocument loaded;
    QVERIFY2(loaded.load(path, &error), qPrintable(error));
    QCOMPARE(json_of(loaded.spec()), json_of(doc.spec()));
    QVERIFY(loaded.spec() == doc.spec());
    QCOMPARE(loaded.file_path(), path);
    QVERIFY(!loaded.is_modified());
    QCOMPARE(loaded.undo_stack()->count(), 0);

    // Saving over the file replaces it.
    doc.undo_stack()->undo();
    QVERIFY(doc.is_modified());
    QVERIFY2(doc.save(path, &error), qPrintable(error));
    QVERIFY(loaded.load(path, &error));
    QCOMPARE(loaded.spec(), builtin("cifar100-convnet"));

    // A directory that does not exist: an error naming the file, and the model stays as it was.
    const QString bad = dir.filePath(QStringLiteral("missing/x.json"));
    QVERIFY(!doc.save(bad, &error));
    QVERIFY2(error.contains(bad), qPrintable(error));
    QCOMPARE(doc.file_path(), path);
  }

  // Issue 25: the editor never saves a model over a run database or one of its side files
  // (store::check_output_target, the guard of every output).
  void save_refuses_a_run_database() {
    QTemporaryDir dir;
    const QString db = dir.filePath(QStringLiteral("runs.sqlite"));
    store::RunStore::open(QFile::encodeName(db).toStdString());
    QFile file(db);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray before = file.readAll();
    file.close();
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    for (const char* name : {"runs.sqlite", "runs.sqlite-wal"}) {
      QString error;
      QVERIFY(!doc.save(dir.filePath(QString::fromLatin1(name)), &error));
      QVERIFY2(error.contains(QStringLiteral("run database")), qPrintable(error));
    }
    QVERIFY(file.open(QIODevice::ReadOnly));
    QCOMPARE(file.readAll(), before);
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("runs.sqlite-wal"))));
    QVERIFY(doc.file_path().isEmpty());
  }

  void bad_files_give_an_error_naming_the_file() {
    QTemporaryDir dir;
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    const QString before = json_of(doc.spec());
    DocumentActions actions(&doc, nullptr);
    QStringList shown;
    DocumentActions::Prompts prompts;
    prompts.show_error = [&](const QString&, const QString& message) { shown << message; };
    actions.set_prompts(prompts);
    QSignalSpy errors(&actions, &DocumentActions::error);

    const QString not_json = write_file(dir, QStringLiteral("bad.json"), "{ not json");
    QVERIFY(!actions.open_file(not_json));
    QCOMPARE(errors.count(), 1);
    QString message = errors.at(0).at(0).toString();
    QVERIFY2(message.contains(not_json), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("invalid JSON")), qPrintable(message));
    QCOMPARE(shown, QStringList{message});
    QCOMPARE(json_of(doc.spec()), before);
    QCOMPARE(doc.display_name(), QStringLiteral("fashion-mlp"));

    const QString bad_layer =
        write_file(dir, QStringLiteral("layer.json"),
                   R"({"input": {"shape": [4]}, "layers": [{"type": "Dense", "units": 0}]})");
    QVERIFY(!actions.open_file(bad_layer));
    message = errors.at(1).at(0).toString();
    QVERIFY2(message.contains(bad_layer), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("layer 0 (Dense): units 0 is out of range")),
             qPrintable(message));

    const QString missing = dir.filePath(QStringLiteral("nothing.json"));
    QVERIFY(!actions.open_file(missing));
    QVERIFY(errors.at(2).at(0).toString().contains(missing));
    QCOMPARE(shown.size(), 3);
    QCOMPARE(json_of(doc.spec()), before);

    // Hostile files a remembered "last model" could be: "[" x 100000 (it crashed the GUI on
    // every start), a FIFO (it hung it), /dev/zero. Each an error naming it; the model stays.
    const QString deep =
        write_file(dir, QStringLiteral("deep.json"), QByteArray(100000, '['));
    QVERIFY(!actions.open_file(deep));
    QVERIFY2(errors.at(3).at(0).toString().contains(QStringLiteral("nested deeper")),
             qPrintable(errors.at(3).at(0).toString()));
    const QString fifo = dir.filePath(QStringLiteral("fifo.json"));
    QCOMPARE(mkfifo(QFile::encodeName(fifo).constData(), 0644), 0);
    QVERIFY(!actions.open_file(fifo));
    QVERIFY(errors.at(4).at(0).toString().contains(QStringLiteral("not a regular file")));
    QVERIFY(!actions.open_file(QStringLiteral("/dev/zero")));
    QVERIFY(errors.at(5).at(0).toString().contains(QStringLiteral("not a regular file")));
    QCOMPARE(json_of(doc.spec()), before);
  }

  void maybe_save_asks_when_modified() {
    QTemporaryDir dir;
    ModelDocument doc;
    doc.reset(builtin("fashion-mlp"), {}, QStringLiteral("fashion-mlp"));
    DocumentActions actions(&doc, nullptr);
    QMessageBox::StandardButton answer = QMessageBox::Cancel;
    QString save_path;
    int asked = 0;
    int asked_path = 0;
    DocumentActions::Prompts prompts;
    QString asked_name;
    prompts.ask_save = [&](const QString& name) {
      ++asked;
      asked_name = name;
      return answer;
    };
    QString suggested_path;
    prompts.save_path = [&](const QString& suggested) {
      ++asked_path;
      suggested_path = suggested;
      return save_path;
    };
    prompts.show_error = [](const QString&, const QString& message) { QFAIL(qPrintable(message)); };
    actions.set_prompts(prompts);

    QVERIFY(actions.maybe_save());  // unmodified: nothing to ask
    QCOMPARE(asked, 0);
    doc.undo_stack()->push(new RemoveLayerCommand(&doc, 0));
    const QString edited = json_of(doc.spec());

    answer = QMessageBox::Cancel;
    QVERIFY(!actions.maybe_save());
    QCOMPARE(asked, 1);
    QCOMPARE(asked_name, QStringLiteral("fashion-mlp"));
    actions.new_action()->trigger();  // cancelled: the model stays
    QCOMPARE(json_of(doc.spec()), edited);

    answer = QMessageBox::Discard;
    QVERIFY(actions.maybe_save());
    QVERIFY(doc.is_modified());  // discarding is the caller's next step

    answer = QMessageBox::Save;
    save_path.clear();  // the file dialog cancelled
    QVERIFY(!actions.maybe_save());
    QCOMPARE(asked_path, 1);
    QVERIFY(suggested_path.endsWith(QStringLiteral("/fashion-mlp.json")));
    QVERIFY(doc.is_modified());

    save_path = dir.filePath(QStringLiteral("mlp"));
    QVERIFY(actions.maybe_save());
    const QString saved = dir.filePath(QStringLiteral("mlp.json"));  // suffix added
    QVERIFY(QFile::exists(saved));
    QVERIFY(!doc.is_modified());
    QCOMPARE(doc.file_path(), saved);
    QCOMPARE(settings::kLastModelFile.get(), saved);
    QCOMPARE(settings::kLastDirectory.get(), dir.path());

    // With a file, Save writes it without asking where.
    doc.undo_stack()->push(new RemoveLayerCommand(&doc, 0));
    QVERIFY(actions.maybe_save());
    QCOMPARE(asked_path, 2);  // no dialog this time
    ModelDocument reread;
    QString error;
    QVERIFY(reread.load(saved, &error));
    QCOMPARE(reread.spec(), doc.spec());

    // New after Discard.
    doc.undo_stack()->push(new RemoveLayerCommand(&doc, 0));
    answer = QMessageBox::Discard;
    actions.new_action()->trigger();
    QCOMPARE(doc.spec(), ModelDocument::new_model_spec());
    QCOMPARE(doc.display_name(), QStringLiteral("Untitled"));
    QVERIFY(doc.file_path().isEmpty());
    QVERIFY(!doc.is_modified());
  }

  void templates_load_every_builtin_model() {
    ModelDocument doc;
    DocumentActions actions(&doc, nullptr);
    QMessageBox::StandardButton answer = QMessageBox::Cancel;
    DocumentActions::Prompts prompts;
    prompts.ask_save = [&](const QString&) { return answer; };
    prompts.show_error = [](const QString&, const QString& message) { QFAIL(qPrintable(message)); };
    actions.set_prompts(prompts);

    QMenu* menu = actions.templates_menu();
    QVERIFY(menu != nullptr);
    const std::vector<std::string_view> names = builtin_model_names();
    QCOMPARE(menu->actions().size(), static_cast<qsizetype>(names.size()));
    QStringList texts;
    for (QAction* action : menu->actions()) texts << action->text();
    // PRODUCT.md's two user models.
    QVERIFY(texts.contains(QStringLiteral("cifar10-mlp")));
    QVERIFY(texts.contains(QStringLiteral("cifar100-convnet")));

    for (QAction* action : menu->actions()) {
      const QString name = action->text();
      QVERIFY(!action->toolTip().isEmpty());
      action->trigger();
      QCOMPARE(doc.spec(), builtin(name));
      QCOMPARE(doc.display_name(), name);
      QVERIFY(doc.file_path().isEmpty());
      QVERIFY(!doc.is_modified());
      QCOMPARE(settings::kLastTemplate.get(), name);
      QVERIFY(settings::kLastModelFile.get().isEmpty());
    }

    // A modified model is not replaced when the user cancels.
    doc.undo_stack()->push(new RemoveLayerCommand(&doc, 0));
    const QString edited = json_of(doc.spec());
    menu->actions().front()->trigger();
    QCOMPARE(json_of(doc.spec()), edited);
    answer = QMessageBox::Discard;
    menu->actions().front()->trigger();
    QCOMPARE(doc.spec(), builtin(menu->actions().front()->text()));

    QVERIFY(actions.new_action()->shortcut() == QKeySequence(QKeySequence::New));
    QVERIFY(actions.open_action()->shortcut() == QKeySequence(QKeySequence::Open));
    QVERIFY(actions.save_action()->shortcut() == QKeySequence(QKeySequence::Save));
    QVERIFY(actions.save_as_action()->shortcut() == QKeySequence(QKeySequence::SaveAs));
  }

  void unknown_template_is_an_error() {
    ModelDocument doc;
    DocumentActions actions(&doc, nullptr);
    DocumentActions::Prompts prompts;
    prompts.show_error = [](const QString&, const QString&) {};
    actions.set_prompts(prompts);
    QSignalSpy errors(&actions, &DocumentActions::error);
    QVERIFY(!actions.open_template(QStringLiteral("no-such-model")));
    QCOMPARE(errors.count(), 1);
    QVERIFY(errors.at(0).at(0).toString().contains(QStringLiteral("no-such-model")));
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::DocumentActionsTest)
#include "document_actions_test.moc"
