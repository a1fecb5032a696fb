// mixlab-cli runs show ID [--json]: one run, its configuration, environment, figures, epochs,
// per-layer times and per-layer overflow counts.
#include <cstring>
#include <iostream>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/runs_support.h"
#include "app/store/csv_export.h"

namespace mixlab::cli::runs {

namespace {

Json environment_json(const store::Environment& e) {
  return {{"device_kind", e.device_kind},
          {"device_name", e.device_name},
          {"compute_capability", e.compute_capability},
          {"driver_version", e.driver_version},
          {"cuda_version", e.cuda_version},
          {"cudnn_version", e.cudnn_version},
          {"cublas_version", e.cublas_version},
          {"onednn_version", e.onednn_version},
          {"cpu_model", e.cpu_model},
          {"threads", e.threads},
          {"mixlab_version", e.mixlab_version},
          {"hostname", e.hostname}};
}

Json summary_json(const RunSummary& s) {
  return {{"steps", s.steps},
          {"skipped_steps", s.skipped_steps},
          {"epochs_completed", s.epochs_completed},
          {"final_loss_scale", number_or_null(s.final_loss_scale)},
          {"warmup_steps", s.warmup_steps},
          {"median_step_ms", number_or_null(s.median_step_ms)},
          {"p5_step_ms", number_or_null(s.p5_step_ms)},
          {"p95_step_ms", number_or_null(s.p95_step_ms)},
          {"samples_per_s", number_or_null(s.samples_per_s)},
          {"final_loss", number_or_null(s.final_loss)},
          {"final_accuracy", number_or_null(s.final_accuracy)},
          {"test_loss", number_or_null(s.test_loss)},
          {"test_accuracy", number_or_null(s.test_accuracy)},
          {"peak_memory_bytes", s.peak_memory_bytes},
          {"diverged_at_step", s.diverged_at_step >= 0 ? Json(s.diverged_at_step) : Json()},
          {"failed_allocation_bytes", s.failed_allocation_bytes},
          {"wall_s", number_or_null(s.wall_s)}};
}

Json epochs_json(const std::vector<EpochMetrics>& epochs) {
  Json out = Json::array();
  for (const EpochMetrics& e : epochs) {
    out.push_back({{"epoch", e.epoch},
                   {"steps", e.steps},
                   {"train_loss", number_or_null(e.train_loss)},
                   {"train_accuracy", number_or_null(e.train_accuracy)},
                   {"test_loss", number_or_null(e.test_loss)},
                   {"test_accuracy", number_or_null(e.test_accuracy)},
                   {"time_s", number_or_null(e.time_s)},
                   {"samples_per_s", number_or_null(e.samples_per_s)}});
  }
  return out;
}

Json layer_times_json(const std::vector<store::LayerTimeSummary>& layers) {
  Json out = Json::array();
  for (const store::LayerTimeSummary& l : layers) {
    out.push_back({{"layer", l.layer},
                   {"title", l.title},
                   {"steps", l.steps},
                   {"forward_ms", number_or_null(l.forward_ms)},
                   {"backward_ms", number_or_null(l.backward_ms)},
                   {"forward_p95_ms", number_or_null(l.forward_p95_ms)},
                   {"backward_p95_ms", number_or_null(l.backward_p95_ms)}});
  }
  return out;
}

Json layer_overflows_json(const std::vector<store::LayerOverflowSummary>& layers) {
  Json out = Json::array();
  for (const store::LayerOverflowSummary& l : layers) {
    out.push_back({{"layer", l.layer},
                   {"title", l.title},
                   {"steps", l.steps},
                   {"nonfinite", l.nonfinite},
                   {"values", l.values},
                   {"first_step", l.first_step},
                   {"last_step", l.last_step}});
  }
  return out;
}

Json run_json(const RunRecord& r, const std::vector<EpochMetrics>& epochs,
              const std::vector<store::LayerTimeSummary>& layers,
              const std::vector<store::LayerOverflowSummary>& overflows) {
  // The model as JSON when it parses (it always should), else as the stored text.
  Json model = Json::parse(r.model_json, nullptr, false);
  if (model.is_discarded()) model = r.model_json;
  return {{"id", r.id},
          {"uid", r.uid},
          {"name", r.name},
          {"status", std::string(store::to_string(r.status))},
          {"damaged", damage_or_null(r)},
          {"message", r.message},
          {"created_at", time_or_null(r.created_at_ms)},
          {"started_at", time_or_null(r.started_at_ms)},
          {"finished_at", time_or_null(r.finished_at_ms)},
          {"heartbeat_at", time_or_null(r.heartbeat_at_ms)},
          {"model", r.model_name},
          {"model_spec", model},
          {"device", r.device},
          {"total_steps", r.total_steps},
          {"config", run_config_json(r.config)},
          {"environment", environment_json(r.environment)},
          {"summary", summary_json(r.summary)},
          {"epochs", epochs_json(epochs)},
          {"layer_times", layer_times_json(layers)},
          {"layer_overflows", layer_overflows_json(overflows)},
          {"tags", r.tags},
          {"note", r.note}};
}

// "label:        text", later lines of a multi-line text indented under the first.
void print_field(const char* label, const std::string& text) {
  if (text.empty()) return;
  std::string indented;
  for (const char c : text) {
    if (c == '\r') continue;
    // The user's text (a note, a tag, a model's name): no control byte reaches the terminal.
    const auto byte = static_cast<unsigned char>(c);
    indented += (byte < 0x20 && c != '\n') || byte == 0x7F ? ' ' : c;
    if (c == '\n') indented += std::string(14, ' ');
  }
  std::cout << label << std::string(14 - std::strlen(label), ' ') << indented << '\n';
}

void print_layer_times(const std::vector<store::LayerTimeSummary>& layers) {
  if (layers.empty()) return;
  std::cout << "layer times (median ms over " << group_digits(layers.front().steps)
            << " steps, warm-up left out):\n";
  Table table({{"layer", false},
               {"forward", true},
               {"backward", true},
               {"forward p95", true},
               {"backward p95", true}});
  double forward = 0.0, backward = 0.0;
  for (const store::LayerTimeSummary& l : layers) {
    table.add({one_line(l.title, 60), format_fixed(l.forward_ms, 3), format_fixed(l.backward_ms, 3),
               format_fixed(l.forward_p95_ms, 3), format_fixed(l.backward_p95_ms, 3)});
    forward += l.forward_ms;
    backward += l.backward_ms;
  }
  table.add({"total", format_fixed(forward, 3), format_fixed(backward, 3), "", ""});
  table.print(std::cout, "  ");
}

void print_layer_overflows(const std::vector<store::LayerOverflowSummary>& layers) {
  if (layers.empty()) return;
  std::cout << "overflow (inf/NaN gradients on the skipped steps, by layer):\n";
  Table table({{"layer", false},
               {"steps", true},
               {"inf/NaN values", true},
               {"of values", true},
               {"first step", true},
               {"last step", true}});
  for (const store::LayerOverflowSummary& l : layers) {
    table.add({one_line(l.title, 60), group_digits(l.steps), group_digits(l.nonfinite),
               group_digits(l.values), group_digits(l.first_step + 1),
               group_digits(l.last_step + 1)});
  }
  table.print(std::cout, "  ");
}

void print_run(const RunRecord& r, const std::vector<EpochMetrics>& epochs,
               const std::vector<store::LayerTimeSummary>& layers,
               const std::vector<store::LayerOverflowSummary>& overflows) {
  const RunConfig& c = r.config;
  const store::Environment& env = r.environment;
  const RunSummary& s = r.summary;
  std::cout << "run " << r.id << ": " << one_line(r.name, 200) << '\n';
  print_field("status:", std::string(store::to_string(r.status)));
  if (!r.damage.empty()) {
    print_field("damaged:", store::describe_damage(r) + "\n(the settings named show their "
                            "defaults; runs delete " + std::to_string(r.id) + " removes the run)");
  }
  print_field("message:", r.message);
  print_field("created:", store::format_utc(r.created_at_ms));
  print_field("started:", store::format_utc(r.started_at_ms));
  print_field("finished:", store::format_utc(r.finished_at_ms));
  if (r.status == store::RecordStatus::running)
    print_field("heartbeat:", store::format_utc(r.heartbeat_at_ms));
  print_field("model:", r.model_name);
  print_field("dataset:", c.dataset.to_string());
  print_field("precision:", precision_of(r) + ", loss scaling " + c.loss_scale.to_string());
  print_field("training:", "batch " + std::to_string(c.batch_size) + ", " +
                               count_of(c.epochs, "epoch") + ", " + group_digits(r.total_steps) +
                               " steps planned, seed " + std::to_string(c.seed));
  print_field("optimizer:", std::string(to_string(c.optimizer.kind)) + ", learning rate " +
                                store::csv_number(c.optimizer.learning_rate));
  std::string device = r.device.empty() ? env.device_kind : r.device;
  if (!env.device_name.empty()) device += ": " + env.device_name;
  if (!env.compute_capability.empty()) device += ", compute capability " + env.compute_capability;
  if (env.threads > 0) device += ", " + count_of(env.threads, "thread");
  print_field("device:", device);
  std::vector<std::string> gpu_options;
  if (c.tf32) gpu_options.push_back("TF32 matmuls");
  if (c.cuda_graphs) gpu_options.push_back("CUDA graphs");
  if (c.data_on_device) gpu_options.push_back("dataset on the GPU");
  if (!gpu_options.empty()) print_field("GPU options:", join(gpu_options, ", "));
  if (c.layer_timing) print_field("timing:", "per layer");
  std::vector<std::string> libraries;
  const std::pair<const char*, const std::string*> versions[] = {{"driver", &env.driver_version},
                                                                 {"CUDA", &env.cuda_version},
                                                                 {"cuDNN", &env.cudnn_version},
                                                                 {"cuBLAS", &env.cublas_version},
                                                                 {"oneDNN", &env.onednn_version}};
  for (const auto& [name, version] : versions) {
    if (!version->empty()) libraries.push_back(std::string(name) + " " + *version);
  }
  print_field("libraries:", join(libraries, ", "));
  print_field("cpu:", env.cpu_model);
  print_field("mixlab:", env.mixlab_version + (env.hostname.empty() ? "" : " on " + env.hostname));
  print_field("steps:", group_digits(s.steps) + " (" + group_digits(s.skipped_steps) +
                            " skipped), final loss scale " + store::csv_number(s.final_loss_scale));
  print_field("step time:", "median " + format_fixed(s.median_step_ms, 3) + " ms, p5 " +
                                format_fixed(s.p5_step_ms, 3) + " ms, p95 " +
                                format_fixed(s.p95_step_ms, 3) + " ms (first " +
                                std::to_string(s.warmup_steps) + " steps left out as warm-up)");
  print_field("throughput:", format_rate(s.samples_per_s) + " samples/s");
  print_field("train:", "loss " + format_fixed(s.final_loss, 4) + ", accuracy " +
                            format_fixed(s.final_accuracy, 4));
  print_field("test:", "loss " + format_fixed(s.test_loss, 4) + ", accuracy " +
                           format_fixed(s.test_accuracy, 4));
  print_field("memory:", format_bytes(s.peak_memory_bytes) + ", wall time " +
                             format_fixed(s.wall_s, 1) + " s");
  print_field("tags:", join(r.tags, ", "));
  print_field("note:", r.note);
  print_layer_times(layers);
  print_layer_overflows(overflows);
  if (epochs.empty()) return;
  std::cout << "epochs:\n";
  Table table({{"epoch", true},
               {"steps", true},
               {"train loss", true},
               {"train acc.", true},
               {"test loss", true},
               {"test acc.", true},
               {"time s", true},
               {"samples/s", true}});
  for (const EpochMetrics& e : epochs) {
    table.add({std::to_string(e.epoch + 1), group_digits(e.steps), format_fixed(e.train_loss, 4),
               format_fixed(e.train_accuracy, 4), format_fixed(e.test_loss, 4),
               format_fixed(e.test_accuracy, 4), format_fixed(e.time_s, 2),
               format_rate(e.samples_per_s)});
  }
  table.print(std::cout, "  ");
}

}  // namespace

int show_run(const RunsArgs& args) {
  const auto& p = positionals(args, 1, 1);
  const std::int64_t id = parse_run_id(p[0]);
  OpenRuns open = open_runs(store_path(args), {&id, 1}, Access::read);
  const std::vector<EpochMetrics> epochs = open.store.epochs(id);
  const std::vector<store::LayerTimeSummary> layers = open.store.layer_times(id);
  const std::vector<store::LayerOverflowSummary> overflows = open.store.layer_overflows(id);
  // The doctor's reports this run measured (mixlab-cli doctor --measure).
  const std::vector<store::DoctorReportRecord> reports = open.store.doctor_reports(id);
  if (args.json) {
    Json j = run_json(open.records[0], epochs, layers, overflows);
    Json& kept = j["doctor_reports"] = Json::array();
    for (const store::DoctorReportRecord& r : reports) {
      kept.push_back({{"id", r.id},
                      {"verdict", r.verdict},
                      {"runs", r.run_ids},
                      {"report", Json::parse(r.report_json, nullptr, false)}});
    }
    print_json(j);
  } else {
    print_run(open.records[0], epochs, layers, overflows);
    for (const store::DoctorReportRecord& r : reports) {
      std::string runs;
      for (const std::int64_t run : r.run_ids) runs += (runs.empty() ? "" : ", ") + std::to_string(run);
      print_field("doctor:", "report " + std::to_string(r.id) + " (runs " + runs + "): " +
                                 r.verdict);
    }
  }
  return kExitOk;
}

}  // namespace mixlab::cli::runs
