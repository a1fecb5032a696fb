// Exported scripts are data, never code made of a user's text (issue 25): a model's name, its
// layers' names and the dataset's path are written with hostile text, and Python's own parser
// (check_script_ast.py) says that the script parses, that the marker every hostile text holds
// appears nowhere but inside string literals, and that each value reached Python byte for byte.
// The numbers do not follow the C locale (the GUI runs under the user's LC_NUMERIC).
#include <gtest/gtest.h>

#include <unistd.h>

#include <clocale>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/interop/python_code.h"
#include "engine/interop/script_export.h"
#include "tests/comma_locale.h"
#include "tests/test_paths.h"

namespace mixlab {
namespace {

namespace fs = std::filesystem;

// In every hostile text; a Python name, so that it would show up as code if a text got out.
constexpr const char* kMarker = "zqmarker";

// Texts that end or bend a string literal, a docstring or a comment, or that Python reads other
// than as written: quotes of every kind, backslashes, line ends (CR alone ends a line for
// Python's tokenizer), \N{...}, U+2028 / U+2029, control characters, bytes that are not UTF-8,
// and a placeholder of the export templates.
std::vector<std::string> hostile_texts() {
  const std::string m = kMarker;
  return {
      "x\"\"\";import os;os.system(\"touch pwned\");" + m + "();\"\"\"",
      "x''';" + m + "();'''",
      "\"+" + m + "+\"",
      "'+" + m + "+'",
      "ends in a backslash\\\";" + m + "();#\\",
      "line\n" + m + "()\n#",
      "cr\r" + m + "()\r#",
      "\\N{BULLET} \\x41 \\u0041 " + m,
      "sep\u2028" + m + "()\u2029#",
      "odd \x01\x1b[31m\x7f\xff\xfe\xc0\xaf\x80 \xe2\x80 " + m,
      "{{MODEL_NAME}}{{LAYERS}}}}{{ " + m,
      "emoji \U0001F600 \u00e9 " + m,
  };
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    out += digits[u >> 4];
    out += digits[u & 15];
  }
  return out;
}

bool have_python() {
  return std::system("python3 -c pass >/dev/null 2>&1") == 0;
}

struct Script {
  std::string name;  // the file's stem
  std::string text;
  std::vector<std::string> expected;  // values that must be string constants of the script
};

// Runs check_script_ast.py on the scripts (once, for all); "" when every check holds for every
// script, else what it said.
std::string check_scripts(const std::vector<Script>& scripts, const fs::path& dir) {
  std::string command =
      "python3 '" + mixlab::test::source_dir() + "/tests/interop/check_script_ast.py' ";
  command += kMarker;
  for (const Script& script : scripts) {
    const fs::path file = dir / (script.name + ".py");
    const fs::path values = dir / (script.name + ".expected");
    std::ofstream(file, std::ios::binary) << script.text;
    std::ofstream out(values);
    for (const std::string& value : script.expected) out << hex(value) << '\n';
    command += " '" + file.string() + "' '" + values.string() + "'";
  }
  command += " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "cannot run " + command;
  std::string said;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) said += buf;
  const int status = pclose(pipe);
  if (status != 0 && said.empty()) said = "check_script_ast.py failed";
  return status == 0 ? "" : said;
}

std::string check_script(const std::string& text, const std::vector<std::string>& expected,
                         const fs::path& dir, const std::string& name) {
  return check_scripts({{name, text, expected}}, dir);
}

ModelSpec builtin(const std::string& name) {
  return load_model_file(fs::path(mixlab::test::source_dir()) / "resources" / "models" /
                         (name + ".json"));
}

class ScriptInjection : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_python()) GTEST_SKIP() << "python3 is not installed";
    dir_ = fs::temp_directory_path() / ("mixlab-script-injection-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(ScriptInjection, NamesAndPathsStayStringLiterals) {
  const std::vector<std::string> texts = hostile_texts();
  std::vector<Script> scripts;
  for (std::size_t t = 0; t < texts.size(); ++t) {
    const std::string& text = texts[t];
    ModelSpec spec = builtin("fashion-cnn");
    spec.name = text;
    std::vector<std::string> layer_names;
    for (std::size_t i = 0; i < spec.layers.size(); ++i) {
      spec.layers[i].name = text + " " + std::to_string(i);
      layer_names.push_back(spec.layers[i].name);
    }
    RunConfig config;
    config.dataset = parse_dataset_spec("fashion-mnist");
    config.dataset.dir = fs::path("/data/" + text);
    for (const ScriptKind kind : {ScriptKind::keras, ScriptKind::pytorch}) {
      const bool keras = kind == ScriptKind::keras;
      Script script{"text" + std::to_string(t) + (keras ? "-keras" : "-pytorch"),
                    export_script(kind, spec, config, ScriptOptions{3}),
                    {text, config.dataset.dir.string()}};
      // Keras names its layers; the PyTorch script has no place for a name.
      if (keras)
        script.expected.insert(script.expected.end(), layer_names.begin(), layer_names.end());
      scripts.push_back(std::move(script));
    }
  }
  // Each failure names its script ("text3-keras": hostile_texts()[3], the Keras script).
  EXPECT_EQ(check_scripts(scripts, dir_), "") << "--- the first script ---\n"
                                              << scripts.front().text.substr(0, 1500);
}

