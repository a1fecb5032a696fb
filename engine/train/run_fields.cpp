#include "engine/train/run_fields.h"

#include <charconv>
#include <cmath>
#include <type_traits>
#include <vector>

namespace mixlab {

namespace {

// --- typed access to a RunConfig member, by its C++ type ---

template <typename T>
constexpr FieldType field_type_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return FieldType::boolean;
  } else if constexpr (std::is_integral_v<T>) {
    return FieldType::integer;
  } else {
    static_assert(std::is_floating_point_v<T>, "a scalar member: bool, integer or floating point");
    return FieldType::real;
  }
}

template <typename T>
FieldValue to_value(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<std::int64_t>(value);
  } else {
    return static_cast<double>(value);
  }
}

template <typename T>
T from_value(const FieldValue& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return std::get<bool>(value);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(std::get<std::int64_t>(value));
  } else {
    return static_cast<T>(std::get<double>(value));
  }
}

// A row for RunConfig::*Member, a bool, integer or floating-point member.
template <auto Member>
RunField member(RunField field) {
  using T = std::remove_cvref_t<decltype(std::declval<RunConfig&>().*Member)>;
  field.type = field_type_of<T>();
  field.get = [](const RunConfig& c) { return to_value(c.*Member); };
  field.set = [](RunConfig& c, const FieldValue& v) { c.*Member = from_value<T>(v); };
  return field;
}

// A row for OptimizerConfig::*Member of RunConfig::optimizer.
template <auto Member>
RunField optimizer_member(RunField field) {
  using T = std::remove_cvref_t<decltype(std::declval<OptimizerConfig&>().*Member)>;
  field.type = field_type_of<T>();
  field.depends_on = "optimizer";
  field.get = [](const RunConfig& c) { return to_value(c.optimizer.*Member); };
  field.set = [](RunConfig& c, const FieldValue& v) { c.optimizer.*Member = from_value<T>(v); };
  return field;
}

// A row for Fp8Recipe's integer *Member of RunConfig::fp8.
template <auto Member>
RunField fp8_member(RunField field) {
  field.type = FieldType::integer;
  field.get = [](const RunConfig& c) { return to_value(c.fp8.*Member); };
  field.set = [](RunConfig& c, const FieldValue& v) { c.fp8.*Member = from_value<int>(v); };
  return field;
}

const std::string& text_of(const FieldValue& value) {
  return std::get<std::string>(value);
}

constexpr double kTwoTo20 = 1 << 20;
constexpr double kTwoTo40 = 1099511627776.0;
constexpr double kTwoTo62 = 4611686018427387904.0;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr FieldRange kPositive{0.0, kInf, false, true};
constexpr FieldRange kUnitInterval{0.0, 1.0, true, false};  // [0, 1)

// Rows name only what they set; the rest keeps RunField's defaults. GCC 12 warns about every
// member a designated initializer leaves out, which here is the point.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

