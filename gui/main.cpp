// mixlab: the desktop workbench. Without a display it says so and runs the default experiment
// headless (what `mixlab-cli train` runs), so a terminal user or a CI machine still gets a run.
#include <time.h>
#include <unistd.h>

#include <QApplication>
#include <QFileInfo>
#include <QIcon>
#include <QMessageBox>
#include <QTimer>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "app/cli/commands.h"
#include "app/cli/version_info.h"
#include "app/store/run_store.h"
#include "ui/main_window.h"
#include "ui/run/run_panel.h"
#include "ui/screenshot_tour.h"
#include "ui/settings.h"

namespace {

constexpr const char* kUsage =
    "usage: mixlab [--model MODEL] [--dataset D] [--db PATH] [--headless]\n"
    "\n"
    "Opens the MixLab workbench. MODEL is a model file (JSON) or a built-in model (fashion-mlp,\n"
    "fashion-cnn, cifar10-mlp, cifar100-convnet); without it the last model opens. D is a dataset\n"
    "as mixlab-cli takes it (fashion-mnist, mnist:DIR, cifar10:DIR, synthetic...). Runs are\n"
    "recorded in PATH, else $MIXLAB_DB, else $XDG_DATA_HOME/mixlab/runs.sqlite.\n"
    "\n"
    "Without a display (no DISPLAY or WAYLAND_DISPLAY), or with --headless, it trains the model\n"
    "on the dataset in the terminal instead, as `mixlab-cli train` does.\n"
    "  --startup-benchmark       print how long the window took to show, then quit\n"
    "  --screenshot-tour DIR     run a short float32-vs-mixed comparison on synthetic data,\n"
    "                            save editor.png, live.png and compare.png in DIR, then quit\n";

struct Options {
  std::string model;
  std::string dataset;
  std::string db;
  bool headless = false;
  bool startup_benchmark = false;
  std::string screenshot_dir;
};

// Milliseconds since this process started (10 ms resolution: /proc's clock ticks).
double ms_since_process_start() {
  std::ifstream in("/proc/self/stat");
  std::string stat;
  std::getline(in, stat);
  std::istringstream fields(stat.substr(stat.rfind(')') + 2));
  std::string field;
  long long start_ticks = 0;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) start_ticks = std::atoll(field.c_str());
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  const double now_ms = now.tv_sec * 1000.0 + now.tv_nsec / 1e6;
  return now_ms - start_ticks * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Calls `done` once, after the window's first paint has been handled.
class FirstPaint : public QObject {
 public:
  explicit FirstPaint(std::function<void()> done) : done_(std::move(done)) {}
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() == QEvent::Paint && done_) {
      QTimer::singleShot(0, this, std::exchange(done_, nullptr));
    }
    return QObject::eventFilter(watched, event);
  }

 private:
  std::function<void()> done_;
};

bool has_display() {
  const auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0';
  };
  return set("DISPLAY") || set("WAYLAND_DISPLAY") || set("QT_QPA_PLATFORM");
}

}  // namespace

