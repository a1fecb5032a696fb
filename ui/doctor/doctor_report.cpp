#include "ui/doctor/doctor_report.h"

#include <string>

#include "app/store/doctor_export.h"
#include "app/store/safe_file.h"
#include "engine/doctor/report_json.h"

namespace mixlab::ui {

namespace {
std::filesystem::path beside(const std::filesystem::path& json_path, const std::string& suffix) {
  std::filesystem::path path = json_path;
  path.replace_filename(json_path.stem().string() + suffix);
  return path;
}
}  // namespace

std::filesystem::path findings_csv_path(const std::filesystem::path& json_path) {
  return beside(json_path, "-findings.csv");
}

std::filesystem::path layers_csv_path(const std::filesystem::path& json_path) {
  return beside(json_path, "-layers.csv");
}

std::filesystem::path html_report_path(const std::filesystem::path& json_path) {
  return beside(json_path, ".html");
}

void save_doctor_report(const doctor::Diagnosis& diagnosis,
                        const std::filesystem::path& json_path) {
  const std::string json = doctor::to_json(diagnosis).dump(2) + "\n";
  store::write_file_atomically(json_path, [&](std::ostream& out) { out << json; });
  store::write_file_atomically(findings_csv_path(json_path), [&](std::ostream& out) {
    store::write_doctor_findings_csv(out, diagnosis);
  });
  store::write_file_atomically(layers_csv_path(json_path), [&](std::ostream& out) {
    store::write_doctor_layers_csv(out, diagnosis);
  });
  store::write_file_atomically(html_report_path(json_path), [&](std::ostream& out) {
    store::write_doctor_html(out, diagnosis);
  });
}

}  // namespace mixlab::ui
