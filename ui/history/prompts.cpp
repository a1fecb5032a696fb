#include "ui/history/prompts.h"

#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QMessageBox>
#include <QPointer>
#include <QWidget>

#include "ui/settings.h"

namespace mixlab::ui {

Prompts dialog_prompts(QWidget* parent) {
  // A guarded pointer: the prompts may outlive a dialog's parent in a test's teardown.
  const QPointer<QWidget> owner(parent);
  Prompts prompts;
  prompts.confirm = [owner](const QString& title, const QString& question) {
    return QMessageBox::question(owner, title, question, QMessageBox::Yes | QMessageBox::Cancel,
                                 QMessageBox::Cancel) == QMessageBox::Yes;
  };
  prompts.text = [owner](const QString& title, const QString& label, const QString& text,
                         bool multi_line) -> std::optional<QString> {
    bool ok = false;
    const QString answer =
        multi_line ? QInputDialog::getMultiLineText(owner, title, label, text, &ok)
                   : QInputDialog::getText(owner, title, label, QLineEdit::Normal, text, &ok);
    if (!ok) return std::nullopt;
    return answer;
  };
  prompts.save_file = [owner](const QString& title, const QString& suggested_name,
                              const QString& filters) {
    QString folder = settings::kLastDirectory.get();
    if (folder.isEmpty()) folder = QDir::homePath();
    const QString file =
        QFileDialog::getSaveFileName(owner, title, QDir(folder).filePath(suggested_name), filters);
    if (!file.isEmpty()) settings::kLastDirectory.set(QFileInfo(file).absolutePath());
    return file;
  };
  return prompts;
}

}  // namespace mixlab::ui