// The table. Text-valued fields hold the engine's own text forms; the store, the CSV and --json
// keep the names they had before the table (loss_scaling, learning_rate), and where the summary
// CSV already names what a run did (steps planned, threads used, warm-up steps left out), the
// setting asked for is "..._requested".
std::vector<RunField> make_fields() {
  return {
      {.name = "dataset",
       .type = FieldType::text,
       .label = "dataset",
       .help = "fashion-mnist (Debian's dataset-fashion-mnist), fashion-mnist:DIR, mnist:DIR, "
               "cifar10:DIR, cifar100:DIR, synthetic:HxWxC:CLASSES[:N[:SEED]], text:PATH[:SEQ_LEN] "
               "(a text file's bytes as tokens) or tokens:synthetic:SEQ_LEN:VOCAB[:CLASSES[:N]]",
       .cli_flag = "dataset",
       .json_path = "dataset",
       .store_column = "dataset",
       .csv_column = "dataset",
       .example = "synthetic:8x8x1:4:64",
       .get = [](const RunConfig& c) -> FieldValue { return c.dataset.to_string(); },
       .set = [](RunConfig& c,
                 const FieldValue& v) { c.dataset = parse_dataset_spec(text_of(v)); }},
      {.name = "precision",
       .type = FieldType::text,
       .label = "precision",
       .help = "the precision policy: float32, mixed_float16, mixed_bfloat16 or mixed_float8 "
               "(mixed_bfloat16 with FP8 matmuls in Dense and Conv2D, Keras's float8 training)",
       .cli_flag = "precision",
       .json_path = "precision",
       .store_column = "precision",
       .csv_column = "precision",
       .example = "mixed_bfloat16",
       .per_step_csv = true,
       .get = [](const RunConfig& c) -> FieldValue { return std::string(to_string(c.precision)); },
       .set =
           [](RunConfig& c, const FieldValue& v) {
             const auto policy = parse_policy(text_of(v));
             if (!policy) {
               throw ConfigError("unknown precision " + quote(text_of(v)) +
                                 " (float32, mixed_float16, mixed_bfloat16)");
             }
             c.precision = *policy;
             c.loss_scale = LossScaleConfig::keras_default(*policy);
           }},
      {.name = "loss_scale",
       .type = FieldType::text,
       .label = "loss scaling",
       .help = "auto (Keras: dynamic under mixed_float16, else none), none, dynamic (2^15, x2 "
               "after 2000 finite steps, x0.5 and skip on overflow), dynamic:INITIAL, or a "
               "number for a static scale",
       .cli_flag = "loss-scale",
       .json_path = "loss_scaling",
       .store_column = "loss_scaling",
       .csv_column = "loss_scaling",
       .example = "dynamic:1024",
       .depends_on = "precision",
       .per_step_csv = true,
       .get = [](const RunConfig& c) -> FieldValue { return c.loss_scale.to_string(); },
       .set =
           [](RunConfig& c, const FieldValue& v) {
             if (text_of(v) == "auto") {
               c.loss_scale = LossScaleConfig::keras_default(c.precision);
             } else if (const auto parsed = parse_loss_scale(text_of(v))) {
               c.loss_scale = *parsed;
             } else {
               throw ConfigError(
                   "must be auto, none, dynamic, dynamic:INITIAL or a positive number, got " +
                   quote(text_of(v)));
             }
           }},
      member<&RunConfig::batch_size>({.name = "batch_size",
                                      .label = "batch size",
                                      .help = "samples per step",
                                      .cli_flag = "batch-size",
                                      .json_path = "batch_size",
                                      .store_column = "batch_size",
                                      .csv_column = "batch_size",
                                      .example = "64",
                                      .per_step_csv = true,
                                      .range = {1, kTwoTo20}}),
      {.name = "optimizer",
       .type = FieldType::text,
       .label = "optimizer",
       .help = "sgd or adam, with Keras's defaults",
       .cli_flag = "optimizer",
       .json_path = "optimizer/kind",
       .store_column = "optimizer",
       .csv_column = "optimizer",
       .example = "sgd",
       .get = [](const RunConfig& c) -> FieldValue {
         return std::string(to_string(c.optimizer.kind));
       },
       .set =
           [](RunConfig& c, const FieldValue& v) {
             const auto kind = parse_optimizer(text_of(v));
             if (!kind)
               throw ConfigError("unknown optimizer " + quote(text_of(v)) + " (sgd, adam)");
             c.optimizer = default_optimizer(*kind);
           }},
      optimizer_member<&OptimizerConfig::learning_rate>(
          {.name = "learning_rate",
           .label = "learning rate",
           .help = "the learning rate (Keras: 0.001 for Adam, 0.01 for SGD)",
           .cli_flag = "lr",
           .json_path = "optimizer/learning_rate",
           .store_column = "learning_rate",
           .csv_column = "learning_rate",
           .example = "0.05",
           .range = kPositive}),
      member<&RunConfig::epochs>({.name = "epochs",
                                  .label = "epochs",
                                  .help = "passes over the training set",
                                  .cli_flag = "epochs",
                                  .json_path = "epochs",
                                  .store_column = "epochs",
                                  .csv_column = "epochs",
                                  .example = "3",
                                  .range = {1, 100000}}),
      member<&RunConfig::steps>(
          {.name = "steps",
           .label = "step limit",
           .help = "stop after this many steps (the epochs then only bound the passes over the "
                   "data); 0: run the epochs",
           .cli_flag = "steps",
           .json_path = "steps",
           .store_column = "steps",
           .csv_column = "steps_requested",
           .example = "7",
           .range = {0, kTwoTo40},
           .display =
               [](const RunConfig& c) {
                 return c.steps > 0 ? std::to_string(c.steps) : std::string("none (epochs)");
               }}),
      member<&RunConfig::seed>({.name = "seed",
                                .label = "seed",
                                .help = "seed of weights, shuffling and dropout",
                                .cli_flag = "seed",
                                .json_path = "seed",
                                .store_column = "seed",
                                .csv_column = "seed",
                                .example = "7",
                                .range = {0, kTwoTo62}}),
      member<&RunConfig::threads>({.name = "threads",
                                   .label = "threads",
                                   .help = "CPU threads; 0: every core",
                                   .cli_flag = "threads",
                                   .json_path = "threads",
                                   .store_column = "threads",
                                   .csv_column = "threads_requested",
                                   .example = "3",
                                   .range = {0, 4096},
                                   .display =
                                       [](const RunConfig& c) {
                                         return c.threads > 0 ? std::to_string(c.threads)
                                                              : std::string("all cores");
                                       }}),
      member<&RunConfig::tf32>({.name = "tf32",
                                .label = "TF32 matmuls",
                                .help = "GPU, float32 policy: matmuls and convolutions on TF32 "
                                        "tensor cores",
                                .cli_flag = "tf32",
                                .json_path = "tf32",
                                .store_column = "tf32",
                                .csv_column = "tf32",
                                .example = "true",
                                .gpu_only = true}),
      member<&RunConfig::cuda_graphs>({.name = "cuda_graphs",
                                       .label = "CUDA graphs",
                                       .help = "GPU: capture the training step once and replay it",
                                       .cli_flag = "cuda-graphs",
                                       .json_path = "cuda_graphs",
                                       .store_column = "cuda_graphs",
                                       .csv_column = "cuda_graphs",
                                       .example = "true",
                                       .gpu_only = true}),
      {.name = "attention",
       .type = FieldType::text,
       .label = "attention kernels",
       .help = "GPU: MultiHeadAttention's cores on cuDNN 9's fused attention (fused: 16-bit, "
               "compute capability 8.0 on), MixLab's unfused kernels (unfused), or fused where "
               "cuDNN takes the shape, else unfused (auto); the CPU runs them unfused",
       .cli_flag = "attention",
       .json_path = "attention",
       .store_column = "attention",
       .csv_column = "attention",
       .example = "unfused",
       .gpu_only = true,
       .get = [](const RunConfig& c) -> FieldValue { return std::string(to_string(c.attention)); },
       .set =
           [](RunConfig& c, const FieldValue& v) {
             const auto kernels = parse_attention_kernels(text_of(v));
             if (!kernels) {
               throw ConfigError("must be auto, fused or unfused, got " + quote(text_of(v)));
             }
             c.attention = *kernels;
           }},
      fp8_member<&Fp8Recipe::history>(
          {.name = "fp8_history",
           .label = "FP8 amax history",
           .help = "mixed_float8: how many steps' amaxes each FP8 tensor's scale is made from "
                   "(Keras's amax_history_length)",
           .cli_flag = "fp8-history",
           .json_path = "fp8/history",
           .store_column = "fp8_history",
           .csv_column = "fp8_history",
           .example = "16",
           .range = {1, Fp8Recipe::kMaxHistory}}),
      {.name = "fp8_amax",
       .type = FieldType::text,
       .label = "FP8 amax reduction",
       .help = "mixed_float8: the history's largest amax (max, Keras's) or the last step's "
               "(most_recent, Transformer Engine's other choice)",
       .cli_flag = "fp8-amax",
       .json_path = "fp8/amax",
       .store_column = "fp8_amax",
       .csv_column = "fp8_amax",
       .example = "most_recent",
       .get = [](const RunConfig& c) -> FieldValue { return std::string(to_string(c.fp8.amax)); },
       .set =
           [](RunConfig& c, const FieldValue& v) {
             const auto algo = parse_fp8_amax(text_of(v));
             if (!algo) throw ConfigError("must be max or most_recent, got " + quote(text_of(v)));
             c.fp8.amax = *algo;
           }},
      fp8_member<&Fp8Recipe::margin>(
          {.name = "fp8_margin",
           .label = "FP8 margin",
           .help = "mixed_float8: binades of headroom, the amax mapped to the format's largest "
                   "value / 2^margin",
           .cli_flag = "fp8-margin",
           .json_path = "fp8/margin",
           .store_column = "fp8_margin",
           .csv_column = "fp8_margin",
           .example = "1",
           .range = {0, Fp8Recipe::kMaxMargin}}),
      {.name = "fp8_format",
       .type = FieldType::text,
       .label = "FP8 formats",
       .help = "mixed_float8: E4M3 forward and E5M2 gradients (hybrid, as Keras and Transformer "
               "Engine train), or E4M3 for both (e4m3)",
       .cli_flag = "fp8-format",
       .json_path = "fp8/format",
       .store_column = "fp8_format",
       .csv_column = "fp8_format",
       .example = "e4m3",
       .get = [](const RunConfig& c) -> FieldValue {
         return std::string(to_string(c.fp8.formats));
       },
       .set =
           [](RunConfig& c, const FieldValue& v) {
             const auto formats = parse_fp8_formats(text_of(v));
             if (!formats) throw ConfigError("must be hybrid or e4m3, got " + quote(text_of(v)));
             c.fp8.formats = *formats;
           }},
      member<&RunConfig::data_on_device>(
          {.name = "data_on_device",
           .label = "dataset on the GPU",
           .help = "GPU: keep the training split in GPU memory when it fits",
           .cli_flag = "data-on-device",
           .json_path = "data_on_device",
           .store_column = "data_on_device",
           .csv_column = "data_on_device",
           .example = "true",
           .gpu_only = true}),
      member<&RunConfig::layer_timing>(
          {.name = "layer_timing",
           .label = "per-layer timing",
           .help = "each layer's forward and backward time (a GPU's events, the CPU's clock)",
           .cli_flag = "layer-timing",
           .json_path = "layer_timing",
           .store_column = "layer_timing",
           .csv_column = "layer_timing",
           .example = "true"}),
      optimizer_member<&OptimizerConfig::momentum>({.name = "momentum",
                                                    .label = "momentum",
                                                    .help = "SGD's momentum",
                                                    .cli_flag = "momentum",
                                                    .json_path = "optimizer/momentum",
                                                    .store_column = "momentum",
                                                    .csv_column = "momentum",
                                                    .example = "0.9",
                                                    .optimizer = OptimizerKind::sgd,
                                                    .range = kUnitInterval}),
      optimizer_member<&OptimizerConfig::nesterov>({.name = "nesterov",
                                                    .label = "Nesterov momentum",
                                                    .help = "SGD with Nesterov momentum",
                                                    .cli_flag = "nesterov",
                                                    .json_path = "optimizer/nesterov",
                                                    .store_column = "nesterov",
                                                    .csv_column = "nesterov",
                                                    .example = "true",
                                                    .optimizer = OptimizerKind::sgd}),
      optimizer_member<&OptimizerConfig::beta_1>({.name = "beta_1",
                                                  .label = "beta_1",
                                                  .help = "Adam's decay of the mean",
                                                  .cli_flag = "beta-1",
                                                  .json_path = "optimizer/beta_1",
                                                  .store_column = "beta_1",
                                                  .csv_column = "beta_1",
                                                  .example = "0.8",
                                                  .optimizer = OptimizerKind::adam,
                                                  .range = kUnitInterval}),
      optimizer_member<&OptimizerConfig::beta_2>({.name = "beta_2",
                                                  .label = "beta_2",
                                                  .help = "Adam's decay of the variance",
                                                  .cli_flag = "beta-2",
                                                  .json_path = "optimizer/beta_2",
                                                  .store_column = "beta_2",
                                                  .csv_column = "beta_2",
                                                  .example = "0.99",
                                                  .optimizer = OptimizerKind::adam,
                                                  .range = kUnitInterval}),
      optimizer_member<&OptimizerConfig::epsilon>({.name = "epsilon",
                                                   .label = "epsilon",
                                                   .help = "Adam's epsilon",
                                                   .cli_flag = "epsilon",
                                                   .json_path = "optimizer/epsilon",
                                                   .store_column = "epsilon",
                                                   .csv_column = "epsilon",
                                                   .example = "1e-08",
                                                   .optimizer = OptimizerKind::adam,
                                                   .range = kPositive}),
      member<&RunConfig::evaluate>({.name = "evaluate",
                                    .label = "evaluation",
                                    .help = "skip the evaluation on the test split after each "
                                            "epoch",
                                    .cli_flag = "no-eval",
                                    .json_path = "evaluate",
                                    .store_column = "evaluate",
                                    .csv_column = "evaluate",
                                    .example = "false"}),
      member<&RunConfig::warmup_steps>(
          {.name = "warmup_steps",
           .label = "warm-up steps",
           .help = "steps left out of the step-time figures (fewer when the run is short)",
           .cli_flag = "warmup-steps",
           .json_path = "warmup_steps",
           .store_column = "warmup_steps",
           .csv_column = "warmup_steps_requested",
           .example = "4",
           .range = {0, 1000000}}),
  };
}

