// Keras models in and out of the workbench, as a user does it: File > Import Keras model… on a
// .keras archive (its policy reaches the run panel, its weights the run, its unmodelled fields a
// warning box), dropping a Keras JSON file on the window, the weights dropped once the layers'
// shapes change, and File > Export as… in each format.
#include <QAction>
#include <QApplication>
#include <QMessageBox>
#include <QMimeData>
#include <QSignalSpy>
#include <QTest>
#include <QUrl>

#include "app/store/safe_file.h"
#include "engine/interop/keras_model.h"
#include "tests/interop/keras_files.h"
#include "ui/editor/document_actions.h"
#include "ui/editor/layer_commands.h"
#include "ui/editor/model_document.h"
#include "ui/editor/model_export.h"
#include "ui/main_window.h"
#include "ui/run/run_panel.h"

namespace mixlab::ui {

using test::keras3_layer;

namespace {

// Input 16 -> Dense 8 relu (HeNormal kernel: a warning) -> Dense 4, softmax kept in float32.
std::string config_json() {
  return test::keras3_sequential(
      {keras3_layer("InputLayer", R"("batch_shape": [null, 4, 4, 1], "name": "input_layer")"),
       keras3_layer("Flatten", R"("name": "flatten")"),
       keras3_layer("Dense", R"("name": "hidden", "units": 8, "activation": "relu",
                    "kernel_initializer": {"module": "keras.initializers", "class_name":
                    "HeNormal", "config": {"seed": null}})"),
       keras3_layer("Dense", R"("name": "out", "units": 4, "activation": "softmax",
                    "dtype": "float32")")},
      "mixed_bfloat16");
}

std::vector<float> filled(std::size_t n, float v) {
  return std::vector<float>(n, v);
}

}  // namespace

class KerasImportTest : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<test::TempDir> dir_;
  std::unique_ptr<MainWindow> window_;

  QString path(const std::string& name) const {
    return QString::fromStdString((*dir_ / name).string());
  }
  QString write_archive() {
    test::write_h5(*dir_ / "w.h5", {{"layers/dense/vars/0", {16, 8}, filled(128, 0.5f)},
                                    {"layers/dense/vars/1", {8}, filled(8, 0.25f)},
                                    {"layers/dense_1/vars/0", {8, 4}, filled(32, -1.0f)},
                                    {"layers/dense_1/vars/1", {4}, filled(4, 0.0f)}});
    test::write_zip(*dir_ / "net.keras", {{"config.json", config_json()},
                                          {"metadata.json", "{}"},
                                          {"model.weights.h5", test::read_bytes(*dir_ / "w.h5")}});
    return path("net.keras");
  }

 private slots:
  void init() {
    dir_ = std::make_unique<test::TempDir>();
    window_ = std::make_unique<MainWindow>(*dir_ / "runs.sqlite");
    QVERIFY(window_->open_model(QStringLiteral("fashion-mlp")));
    window_->run_panel()->set_precision(Policy::float32);
    window_->show();
  }
  void cleanup() {
    window_.reset();
    dir_.reset();
  }

  void import_action_reads_a_keras_archive_with_policy_weights_and_warnings() {
    const QString file = write_archive();
    DocumentActions::Prompts prompts;
    prompts.import_path = [&](const QString&) { return file; };
    prompts.ask_save = [](const QString&) { return QMessageBox::Discard; };
    window_->document_actions()->set_prompts(prompts);
    window_->document_actions()->import_action()->trigger();

    ModelDocument* doc = window_->document();
    QCOMPARE(doc->spec().layers.size(), std::size_t{3});
    QCOMPARE(doc->spec().layers[1].units, 8);
    QVERIFY(doc->spec().layers[2].force_float32);
    // A new, unsaved model named after the file: Save never writes over the Keras file.
    QVERIFY(doc->file_path().isEmpty());
    QCOMPARE(doc->display_name(), QStringLiteral("net.keras"));
    // The file's policy is the run's.
    QCOMPARE(window_->run_panel()->precision(), Policy::mixed_bfloat16);
    QCOMPARE(doc->policy(), Policy::mixed_bfloat16);
    // Its weights start the run while the layers keep their shapes.
    const auto weights = doc->initial_weights();
    QVERIFY(weights != nullptr);
    QCOMPARE(weights->layers.size(), std::size_t{2});
    QCOMPARE(weights->layers[0].kernel, filled(128, 0.5f));
    // What was not modelled is said, without blocking the window.
    QMessageBox* box = nullptr;
    QTRY_VERIFY((box = window_->findChild<QMessageBox*>(QStringLiteral("ImportWarnings"))));
    QVERIFY(box->informativeText().contains(QStringLiteral("HeNormal")));
    box->close();

    // A change of a layer's parameters drops the weights; undo brings them back.
    LayerSpec wider = doc->spec().layers[1];
    wider.units = 9;
    doc->undo_stack()->push(new EditLayerCommand(doc, 1, LayerField::units, wider));
    QVERIFY(doc->initial_weights() == nullptr);
    doc->undo_stack()->undo();
    QVERIFY(doc->initial_weights() != nullptr);
    // A change that keeps the shapes keeps them.
    LayerSpec renamed = doc->spec().layers[1];
    renamed.name = "renamed";
    doc->undo_stack()->push(new EditLayerCommand(doc, 1, LayerField::name, renamed));
    QVERIFY(doc->initial_weights() != nullptr);
  }