// The checker itself tells an injected script from a clean one (else the test above proves
// nothing): the marker as code, in a comment, in an f-string, and a value that is not there.
TEST_F(ScriptInjection, TheCheckerSeesCodeOutsideStrings) {
  const std::string m = kMarker;
  EXPECT_EQ(check_script("A = \"" + m + "\"\n", {m}, dir_, "clean"), "");
  EXPECT_NE(check_script("A = 1\n" + m + "()\n", {}, dir_, "call"), "");
  EXPECT_NE(check_script("A = 1  # " + m + "\n", {}, dir_, "comment"), "");
  EXPECT_NE(check_script("A = f\"{1}" + m + "\"\n", {}, dir_, "fstring"), "");
  EXPECT_NE(check_script("A = x." + m + "\n", {}, dir_, "attribute"), "");
  EXPECT_NE(check_script("A = \"" + m + "\"\n", {m + "2"}, dir_, "absent"), "");
  EXPECT_NE(check_script("\"\"\"x\"\"\";" + m + "\n\"\"\"", {}, dir_, "unparsed"), "");
}

TEST_F(ScriptInjection, NumbersIgnoreTheLocale) {
  if (!test::use_comma_locale(dir_)) GTEST_SKIP() << "no locale with a decimal comma";
  char probe[16];
  std::snprintf(probe, sizeof probe, "%.1f", 0.5);
  ASSERT_STREQ(probe, "0,5");  // the locale is in force
  RunConfig config;
  config.dataset = parse_dataset_spec("fashion-mnist");
  config.precision = Policy::mixed_float16;
  config.loss_scale = LossScaleConfig::keras_default(Policy::mixed_float16);
  const std::string script =
      export_script(ScriptKind::pytorch, builtin("fashion-cnn"), config, ScriptOptions{3});
  std::setlocale(LC_NUMERIC, "C");
  EXPECT_NE(script.find("LEARNING_RATE = 0.001\n"), std::string::npos);
  EXPECT_NE(script.find("INITIAL_SCALE = 32768.0\n"), std::string::npos);
  EXPECT_NE(script.find("Rescaling(0.00392156862745098),"), std::string::npos);
  EXPECT_EQ(check_script(script, {}, dir_, "locale"), "");
}

TEST(PythonCode, NonFiniteNumbersAreRefusedByName) {
  RunConfig config;
  config.dataset = parse_dataset_spec("fashion-mnist");
  config.optimizer.learning_rate = std::numeric_limits<double>::infinity();
  try {
    export_script(ScriptKind::keras, builtin("fashion-mlp"), config, ScriptOptions{3});
    FAIL() << "an infinite learning rate was written";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("learning rate"), std::string::npos) << e.what();
  }
  EXPECT_THROW(py_float(std::nan(""), "x"), ConfigError);
  EXPECT_EQ(py_float(-0.0, "x").text(), "-0.0");
  EXPECT_EQ(py_float(1e300, "x").text(), "1e+300");
  EXPECT_EQ(py_int(std::uint64_t{18446744073709551615U}).text(), "18446744073709551615");
}

TEST(PythonCode, TemplatesFillOncePerPlaceholder) {
  const PyCode filled =
      fill_template("A = {{A}}\nB = {{B}}  # {{A}}\n", {{"A", py_str("{{B}}")}, {"B", py_int(2)}});
  // A value that looks like a placeholder is not filled in.
  EXPECT_EQ(filled.text(), "A = \"{{B}}\"\nB = 2  # \"{{B}}\"\n");
  EXPECT_THROW(fill_template("{{A}}", {}), std::logic_error);
  EXPECT_THROW(fill_template("A", {{"A", py_int(1)}}), std::logic_error);
  EXPECT_THROW(fill_template("{{A", {{"A", py_int(1)}}), std::logic_error);
  EXPECT_EQ(py_str("a\"\\\n\u2028\xff").text(), "\"a\\\"\\\\\\n\\u2028\\udcff\"");
}

}  // namespace
}  // namespace mixlab
