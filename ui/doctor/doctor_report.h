// The Doctor tab's "Save report…": the diagnosis as JSON (doctor::to_json, the keys
// mixlab-cli doctor --json writes) and its findings as CSV beside it, RFC 4180 (CRLF line ends,
// fields quoted where they must be), UTF-8, '.' as the decimal point whatever the locale.
#pragma once

#include <filesystem>
#include <ostream>
#include <span>

#include "engine/doctor/diagnosis.h"

namespace mixlab::ui {

// A header (id, severity, layers, message, suggestion, predicted_gain), then one row per
// finding; layers ';'-separated, predicted_gain empty when not predicted.
void write_findings_csv(std::ostream& out, std::span<const doctor::Finding> findings);

// report.json -> report-findings.csv
std::filesystem::path findings_csv_path(const std::filesystem::path& json_path);

// Writes the JSON to `json_path` and the findings' CSV to findings_csv_path(json_path), each
// complete or not at all. Throws Error naming the file that could not be written.
void save_doctor_report(const doctor::Diagnosis& diagnosis, const std::filesystem::path& json_path);

}  // namespace mixlab::ui
