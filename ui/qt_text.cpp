#include "ui/qt_text.h"

namespace mixlab::ui {

QString qt_text(std::string_view utf8) {
  return QString::fromUtf8(utf8.data(), static_cast<qsizetype>(utf8.size()));
}

}  // namespace mixlab::ui
