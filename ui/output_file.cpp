#include "ui/output_file.h"

#include <QFile>
#include <exception>
#include <filesystem>

#include "app/store/safe_file.h"

namespace mixlab::ui {

QString output_refusal(const QString& path) {
  try {
    store::check_output_target(std::filesystem::path(QFile::encodeName(path).toStdString()));
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

}  // namespace mixlab::ui