int main(int argc, char** argv) {
  const auto main_entered = std::chrono::steady_clock::now();
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&](const char* name) -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "mixlab: %s needs a value\n%s", name, kUsage);
        std::exit(2);
      }
      if (*argv[i + 1] == '\0') {
        std::fprintf(stderr, "mixlab: %s needs a value, got an empty one\n%s", name, kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--version") {
      std::fputs(mixlab::cli::version_report("mixlab").c_str(), stdout);
      std::printf("Qt %s\n", qVersion());
      return 0;
    } else if (arg == "--model") {
      options.model = value("--model");
    } else if (arg == "--dataset") {
      options.dataset = value("--dataset");
    } else if (arg == "--db") {
      options.db = value("--db");
    } else if (arg == "--headless") {
      options.headless = true;
    } else if (arg == "--screenshot-tour") {
      options.screenshot_dir = value("--screenshot-tour");
    } else if (arg == "--startup-benchmark") {
      options.startup_benchmark = true;
    } else if (arg.rfind("-", 0) != 0 && options.model.empty()) {
      options.model = arg;
    } else {
      std::fprintf(stderr, "mixlab: unknown option '%s'\n%s", arg.c_str(), kUsage);
      return 2;
    }
  }

  if (options.headless || !has_display()) {
    if (!options.headless) {
      std::fprintf(stderr,
                   "mixlab: no display (neither DISPLAY nor WAYLAND_DISPLAY is set): running the "
                   "default experiment headless, as `mixlab-cli train` does\n");
    }
    std::vector<std::string> args{"train", "--model",
                                  options.model.empty() ? "fashion-mlp" : options.model};
    if (!options.dataset.empty()) args.insert(args.end(), {"--dataset", options.dataset});
    if (!options.db.empty()) args.insert(args.end(), {"--db", options.db});
    return mixlab::cli::run_cli(args);
  }

  QApplication app(argc, argv);
  QApplication::setOrganizationName(QStringLiteral("MixLab"));
  QApplication::setApplicationName(QStringLiteral("mixlab"));
  QApplication::setApplicationVersion(QStringLiteral(MIXLAB_VERSION));
  // Wayland compositors match the window to org.mixlab.MixLab.desktop (and its icon) by this.
  QApplication::setDesktopFileName(QStringLiteral("org.mixlab.MixLab"));
  QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/mixlab.svg")));

  const std::filesystem::path db =
      options.db.empty() ? mixlab::store::default_store_path() : std::filesystem::path(options.db);
  mixlab::ui::MainWindow window(db);
  namespace settings = mixlab::ui::settings;
  QString model = QString::fromStdString(options.model);
  if (model.isEmpty()) {
    model = settings::kLastModelFile.get();
    if (model.isEmpty() || !QFileInfo::exists(model)) model = settings::kLastTemplate.get();
  }
  if (!window.open_model(model)) window.open_model(QStringLiteral("fashion-mlp"));
  QString dataset_error;
  if (!options.dataset.empty())
    dataset_error = window.run_panel()->set_dataset(QString::fromStdString(options.dataset));
  window.show();
  if (!dataset_error.isEmpty()) {
    // Said on the terminal and in the window; no dataset stays chosen until the user picks one.
    std::fprintf(stderr, "mixlab: %s\n", dataset_error.toLocal8Bit().constData());
    QTimer::singleShot(0, &window, [&window, dataset_error] {
      QMessageBox::warning(&window, QObject::tr("Dataset"), dataset_error);
    });
  }

  if (options.startup_benchmark) {
    // Report right after the window's first paint has been handled (its children paint in the
    // same backing-store flush).
    auto* painted = new FirstPaint([&] {
      const double since_main =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - main_entered)
              .count();
      std::printf("window shown %.0f ms after the process started (%.0f ms after main)\n",
                  ms_since_process_start(), since_main);
      std::fflush(stdout);
      QApplication::quit();
    });
    window.installEventFilter(painted);
  }
  int tour_exit = 0;
  if (!options.screenshot_dir.empty()) {
    auto* tour = new mixlab::ui::ScreenshotTour(
        &window, QString::fromStdString(options.screenshot_dir), 300, &window);
    QObject::connect(tour, &mixlab::ui::ScreenshotTour::finished, &app,
                     [&](bool ok, const QString& message) {
                       std::fprintf(ok ? stdout : stderr, "mixlab: screenshot tour: %s\n",
                                    message.toLocal8Bit().constData());
                       tour_exit = ok ? 0 : 1;
                       QApplication::quit();
                     });
    QTimer::singleShot(0, tour, &mixlab::ui::ScreenshotTour::start);
  }
  const int rc = QApplication::exec();
  return rc != 0 ? rc : tour_exit;
}
