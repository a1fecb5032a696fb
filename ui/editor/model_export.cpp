#include "ui/editor/model_export.h"

#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <array>
#include <ostream>

#include "app/store/safe_file.h"
#include "engine/interop/keras_model.h"
#include "engine/interop/script_export.h"
#include "ui/editor/model_document.h"

namespace mixlab::ui {
namespace {

constexpr std::array kFormats = {ModelExport::Format::keras_json, ModelExport::Format::keras_script,
                                 ModelExport::Format::pytorch_script,
                                 ModelExport::Format::mixlab_json};

QString suffix(ModelExport::Format format) {
  return format == ModelExport::Format::keras_script ||
                 format == ModelExport::Format::pytorch_script
             ? QStringLiteral(".py")
             : QStringLiteral(".json");
}

}  // namespace

ModelExport::ModelExport(ModelDocument* doc, std::function<RunConfig()> run_config,
                         QWidget* dialog_parent)
    : QObject(dialog_parent),
      doc_(doc),
      run_config_(std::move(run_config)),
      dialog_parent_(dialog_parent) {
  prompt_ = [this](const QString& suggested) {
    QStringList filters;
    for (const Format f : kFormats) filters << file_filter(f);
    QString chosen;
    const QString path = QFileDialog::getSaveFileName(dialog_parent_, tr("Export model as"),
                                                      suggested, filters.join(";;"), &chosen);
    Format format = Format::keras_json;
    for (const Format f : kFormats) {
      if (file_filter(f) == chosen) format = f;
    }
    return std::pair{path, format};
  };
  action_ = new QAction(tr("&Export as…"), this);
  action_->setShortcut(QKeySequence(tr("Ctrl+E")));
  action_->setToolTip(
      tr("Write the model as Keras 3 JSON, or as a runnable Keras or PyTorch script with the run "
         "settings"));
  connect(action_, &QAction::triggered, this, &ModelExport::run);
}

QAction* ModelExport::export_action() const {
  return action_;
}

void ModelExport::set_prompt(Prompt prompt) {
  prompt_ = std::move(prompt);
}

QString ModelExport::file_filter(Format format) {
  switch (format) {
    case Format::keras_json:
      return tr("Keras 3 JSON (*.json)");
    case Format::keras_script:
      return tr("Keras script (*.py)");
    case Format::pytorch_script:
      return tr("PyTorch script (*.py)");
    case Format::mixlab_json:
      return tr("MixLab model (*.json)");
  }
  return {};
}

bool ModelExport::export_to(const QString& path, Format format, QString* error) const {
  try {
    const ModelSpec& spec = doc_->spec();
    RunConfig config = run_config_();
    std::string text;
    switch (format) {
      case Format::keras_json:
        text = export_keras_json(spec, config.precision);
        break;
      case Format::mixlab_json:
        text = to_json(spec) + "\n";
        break;
      case Format::keras_script:
      case Format::pytorch_script:
        text = export_script(
            format == Format::keras_script ? ScriptKind::keras : ScriptKind::pytorch, spec, config,
            ScriptOptions{.steps = config.steps > 0 ? config.steps : 100});
        break;
    }
    store::write_file_atomically(std::filesystem::path(QFile::encodeName(path).toStdString()),
                                 [&](std::ostream& out) { out << text; });
    return true;
  } catch (const std::exception& e) {
    if (error != nullptr) *error = QString::fromStdString(e.what());
    return false;
  }
}

void ModelExport::run() {
  QString base = QString::fromStdString(doc_->spec().name);
  if (base.isEmpty()) base = QStringLiteral("model");
  const QString dir =
      doc_->file_path().isEmpty() ? QDir::homePath() : QFileInfo(doc_->file_path()).absolutePath();
  auto [path, format] = prompt_(QDir(dir).filePath(base + QStringLiteral("-keras.json")));
  if (path.isEmpty()) return;
  if (QFileInfo(path).suffix().isEmpty()) path += suffix(format);
  QString reason;
  if (!export_to(path, format, &reason)) {
    const QString message =
        tr("Cannot export to %1:\n%2").arg(QDir::toNativeSeparators(path), reason);
    emit error(message);
    return;
  }
  emit exported(tr("Exported %1 as %2").arg(QDir::toNativeSeparators(path), file_filter(format)));
}

}  // namespace mixlab::ui