#pragma GCC diagnostic pop

std::string_view type_name(FieldType type) {
  switch (type) {
    case FieldType::integer:
      return "an integer";
    case FieldType::real:
      return "a number";
    case FieldType::boolean:
      return "true or false";
    case FieldType::text:
      break;
  }
  return "text";
}

std::string format_bound(FieldType type, double bound) {
  return type == FieldType::integer ? std::to_string(static_cast<std::int64_t>(bound))
                                    : field_value_text(bound);
}

// "must be between 1 and 1048576", "must be greater than 0", "must be in [0, 1)".
std::string describe_range(FieldType type, const FieldRange& r) {
  const bool bounded_above = std::isfinite(r.max);
  if (r.min_inclusive && r.max_inclusive && bounded_above) {
    return "must be between " + format_bound(type, r.min) + " and " + format_bound(type, r.max);
  }
  if (!bounded_above) {
    return (r.min_inclusive ? "must be at least " : "must be greater than ") +
           format_bound(type, r.min);
  }
  return "must be in " + std::string(r.min_inclusive ? "[" : "(") + format_bound(type, r.min) +
         ", " + format_bound(type, r.max) + (r.max_inclusive ? "]" : ")");
}

bool in_range(double v, const FieldRange& r) {
  return (r.min_inclusive ? v >= r.min : v > r.min) && (r.max_inclusive ? v <= r.max : v < r.max);
}

