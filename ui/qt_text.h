// The engine's text (UTF-8 std::string and std::string_view) as Qt's, in one place.
#pragma once

#include <QString>
#include <string_view>

namespace mixlab::ui {

QString qt_text(std::string_view utf8);

}  // namespace mixlab::ui
