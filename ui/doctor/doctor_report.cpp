#include "ui/doctor/doctor_report.h"

#include <string>

#include "app/store/csv_export.h"
#include "engine/doctor/report_json.h"

namespace mixlab::ui {

void write_findings_csv(std::ostream& out, std::span<const doctor::Finding> findings) {
  constexpr std::string_view kRecordEnd = "\r\n";
  out << "id,severity,layers,message,suggestion,predicted_gain" << kRecordEnd;
  for (const doctor::Finding& f : findings) {
    std::string layers;
    for (const int l : f.layers) {
      if (!layers.empty()) layers += ';';
      layers += std::to_string(l);
    }
    out << store::csv_field(f.id) << ',' << store::csv_field(to_string(f.severity)) << ','
        << store::csv_field(layers) << ',' << store::csv_field(f.message) << ','
        << store::csv_field(f.suggestion) << ','
        << (f.predicted_gain > 0 ? store::csv_number(f.predicted_gain) : std::string())
        << kRecordEnd;
  }
}

std::filesystem::path findings_csv_path(const std::filesystem::path& json_path) {
  std::filesystem::path csv = json_path;
  csv.replace_filename(json_path.stem().string() + "-findings.csv");
  return csv;
}

void save_doctor_report(const doctor::Diagnosis& diagnosis,
                        const std::filesystem::path& json_path) {
  const std::string json = doctor::to_json(diagnosis).dump(2) + "\n";
  store::write_file_atomically(json_path, [&](std::ostream& out) { out << json; });
  store::write_file_atomically(findings_csv_path(json_path), [&](std::ostream& out) {
    write_findings_csv(out, diagnosis.findings);
  });
}

}  // namespace mixlab::ui
