// File > New, Open, Import Keras model, Save, Save As and the built-in templates for a
// ModelDocument: the dialogs,
// the "save changes?" question, the remembered directory and model, and the error boxes.
//
// The modal dialogs go through Prompts, which tests replace so that nothing blocks on them.
#pragma once

#include <QMessageBox>
#include <QObject>
#include <QPointer>
#include <QString>
#include <functional>

class QAction;
class QMenu;
class QWidget;

namespace mixlab::ui {

class ModelDocument;

class DocumentActions : public QObject {
  Q_OBJECT

 public:
  // The modal parts. The defaults show Qt's dialogs over dialog_parent.
  struct Prompts {
    // "Save changes to <name>?": Save, Discard or Cancel.
    std::function<QMessageBox::StandardButton(const QString& name)> ask_save;
    // A model file to open, starting in `dir`; empty when cancelled.
    std::function<QString(const QString& dir)> open_path;
    // A Keras file to import (.keras, .json), starting in `dir`; empty when cancelled.
    std::function<QString(const QString& dir)> import_path;
    // Where to save, starting at `suggested` (a path); empty when cancelled.
    std::function<QString(const QString& suggested)> save_path;
    // Shows an error that error() also carries.
    std::function<void(const QString& title, const QString& message)> show_error;
  };

  DocumentActions(ModelDocument* doc, QWidget* dialog_parent);
  ~DocumentActions() override;

  QAction* new_action() const;      // QKeySequence::New
  QAction* open_action() const;     // QKeySequence::Open
  QAction* import_action() const;   // Ctrl+I: a Keras model (open_file() reads them too)
  QAction* save_action() const;     // QKeySequence::Save
  QAction* save_as_action() const;  // QKeySequence::SaveAs
  // One entry per built-in model (resources/builtin_models.h).
  QMenu* templates_menu() const;

  // Replaces the default dialogs (tests); a member left empty keeps its default.
  void set_prompts(Prompts prompts);

  // When the model is modified, asks whether to save it first. True when it is fine to go on:
  // unmodified, saved, or the changes discarded; false when cancelled or the save failed.
  bool maybe_save();
  // Loads a built-in model / a file into the document without asking maybe_save() (the actions
  // ask it first); remembers it for the next start. On failure shows the error and returns false.
  bool open_template(const QString& builtin_name);
  bool open_file(const QString& path);
  // Saves to the document's file, or asks where when it has none. False when cancelled or failed.
  bool save();
  bool save_as();

 signals:
  // A file could not be opened or saved; the message names the file and gives the engine's
  // reason.
  void error(const QString& message);

 private:
  void create_actions();
  void fill_templates_menu();
  void report(const QString& title, const QString& message);
  bool save_to(const QString& path);
  QString dialog_directory() const;
  void remember_file(const QString& path);
  Prompts default_prompts();

  ModelDocument* doc_;
  QPointer<QWidget> dialog_parent_;
  Prompts prompts_;
  QAction* new_ = nullptr;
  QAction* open_ = nullptr;
  QAction* import_ = nullptr;
  QAction* save_ = nullptr;
  QAction* save_as_ = nullptr;
  QPointer<QMenu> templates_;
};

}  // namespace mixlab::ui
