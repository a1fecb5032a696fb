// The Doctor tab's "Save report…": the diagnosis as JSON (doctor::to_json, the keys
// mixlab-cli doctor --json writes) and, beside it, what mixlab-cli doctor --html,
// --findings-csv and --layers-csv write (app/store/doctor_export.h): one set of writers.
#pragma once

#include <filesystem>

#include "engine/doctor/diagnosis.h"

namespace mixlab::ui {

// report.json -> report-findings.csv, report-layers.csv, report.html
std::filesystem::path findings_csv_path(const std::filesystem::path& json_path);
std::filesystem::path layers_csv_path(const std::filesystem::path& json_path);
std::filesystem::path html_report_path(const std::filesystem::path& json_path);

// Writes the JSON to `json_path` and the other three beside it, each complete or not at all.
// Throws Error naming the file that could not be written.
void save_doctor_report(const doctor::Diagnosis& diagnosis, const std::filesystem::path& json_path);

}  // namespace mixlab::ui
