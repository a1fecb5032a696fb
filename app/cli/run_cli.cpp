// mixlab-cli's entry: help, version, and each command with its errors mapped to exit codes.
// A library function so that the GUI's headless mode runs exactly the same command.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/version_info.h"
#include "app/store/safe_file.h"
#include "app/store/sqlite.h"
#include "engine/core/error.h"
#include "engine/doctor/device_profile.h"

namespace {

constexpr const char* kHelp =
    "mixlab-cli " MIXLAB_VERSION
    " - mixed-precision training workbench (command line)\n"
    "\n"
    "usage: mixlab-cli COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  train     train a model: mixlab-cli train [--model M] [--dataset D] [--precision P] ...\n"
    "            (mixlab-cli train --help lists every option)\n"
    "  inspect   the layer table of a model: mixlab-cli inspect MODEL [--precision P] [--json]\n"
    "  bench     step times of the reference models: mixlab-cli bench [--device D] [--threads N]\n"
    "            [--steps N]\n"
    "  doctor    why mixed precision is slower or faster than float32, and what to change:\n"
    "            mixlab-cli doctor MODEL [--device D | --profile NAME] [--batch-size N]\n"
    "            [--measure] [--sweep batch=N,...] [--what-if] [--json]\n"
    "  devices   the devices this build can train on, and why the GPU backend cannot when not\n"
    "  self-test a short run on every backend and policy, a store round trip and a CSV export;\n"
    "            exits non-zero on any failure\n"
    "  runs      the recorded runs: mixlab-cli runs list|show|export|compare|rename|tag|note|\n"
    "            delete|import [--db PATH] (mixlab-cli runs --help says more)\n"
    "  sweep     a grid of runs, here or as a Slurm job array: mixlab-cli sweep --model M\n"
    "            --precision float32,mixed_float16 --batch-size 32,64 --repeats 3\n"
    "            [--executor slurm --shared-dir DIR]; sweep list|show|resume|status|cancel ID\n"
    "  export    a model out: mixlab-cli export MODEL --to keras-json|keras|pytorch|mixlab\n"
    "            [--run ID] [train options] [-o FILE] (keras, pytorch: a runnable script)\n"
    "  predict   the model's outputs for the first test samples: mixlab-cli predict MODEL\n"
    "            [--dataset D] [--count N] [--json]\n"
    "\n"
    "MODEL is a model file (MixLab's JSON, Keras 3 or tf.keras 2 JSON, or a .keras archive with\n"
    "its weights) or a built-in model: fashion-mlp, fashion-cnn, cifar10-mlp, cifar100-convnet.\n"
    "DEVICE (train, bench --device): cpu, cuda (the first GPU), cuda:N, or auto (the default:\n"
    "the GPU when the CUDA backend can train on it, else the CPU). The CUDA backend is the\n"
    "library lib/mixlab/libmixlab-cuda.so next to the program ($MIXLAB_CUDA_BACKEND overrides\n"
    "the path); mixlab-cli --version says whether it can be used here and why not.\n"
    "exit codes: 0 success, 1 run failed or diverged, or the run store, an output file or stdout\n"
    "could not be read or written, 2 bad input (including a run id the store does not hold, or\n"
    "an output file that is a run database), 130 interrupted\n";

// An error on stderr, "mixlab-cli: PREFIXmessage": each line of the message made printable
// (engine/core/error.h) at this last step too, whatever text a message quotes.
void print_error(const char* prefix, const char* what) {
  std::string text;
  for (std::string_view rest = what;;) {
    const auto newline = rest.find('\n');
    text += mixlab::printable(rest.substr(0, newline));
    if (newline == std::string_view::npos) break;
    text += '\n';
    rest.remove_prefix(newline + 1);
  }
  std::fprintf(stderr, "mixlab-cli: %s%s\n", prefix, text.c_str());
}

}  // namespace

namespace mixlab::cli {
namespace {

// A command by name, with bad input, failed runs and store errors mapped to exit codes and
// messages on stderr. Never throws.
int run_command(const std::string& command, const std::vector<std::string>& args) {
  try {
    if (command == "train") return run_train(args);
    if (command == "inspect") return run_inspect(args);
    if (command == "bench") return run_bench(args);
    if (command == "doctor") return run_doctor(args);
    if (command == "devices") return run_devices(args);
    if (command == "self-test") return run_self_test(args);
    if (command == "runs") return run_runs(args);
    if (command == "sweep") return run_sweep(args);
    if (command == "export") return run_export(args);
    if (command == "predict") return run_predict(args);
    throw UsageError("unknown command " + quote(command) +
                     " (train, inspect, bench, doctor, devices, runs, sweep, export, predict, "
                     "self-test)");
  } catch (const UsageError& e) {
    print_error("", e.what());
    return kExitBadInput;
  } catch (const SpecError& e) {
    print_error("invalid model: ", e.what());
    return kExitBadInput;
  } catch (const DatasetError& e) {
    print_error("dataset: ", e.what());
    return kExitBadInput;
  } catch (const RunNotFoundError& e) {
    print_error("run store: ", e.what());
    return kExitBadInput;
  } catch (const store::OutputTargetError& e) {
    std::fprintf(stderr, "mixlab-cli: %s\n", e.what());
    return kExitBadInput;
  } catch (const store::StoreError& e) {
    print_error("run store: ", e.what());
    return kExitRunFailed;
  } catch (const doctor::ProfileError& e) {
    print_error("", e.what());
    return kExitBadInput;
  } catch (const ConfigError& e) {
    print_error("", e.what());
    return kExitBadInput;
  } catch (const std::exception& e) {
    print_error("error: ", e.what());
    return kExitRunFailed;
  }
}

// The one check of stdout, after every command: what it printed there (a table, JSON, CSV, a
// script) reached it. A failed write (a full disk: > /dev/full) is named on stderr; false then.
bool stdout_written() {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && std::ferror(stdout) == 0 && std::cout.good()) return true;
  std::fprintf(stderr, "mixlab-cli: cannot write to stdout: %s\n",
               !flushed && err != 0 ? std::strerror(err)
                                    : "a write failed; the output is incomplete");
  return false;
}

}  // namespace
}  // namespace mixlab::cli

int mixlab::cli::run_cli(std::vector<std::string> args) {
  using namespace mixlab::cli;
  int status = kExitOk;
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(kHelp, args.empty() ? stderr : stdout);
    status = args.empty() ? kExitBadInput : kExitOk;
  } else if (args[0] == "--version") {
    std::fputs(version_report("mixlab-cli").c_str(), stdout);
  } else {
    const std::string command = args[0];
    args.erase(args.begin());
    status = run_command(command, args);
  }
  // Output that never arrived is a failure, whatever the command thought.
  if (!stdout_written() && status == kExitOk) status = kExitRunFailed;
  return status;
}
