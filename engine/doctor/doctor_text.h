// Figures written for people, as the doctor's messages use them: "147 MB", "3.2 ms", "12%".
#pragma once

#include <string>

namespace mixlab::doctor {

std::string megabytes(double bytes);   // "147 MB", "0.6 MB", "12.4 GB" from 10 GB
std::string millis(double seconds);    // "3.21 ms", "0.042 ms"
std::string percent(double fraction);  // "12%"
std::string ratio(double value);       // "1.23x"
std::string count(double value);       // "12.3 M", "3,000"

}  // namespace mixlab::doctor
