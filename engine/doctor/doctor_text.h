// Figures written for people, as the doctor's messages use them: "147 MB", "3.2 ms", "12%".
#pragma once

#include <string>

namespace mixlab::doctor {

std::string megabytes(double bytes);   // "147 MB", "0.6 MB", "12.4 GB" from 10 GB
std::string millis(double seconds);    // "3.21 ms", "0.042 ms"
std::string percent(double fraction);  // "12%"
std::string ratio(double value);       // "1.23x"
std::string count(double value);       // "12.3 M", "3,000"

// A finding's suggestion with its predicted gain, as the verdict and the CLI write it: "a larger
// batch (128) does more work per weight read (predicted gain 1.59x)"; a suggestion that ends in
// a parenthesis takes the gain inside it: "train at batch 64 or more (mixed then 1.30x faster
// than float32; predicted gain 1.59x)". No gain (0 or less): the suggestion alone.
std::string with_gain(const std::string& suggestion, double gain);

}  // namespace mixlab::doctor
