// A C locale whose decimal point is a comma (as the GUI runs under a German user's LC_NUMERIC),
// for tests of writers that must keep '.' whatever the locale.
#pragma once

#include <stdlib.h>

#include <clocale>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace mixlab::test {

// Sets LC_NUMERIC to a locale with a decimal comma: an installed one, else one that localedef
// builds under `dir` (found through LOCPATH). False where neither works; the caller skips.
inline bool use_comma_locale(const std::filesystem::path& dir) {
  for (const char* name : {"de_DE.UTF-8", "fr_FR.UTF-8", "de_DE.utf8"}) {
    if (std::setlocale(LC_NUMERIC, name) != nullptr) return true;
  }
  const std::filesystem::path locales = dir / "locales";
  std::filesystem::create_directories(locales);
  const std::string command =
      "localedef -i de_DE -f UTF-8 '" + (locales / "de_DE.UTF-8").string() + "' >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) return false;
  setenv("LOCPATH", locales.c_str(), 1);
  return std::setlocale(LC_NUMERIC, "de_DE.UTF-8") != nullptr;
}

}  // namespace mixlab::test