  void a_keras_json_dropped_on_the_window_opens() {
    const std::string json =
        export_keras_json(import_keras_json(config_json()).spec, Policy::mixed_float16);
    store::write_file_atomically(*dir_ / "dropped.json", [&](std::ostream& out) { out << json; });
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(path("dropped.json")), QUrl::fromLocalFile("/x/a.txt")});
    QCOMPARE(MainWindow::droppable_models(&mime), QStringList{path("dropped.json")});
    QMimeData text;
    text.setText(QStringLiteral("not a file"));
    QVERIFY(MainWindow::droppable_models(&text).isEmpty());

    DocumentActions::Prompts prompts;
    prompts.ask_save = [](const QString&) { return QMessageBox::Discard; };
    window_->document_actions()->set_prompts(prompts);
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(window_.get(), &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(window_.get(), &drop);
    QCOMPARE(window_->document()->display_name(), QStringLiteral("dropped.json"));
    QCOMPARE(window_->document()->spec().layers.size(), std::size_t{3});
    QCOMPARE(window_->run_panel()->precision(), Policy::mixed_float16);
    QVERIFY(window_->document()->initial_weights() == nullptr);  // JSON has no weights
  }

  void a_bad_keras_file_names_the_problem_and_keeps_the_model() {
    test::write_zip(*dir_ / "bad.keras",
                    {{"config.json", test::keras3_sequential({keras3_layer("Lambda", R"("name":
                                                              "scale")")})}});
    QString shown;
    DocumentActions::Prompts prompts;
    prompts.show_error = [&](const QString&, const QString& message) { shown = message; };
    window_->document_actions()->set_prompts(prompts);
    const ModelSpec before = window_->document()->spec();
    QVERIFY(!window_->document_actions()->open_file(path("bad.keras")));
    QVERIFY2(shown.contains(QStringLiteral("layer 0 'scale' (Lambda)")), qPrintable(shown));
    QVERIFY2(shown.contains(QStringLiteral("Rescaling")), qPrintable(shown));
    QCOMPARE(window_->document()->spec(), before);
  }

  void export_as_writes_each_format() {
    ModelExport* exporter = window_->model_export();
    const ModelSpec spec = window_->document()->spec();
    struct Case {
      ModelExport::Format format;
      std::string file;
      const char* must_contain;
    };
    for (const Case& c : {Case{ModelExport::Format::keras_json, "m.json", "\"Sequential\""},
                          Case{ModelExport::Format::keras_script, "m_keras.py", "import keras"},
                          Case{ModelExport::Format::pytorch_script, "m_torch", "import torch"},
                          Case{ModelExport::Format::mixlab_json, "m_mixlab.json", "\"layers\""}}) {
      exporter->set_prompt([&](const QString&) { return std::pair{path(c.file), c.format}; });
      QSignalSpy done(exporter, &ModelExport::exported);
      exporter->export_action()->trigger();
      QCOMPARE(done.count(), 1);
      // A name without a suffix gets the format's.
      const std::string written =
          c.format == ModelExport::Format::pytorch_script ? c.file + ".py" : c.file;
      const std::string text = test::read_bytes(*dir_ / written);
      QVERIFY2(text.find(c.must_contain) != std::string::npos, c.must_contain);
      if (c.format == ModelExport::Format::keras_json) {
        QCOMPARE(import_keras_json(text).spec, spec);
      }
    }
    // A folder that does not exist: the error is shown, nothing is written.
    exporter->set_prompt([&](const QString&) {
      return std::pair{path("no-such-folder/m.json"), ModelExport::Format::keras_json};
    });
    QSignalSpy failed(exporter, &ModelExport::error);
    exporter->export_action()->trigger();
    QCOMPARE(failed.count(), 1);
  }
};

}  // namespace mixlab::ui

QTEST_MAIN(mixlab::ui::KerasImportTest)
#include "keras_import_test.moc"