// Integers compared as integers: near 2^62 a double no longer tells neighbours apart.
bool in_range(std::int64_t v, const FieldRange& r) {
  const auto bound = [](double b) { return static_cast<std::int64_t>(b); };
  return (!std::isfinite(r.min) || v >= bound(r.min)) &&
         (!std::isfinite(r.max) || v <= bound(r.max));
}

void check_type(const RunField& field, const FieldValue& value) {
  const bool matches =
      (field.type == FieldType::text && std::holds_alternative<std::string>(value)) ||
      (field.type == FieldType::integer && std::holds_alternative<std::int64_t>(value)) ||
      (field.type == FieldType::real && std::holds_alternative<double>(value)) ||
      (field.type == FieldType::boolean && std::holds_alternative<bool>(value));
  if (!matches) {
    const std::string text = field_value_text(value);
    throw FieldError(field, text,
                     "needs " + std::string(type_name(field.type)) + ", got " + quote(text));
  }
}

void check_range(const RunField& field, const FieldValue& value) {
  if (const auto* real = std::get_if<double>(&value); real != nullptr && !std::isfinite(*real)) {
    throw FieldError(field, field_value_text(value),
                     "needs a finite number, got " + field_value_text(value));
  }
  const bool inside = std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
          return in_range(v, field.range);
        } else {
          return true;
        }
      },
      value);
  if (!inside) {
    throw FieldError(field, field_value_text(value),
                     describe_range(field.type, field.range) + ", got " + field_value_text(value));
  }
}

}  // namespace

