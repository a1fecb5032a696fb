// The questions the history and compare views ask the user, as replaceable functions: the
// application shows dialogs, tests answer directly.
#pragma once

#include <QString>
#include <functional>
#include <optional>

class QWidget;

namespace mixlab::ui {

struct Prompts {
  // A yes/no question; true to go on.
  std::function<bool(const QString& title, const QString& question)> confirm;
  // A line (or, with `multi_line`, lines) of text starting from `text`; nullopt when cancelled.
  std::function<std::optional<QString>(const QString& title, const QString& label,
                                       const QString& text, bool multi_line)>
      text;
  // A file to write, starting from `suggested_name` in the last folder used; `filters` as
  // QFileDialog takes them ("CSV (*.csv)"). Empty when cancelled.
  std::function<QString(const QString& title, const QString& suggested_name,
                        const QString& filters)>
      save_file;
};

// Dialogs (QMessageBox, QInputDialog, QFileDialog) over `parent`.
Prompts dialog_prompts(QWidget* parent);

}  // namespace mixlab::ui
