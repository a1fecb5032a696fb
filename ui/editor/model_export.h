// File > Export as…: the model out to another framework (Keras 3 JSON, a runnable Keras or
// PyTorch script with the run panel's settings) or as MixLab JSON, through engine/interop. The
// file dialog's filter picks the format; the file is written whole or not at all.
#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <functional>
#include <utility>

#include "engine/train/run_types.h"

class QAction;
class QWidget;

namespace mixlab::ui {

class ModelDocument;

class ModelExport : public QObject {
  Q_OBJECT

 public:
  enum class Format { keras_json, keras_script, pytorch_script, mixlab_json };
  // Where to write and in which format, suggesting `suggested`; an empty path when cancelled.
  using Prompt = std::function<std::pair<QString, Format>(const QString& suggested)>;

  // `run_config` gives the settings a script takes (the run panel's).
  ModelExport(ModelDocument* doc, std::function<RunConfig()> run_config, QWidget* dialog_parent);

  QAction* export_action() const;  // Ctrl+E
  void set_prompt(Prompt prompt);  // tests: no dialog

  // Writes the model in `format` to `path`. False with *error set (the file is then unchanged).
  bool export_to(const QString& path, Format format, QString* error) const;
  static QString file_filter(Format format);

 signals:
  void exported(const QString& message);
  void error(const QString& message);

 private:
  void run();

  ModelDocument* doc_;
  std::function<RunConfig()> run_config_;
  QPointer<QWidget> dialog_parent_;
  Prompt prompt_;
  QAction* action_ = nullptr;
};

}  // namespace mixlab::ui
