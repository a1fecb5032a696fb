// mixlab-cli: MixLab's engine without a GUI: inspect models, train, benchmark, run history.
#include <string>
#include <vector>

#include "app/cli/commands.h"

int main(int argc, char** argv) {
  return mixlab::cli::run_cli(std::vector<std::string>(argv + 1, argv + argc));
}
