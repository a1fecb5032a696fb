// The run-settings table (engine/train/run_fields.h): every field described completely and
// uniquely, its text form read back exactly, the order rule (a field that resets another comes
// first), and errors that name the field and the value.
#include "engine/train/run_fields.h"

#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

namespace mixlab {
namespace {

// How many members an aggregate has: the longest brace list of convert-to-anything values it
// accepts (what Boost.PFR does).
struct AnyMember {
  template <typename T>
  operator T() const;  // NOLINT: only named in unevaluated contexts
};
template <typename T, typename... Members>
constexpr std::size_t member_count() {
  if constexpr (requires { T{Members{}..., AnyMember{}}; }) {
    return member_count<T, Members..., AnyMember>();
  } else {
    return sizeof...(Members);
  }
}

// A new RunConfig member needs a row in the table (run_fields.cpp), or the store, the CSV,
// mixlab-cli and the GUI silently leave it out. Then count it here.
TEST(RunFields, EveryRunConfigMemberHasARow) {
  // precision, loss_scale, batch_size, epochs, steps, optimizer (7 rows: kind, learning rate,
  // momentum, nesterov, beta_1, beta_2, epsilon), seed, threads, dataset, evaluate,
  // warmup_steps, tf32, cuda_graphs, data_on_device, attention, fp8 (4 rows: history, amax,
  // margin, format), layer_timing; and
  // initial_weights, the one member that is not a setting (an imported model's tensors: the
  // run's note names their file).
  EXPECT_EQ(member_count<RunConfig>(), 18u);
  EXPECT_EQ(member_count<OptimizerConfig>(), 7u);
  EXPECT_EQ(member_count<Fp8Recipe>(), 4u);
  EXPECT_EQ(run_fields().size(), 17u - 2 + 7 + 4);
}

bool is_snake_case(std::string_view s) {
  if (s.empty() || !std::islower(static_cast<unsigned char>(s.front()))) return false;
  for (const char c : s) {
    if (!std::islower(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '_')
      return false;
  }
  return true;
}

TEST(RunFields, EveryFieldIsDescribedCompletelyAndUniquely) {
  std::set<std::string_view> names, flags, json_paths, columns, csv_columns, labels;
  for (const RunField& f : run_fields()) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_TRUE(is_snake_case(f.name));
    EXPECT_TRUE(is_snake_case(f.store_column));
    EXPECT_TRUE(is_snake_case(f.csv_column));
    EXPECT_FALSE(f.label.empty());
    EXPECT_FALSE(f.help.empty());
    EXPECT_FALSE(f.cli_flag.empty());
    EXPECT_EQ(f.cli_flag.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-"),
              std::string_view::npos);
    EXPECT_FALSE(f.json_path.empty());
    EXPECT_NE(f.get, nullptr);
    EXPECT_NE(f.set, nullptr);
    EXPECT_TRUE(names.insert(f.name).second);
    EXPECT_TRUE(flags.insert(f.cli_flag).second);
    EXPECT_TRUE(json_paths.insert(f.json_path).second);
    EXPECT_TRUE(columns.insert(f.store_column).second);
    EXPECT_TRUE(csv_columns.insert(f.csv_column).second);
    EXPECT_TRUE(labels.insert(f.label).second);
    EXPECT_EQ(&run_field(f.name), &f);
  }
  EXPECT_THROW(run_field("no_such_field"), ConfigError);
}

TEST(RunFields, DefaultsAreRunConfigsOwn) {
  EXPECT_EQ(field_default_text(run_field("batch_size")), "32");
  EXPECT_EQ(field_default_text(run_field("precision")), "float32");
  EXPECT_EQ(field_default_text(run_field("loss_scale")), "none");
  EXPECT_EQ(field_default_text(run_field("optimizer")), "adam");
  EXPECT_EQ(field_default_text(run_field("learning_rate")), "0.001");
  EXPECT_EQ(field_default_text(run_field("epsilon")), "1e-07");
  EXPECT_EQ(field_default_text(run_field("evaluate")), "true");
  EXPECT_EQ(field_default_text(run_field("dataset")), "fashion-mnist");
  EXPECT_EQ(field_default_text(run_field("warmup_steps")), "10");
}

// Every field's example is a valid value other than its default, and its text reads back.
TEST(RunFields, ExamplesDifferFromTheDefaultAndReadBackExactly) {
  for (const RunField& f : run_fields()) {
    SCOPED_TRACE(std::string(f.name));
    EXPECT_NE(f.example, field_default_text(f));
    RunConfig config;
    set_field_text(f, config, f.example);
    EXPECT_EQ(field_text(f, config), f.example);
    const FieldValue typed = f.get(config);
    RunConfig again;
    set_field(f, again, typed);
    EXPECT_EQ(field_text(f, again), f.example);
  }
}

// A config with every field set to its example: what the store, CLI and GUI tests use.
RunConfig every_example() {
  RunConfig config;
  for (const RunField& f : run_fields()) set_field_text(f, config, f.example);
  return config;
}

TEST(RunFields, AFieldThatResetsAnotherComesFirst) {
  std::set<std::string_view> earlier;
  for (const RunField& f : run_fields()) {
    SCOPED_TRACE(std::string(f.name));
    if (!f.depends_on.empty()) {
      EXPECT_TRUE(earlier.count(f.depends_on)) << f.depends_on;
    }
    if (f.optimizer) {
      EXPECT_EQ(f.depends_on, "optimizer");
    }
    earlier.insert(f.name);
  }
  // Reading every field back in table order reproduces each one, whatever the earlier ones reset.
  const RunConfig source = every_example();
  RunConfig read;
  for (const RunField& f : run_fields()) set_field_text(f, read, field_text(f, source));
  for (const RunField& f : run_fields()) {
    EXPECT_EQ(field_text(f, read), f.example) << f.name;
    EXPECT_NE(field_text(f, read), field_default_text(f)) << f.name;
  }
}

TEST(RunFields, PrecisionAndOptimizerResetWhatTheyImply) {
  RunConfig config;
  set_field_text(run_field("precision"), config, "mixed_float16");
  EXPECT_EQ(config.loss_scale.mode, LossScaleConfig::Mode::dynamic) << "Keras's default";
  set_field_text(run_field("loss_scale"), config, "none");
  EXPECT_EQ(config.loss_scale.mode, LossScaleConfig::Mode::none);
  set_field_text(run_field("loss_scale"), config, "auto");
  EXPECT_EQ(config.loss_scale.to_string(), "dynamic") << "auto follows the precision";

  set_field_text(run_field("learning_rate"), config, "0.5");
  set_field_text(run_field("optimizer"), config, "sgd");
  EXPECT_EQ(config.optimizer.learning_rate, 0.01) << "SGD's Keras default";
}

std::string problem_of(const char* name, std::string_view text) {
  RunConfig config;
  try {
    set_field_text(run_field(name), config, text);
  } catch (const FieldError& e) {
    EXPECT_EQ(e.field(), name);
    EXPECT_EQ(e.value(), text);
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    return e.problem();
  }
  ADD_FAILURE() << name << " accepted '" << text << "'";
  return {};
}

TEST(RunFields, BadValuesNameTheFieldAndTheValue) {
  EXPECT_EQ(problem_of("batch_size", "0"), "must be between 1 and 1048576, got 0");
  EXPECT_EQ(problem_of("batch_size", "zero"), "needs an integer, got 'zero'");
  EXPECT_EQ(problem_of("batch_size", "32x"), "needs an integer, got '32x'");
  EXPECT_EQ(problem_of("learning_rate", "-1"), "must be greater than 0, got -1");
  EXPECT_EQ(problem_of("learning_rate", "fast"), "needs a number, got 'fast'");
  EXPECT_EQ(problem_of("momentum", "1"), "must be in [0, 1), got 1");
  EXPECT_EQ(problem_of("tf32", "yes"), "needs true or false, got 'yes'");
  EXPECT_EQ(problem_of("precision", "fp8"),
            "unknown precision 'fp8' (float32, mixed_float16, mixed_bfloat16)");
  EXPECT_EQ(problem_of("optimizer", "lamb"), "unknown optimizer 'lamb' (sgd, adam)");
  EXPECT_NE(problem_of("loss_scale", "-3").find("dynamic:INITIAL"), std::string::npos);
  EXPECT_NE(problem_of("dataset", "imagenet").find("unknown kind 'imagenet'"), std::string::npos);
  RunConfig config;
  EXPECT_THROW(set_field(run_field("batch_size"), config, FieldValue(2.5)), FieldError);
}

TEST(RunFields, DisplayIsForPeople) {
  RunConfig config;
  EXPECT_EQ(field_display(run_field("threads"), config), "all cores");
  EXPECT_EQ(field_display(run_field("steps"), config), "none (epochs)");
  EXPECT_EQ(field_display(run_field("evaluate"), config), "on");
  EXPECT_EQ(field_display(run_field("tf32"), config), "off");
  EXPECT_EQ(field_display(run_field("learning_rate"), config), "0.001");
  config.threads = 3;
  EXPECT_EQ(field_display(run_field("threads"), config), "3");
}

}  // namespace
}  // namespace mixlab
