#include "ui/editor/document_actions.h"

#include <QAction>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QStandardPaths>
#include <QWidget>

#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"
#include "resources/builtin_models.h"
#include "ui/editor/model_document.h"
#include "ui/settings.h"

namespace mixlab::ui {
namespace {

const QString kModelFilter = QStringLiteral("*.json *.keras");
const QString kKerasFilter = QStringLiteral("*.keras *.json");

QString text_of(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

}  // namespace

DocumentActions::DocumentActions(ModelDocument* doc, QWidget* dialog_parent)
    : QObject(dialog_parent), doc_(doc), dialog_parent_(dialog_parent) {
  prompts_ = default_prompts();
  create_actions();
  fill_templates_menu();
}

DocumentActions::~DocumentActions() {
  // Without a dialog parent nothing else owns the menu.
  if (templates_ != nullptr && templates_->parent() == nullptr) delete templates_;
}

QAction* DocumentActions::new_action() const {
  return new_;
}
QAction* DocumentActions::open_action() const {
  return open_;
}

QAction* DocumentActions::import_action() const {
  return import_;
}
QAction* DocumentActions::save_action() const {
  return save_;
}
QAction* DocumentActions::save_as_action() const {
  return save_as_;
}
QMenu* DocumentActions::templates_menu() const {
  return templates_;
}

void DocumentActions::set_prompts(Prompts prompts) {
  if (prompts.ask_save) prompts_.ask_save = std::move(prompts.ask_save);
  if (prompts.open_path) prompts_.open_path = std::move(prompts.open_path);
  if (prompts.import_path) prompts_.import_path = std::move(prompts.import_path);
  if (prompts.save_path) prompts_.save_path = std::move(prompts.save_path);
  if (prompts.show_error) prompts_.show_error = std::move(prompts.show_error);
}

DocumentActions::Prompts DocumentActions::default_prompts() {
  Prompts p;
  const QString filter = tr("Model files (%1)").arg(kModelFilter);
  p.ask_save = [this](const QString& name) {
    QMessageBox box(QMessageBox::Question, tr("Save changes?"),
                    tr("The model \"%1\" has changes that are not saved.").arg(name),
                    QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, dialog_parent_);
    box.setInformativeText(tr("Save them before going on?"));
    box.setDefaultButton(QMessageBox::Save);
    return static_cast<QMessageBox::StandardButton>(box.exec());
  };
  p.open_path = [this, filter](const QString& dir) {
    return QFileDialog::getOpenFileName(dialog_parent_, tr("Open model"), dir, filter);
  };
  p.import_path = [this](const QString& dir) {
    return QFileDialog::getOpenFileName(dialog_parent_, tr("Import Keras model"), dir,
                                        tr("Keras models (%1)").arg(kKerasFilter));
  };
  p.save_path = [this](const QString& suggested) {
    return QFileDialog::getSaveFileName(dialog_parent_, tr("Save model as"), suggested,
                                        tr("MixLab model files (*.json)"));
  };
  p.show_error = [this](const QString& title, const QString& message) {
    QMessageBox::warning(dialog_parent_, title, message);
  };
  return p;
}

void DocumentActions::create_actions() {
  new_ = new QAction(tr("&New"), this);
  new_->setShortcut(QKeySequence::New);
  new_->setToolTip(tr("Start a new, empty model"));
  connect(new_, &QAction::triggered, this, [this] {
    if (maybe_save()) doc_->reset(ModelDocument::new_model_spec());
  });

  open_ = new QAction(tr("&Open…"), this);
  open_->setShortcut(QKeySequence::Open);
  open_->setToolTip(tr("Open a model file (MixLab or Keras JSON, .keras)"));
  connect(open_, &QAction::triggered, this, [this] {
    if (!maybe_save()) return;
    const QString path = prompts_.open_path(dialog_directory());
    if (!path.isEmpty()) open_file(path);
  });

  import_ = new QAction(tr("&Import Keras model…"), this);
  import_->setShortcut(QKeySequence(tr("Ctrl+I")));
  import_->setToolTip(tr("A Keras 3 or tf.keras 2 model (.keras with its weights, or JSON)"));
  connect(import_, &QAction::triggered, this, [this] {
    if (!maybe_save()) return;
    const QString path = prompts_.import_path(dialog_directory());
    if (!path.isEmpty()) open_file(path);
  });

  save_ = new QAction(tr("&Save"), this);
  save_->setShortcut(QKeySequence::Save);
  save_->setToolTip(tr("Save the model to its file"));
  connect(save_, &QAction::triggered, this, [this] { save(); });

  save_as_ = new QAction(tr("Save &As…"), this);
  save_as_->setShortcut(QKeySequence::SaveAs);
  save_as_->setToolTip(tr("Save the model to a new file"));
  connect(save_as_, &QAction::triggered, this, [this] { save_as(); });
}

void DocumentActions::fill_templates_menu() {
  templates_ = new QMenu(tr("&Templates"), dialog_parent_);
  templates_->setToolTip(tr("Start from one of the example models"));
  templates_->setToolTipsVisible(true);
  for (std::string_view name : builtin_model_names()) {
    const QString qname = text_of(name);
    QAction* action = templates_->addAction(qname);
    action->setObjectName(QStringLiteral("template:") + qname);
    try {
      const ModelSpec spec = parse_model_json(*builtin_model_json(name), name);
      action->setToolTip(tr("%1 layers, input %2")
                             .arg(spec.layers.size())
                             .arg(text_of(format_shape(spec.input_shape))));
    } catch (const std::exception& e) {
      action->setToolTip(QString::fromStdString(e.what()));  // open_template reports it
    }
    connect(action, &QAction::triggered, this, [this, qname] {
      if (maybe_save()) open_template(qname);
    });
  }
}

bool DocumentActions::maybe_save() {
  if (!doc_->is_modified()) return true;
  switch (prompts_.ask_save(doc_->display_name())) {
    case QMessageBox::Save:
      return save();
    case QMessageBox::Discard:
      return true;
    default:
      return false;
  }
}

bool DocumentActions::open_template(const QString& builtin_name) {
  const std::string name = builtin_name.toStdString();
  const auto json = builtin_model_json(name);
  if (!json) {
    report(tr("Cannot open template"), tr("There is no built-in model \"%1\".").arg(builtin_name));
    return false;
  }
  try {
    doc_->reset(parse_model_json(*json, name), {}, builtin_name);
  } catch (const std::exception& e) {
    report(tr("Cannot open template"), QString::fromStdString(e.what()));
    return false;
  }
  // The next start restores this template, not an older file.
  settings::kLastTemplate.set(builtin_name);
  settings::kLastModelFile.reset();
  return true;
}

bool DocumentActions::open_file(const QString& path) {
  QString reason;
  if (!doc_->load(path, &reason)) {
    report(tr("Cannot open model"),
           tr("Cannot open the model file %1:\n%2").arg(QDir::toNativeSeparators(path), reason));
    return false;
  }
  remember_file(path);
  return true;
}

bool DocumentActions::save() {
  if (doc_->file_path().isEmpty()) return save_as();
  return save_to(doc_->file_path());
}

bool DocumentActions::save_as() {
  QString suggested = doc_->file_path();
  if (suggested.isEmpty()) {
    // A template or a new model: the model's name (a template's is the template's), in the
    // last directory used.
    QString base = QString::fromStdString(doc_->spec().name);
    if (base.isEmpty()) base = QStringLiteral("model");
    suggested = QDir(dialog_directory()).filePath(base + QStringLiteral(".json"));
  }
  QString path = prompts_.save_path(suggested);
  if (path.isEmpty()) return false;
  if (QFileInfo(path).suffix().isEmpty()) path += QStringLiteral(".json");
  return save_to(path);
}

bool DocumentActions::save_to(const QString& path) {
  QString reason;
  if (!doc_->save(path, &reason)) {
    report(tr("Cannot save model"),
           tr("Cannot save the model to %1:\n%2").arg(QDir::toNativeSeparators(path), reason));
    return false;
  }
  remember_file(path);
  return true;
}

void DocumentActions::report(const QString& title, const QString& message) {
  emit error(message);
  prompts_.show_error(title, message);
}

QString DocumentActions::dialog_directory() const {
  const QString dir = settings::kLastDirectory.get();
  if (!dir.isEmpty() && QFileInfo(dir).isDir()) return dir;
  return QStandardPaths::writableLocation(QStandardPaths::DocumentsLocation);
}

void DocumentActions::remember_file(const QString& path) {
  settings::kLastModelFile.set(QFileInfo(path).absoluteFilePath());
  settings::kLastDirectory.set(QFileInfo(path).absolutePath());
}

}  // namespace mixlab::ui

// The moc output compiled here rather than in the target's shared mocs_compilation.cpp, which
// would tie this file to every other moc'd header of mixlab_ui.
#include "moc_document_actions.cpp"
