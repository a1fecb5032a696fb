// The doctor's HTML report and CSVs with hostile text (issue 25): a model's, a layer's and a
// device's name that would open a <script>, leave an attribute or start a spreadsheet formula
// appear only escaped; the page holds no tag but the report's own; numbers keep their '.'.
#include "app/store/doctor_export.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <clocale>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "app/store/csv_export.h"
#include "engine/spec/layer_text.h"
#include "tests/comma_locale.h"
#include "tests/doctor/doctor_test_support.h"

namespace mixlab::store {
namespace {

const std::string kScript = "</script><script>alert(1)</script>";
const std::string kImage = "\"><img src=x onerror=alert(1)>";
const std::string kQuote = "' onmouseover='alert(1)";

doctor::Diagnosis hostile_diagnosis() {
  doctor::DiagnosisInput input;
  input.spec = doctor::test::model(R"({
    "name": "m", "input": {"shape": [8, 8, 1]}, "loss": "sparse_categorical_crossentropy",
    "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 64, "activation": "relu"},
               {"type": "Dense", "units": 10, "activation": "softmax"}]})");
  input.spec.name = kScript + kImage + kQuote;
  input.spec.layers[0].name = kScript;
  input.spec.layers[1].name = kImage;
  input.spec.layers[2].name = "=cmd|' /C calc'!A0" + kQuote;
  input.device = doctor::test::round_gpu();
  input.device.name = kImage + kScript;
  input.device.sources[kScript] = kImage;
  return doctor::diagnose(input);
}

std::string html_escaped(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else if (c == '\'')
      out += "&#39;";
    else
      out += c;
  }
  return out;
}

// The name of every tag on the page: '<', an optional '/', then a letter or '!' and
// letters and digits. (Scanned by hand: GCC 12's -O1 sanitizer build warns inside <regex>.)
std::vector<std::string> tag_names(const std::string& page) {
  const auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  std::vector<std::string> names;
  for (std::size_t at = page.find('<'); at != std::string::npos; at = page.find('<', at + 1)) {
    std::size_t i = at + 1;
    if (i < page.size() && page[i] == '/') ++i;
    if (i >= page.size() || !(alpha(page[i]) || page[i] == '!')) continue;
    const std::size_t start = i++;
    while (i < page.size() && (alpha(page[i]) || digit(page[i]))) ++i;
    names.push_back(page.substr(start, i - start));
  }
  return names;
}

// Whether a table cell holds "N<point>NNN / N<point>NNN", the layer table's milliseconds.
bool has_milliseconds_cell(const std::string& page, char point) {
  const std::string cell = "<td class='n'>";
  const auto number = [&](std::size_t& i) {
    const std::size_t start = i;
    while (i < page.size() && page[i] >= '0' && page[i] <= '9') ++i;
    if (i == start || i >= page.size() || page[i] != point) return false;
    const std::size_t decimals = ++i;
    while (i < page.size() && page[i] >= '0' && page[i] <= '9') ++i;
    return i - decimals == 3;
  };
  for (std::size_t at = page.find(cell); at != std::string::npos; at = page.find(cell, at + 1)) {
    std::size_t i = at + cell.size();
    if (!number(i) || page.compare(i, 3, " / ") != 0) continue;
    i += 3;
    if (number(i) && i < page.size() && page[i] == '<') return true;
  }
  return false;
}

TEST(DoctorExport, HtmlHoldsHostileNamesOnlyEscaped) {
  std::ostringstream out;
  write_doctor_html(out, hostile_diagnosis());
  const std::string page = out.str();
  for (const std::string& text : {kScript, kImage, kQuote}) {
    EXPECT_EQ(page.find(text), std::string::npos) << "raw: " << text;
    EXPECT_NE(page.find(html_escaped(text)), std::string::npos) << "escaped: " << text;
  }
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("onmouseover='"), std::string::npos);

  // Every tag on the page is one the report writes itself.
  const std::set<std::string> own = {"!DOCTYPE", "html", "head", "meta", "title", "style",
                                     "body",     "h1",   "h2",   "p",    "table", "tr",
                                     "th",       "td",   "svg",  "rect", "text",  "polyline",
                                     "circle",   "ul",   "li"};
  for (const std::string& name : tag_names(page)) {
    EXPECT_TRUE(own.contains(name)) << "a tag the report does not write: " << name;
  }
}

// The report's numbers keep their '.' under a locale with a decimal comma (the GUI's "Save
// report" runs under the user's LC_NUMERIC).
TEST(DoctorExport, HtmlNumbersIgnoreTheLocale) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("mixlab-doctor-export-" + std::to_string(getpid()));
  const bool comma = test::use_comma_locale(dir);
  if (!comma) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "no locale with a decimal comma";
  }
  std::ostringstream out;
  write_doctor_html(out, hostile_diagnosis());
  std::setlocale(LC_NUMERIC, "C");
  std::filesystem::remove_all(dir);
  const std::string page = out.str();
  // The layer table's "forward / backward" milliseconds, three decimals each.
  EXPECT_TRUE(has_milliseconds_cell(page, '.')) << page;
  EXPECT_FALSE(has_milliseconds_cell(page, ',')) << page;
}

// The CSVs quote what must be quoted and defuse formulas: each record has its header's
// fields, and the hostile layer name reads back whole.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        quoted = false;
      else
        field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field), field.clear();
      rows.emplace_back();
      ++i;
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST(DoctorExport, CsvFieldsReadBackWhole) {
  const doctor::Diagnosis d = hostile_diagnosis();
  std::ostringstream layers;
  write_doctor_layers_csv(layers, d);
  const auto rows = parse_csv(layers.str());
  ASSERT_EQ(rows.size(), 1u + 3 * 2 * 2);  // the header; 3 layers x 2 policies x 2 phases
  for (const auto& row : rows) ASSERT_EQ(row.size(), rows[0].size()) << layers.str();
  EXPECT_EQ(rows[1][1], layer_title(d.input.spec, 0));
  EXPECT_EQ(rows[5][1], layer_title(d.input.spec, 1));

  std::ostringstream findings;
  write_doctor_findings_csv(findings, d);
  for (const auto& row : parse_csv(findings.str())) EXPECT_EQ(row.size(), 7u) << findings.str();
  EXPECT_EQ(csv_field("=cmd|' /C calc'!A0"), "\"'=cmd|' /C calc'!A0\"");
}

}  // namespace
}  // namespace mixlab::store