FieldError::FieldError(const RunField& field, std::string value, std::string problem)
    : ConfigError("run setting '" + std::string(field.name) + "': " + problem),
      field_(field.name),
      value_(std::move(value)),
      problem_(std::move(problem)) {}

std::span<const RunField> run_fields() {
  static const std::vector<RunField> fields = make_fields();
  return fields;
}

const RunField& run_field(std::string_view name) {
  for (const RunField& field : run_fields()) {
    if (field.name == name) return field;
  }
  throw ConfigError("no run setting named " + quote(name));
}

void restore_field(const RunField& field, RunConfig& config, const FieldValue& value) {
  check_type(field, value);
  try {
    field.set(config, value);
  } catch (const ConfigError& e) {
    // A text field's own words: "unknown precision 'x' (float32, ...)".
    throw FieldError(field, field_value_text(value), e.what());
  }
}

void set_field(const RunField& field, RunConfig& config, const FieldValue& value) {
  check_type(field, value);
  check_range(field, value);
  restore_field(field, config, value);
}

std::string field_value_text(const FieldValue& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* integer = std::get_if<std::int64_t>(&value)) return std::to_string(*integer);
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean ? "true" : "false";
  // std::to_chars writes '.' whatever the locale, and the shortest text that reads back.
  const double real = std::get<double>(value);
  char buf[32];
  const auto result = std::to_chars(buf, buf + sizeof buf, real);
  return std::string(buf, result.ptr);
}

std::string field_text(const RunField& field, const RunConfig& config) {
  return field_value_text(field.get(config));
}

FieldValue parse_field_text(const RunField& field, std::string_view text) {
  const auto bad = [&] {
    return FieldError(field, std::string(text),
                      "needs " + std::string(type_name(field.type)) + ", got " + quote(text));
  };
  const char* end = text.data() + text.size();
  switch (field.type) {
    case FieldType::text:
      return std::string(text);
    case FieldType::integer: {
      std::int64_t v = 0;
      const auto [ptr, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec != std::errc() || ptr != end) throw bad();
      return v;
    }
    case FieldType::real: {
      double v = 0;
      const auto [ptr, ec] = std::from_chars(text.data(), end, v);
      if (text.empty() || ec != std::errc() || ptr != end) throw bad();
      return v;
    }
    case FieldType::boolean:
      if (text == "true" || text == "1") return true;
      if (text == "false" || text == "0") return false;
      throw bad();
  }
  throw bad();
}

void set_field_text(const RunField& field, RunConfig& config, std::string_view text) {
  set_field(field, config, parse_field_text(field, text));
}

std::string field_default_text(const RunField& field) {
  return field_text(field, RunConfig{});
}

std::string field_display(const RunField& field, const RunConfig& config) {
  if (field.display != nullptr) return field.display(config);
  const FieldValue value = field.get(config);
  if (const auto* boolean = std::get_if<bool>(&value)) return *boolean ? "on" : "off";
  return field_value_text(value);
}

RunConfig applicable_config(RunConfig config, const DeviceInfo& device,
                            std::vector<const RunField*>* reset) {
  if (device.is_gpu()) return config;
  const RunConfig defaults;
  for (const RunField& field : run_fields()) {
    if (!field.gpu_only) continue;
    const FieldValue value = field.get(defaults);
    if (field.get(config) == value) continue;
    field.set(config, value);
    if (reset != nullptr) reset->push_back(&field);
  }
  return config;
}

}  // namespace mixlab
