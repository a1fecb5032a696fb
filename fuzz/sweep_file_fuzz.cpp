// Fuzzes sweep files (`mixlab-cli sweep --file`, and the spec_json the store keeps):
// parse_sweep_json, then, on what parses, the plan (every member), the JSON round trip
// parse(to_json(s)) == s, and each member's own JSON round trip, as the sweep commands and the
// Slurm tasks read them back. Bad input must end in a ConfigError; any other exception, a crash,
// a leak, a spec that parses but cannot be planned, or a broken round trip is a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "app/store/sweep_plan.h"
#include "engine/core/error.h"
#include "fuzz/fuzz_support.h"

using mixlab::fuzz::finding;
using mixlab::fuzz::unexpected_exception;
namespace store = mixlab::store;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  store::SweepSpec spec;
  try {
    spec = store::parse_sweep_json(text, "fuzz.json");
  } catch (const mixlab::ConfigError&) {
    return 0;
  } catch (const std::exception& e) {
    unexpected_exception("parse_sweep_json", e);
  }
  try {
    const std::string written = store::to_json(spec).dump();
    const store::SweepSpec again = store::parse_sweep_json(written, "again");
    if (store::to_json(again).dump() != written) {
      finding("parse_sweep_json(to_json(s)) != s; to_json wrote:\n" + written);
    }
    const std::vector<store::SweepMember> members = store::plan_sweep(spec);
    if (members.empty()) finding("a sweep that parses plans no member");
    const std::vector<std::string> axes = spec.axes();
    (void)spec.display_name();
    // Each member's settings as the store keeps them and the sweep reads them back (the first
    // few: a plan may have 10000).
    for (std::size_t i = 0; i < members.size() && i < 16; ++i) {
      const store::SweepMember back = store::parse_sweep_member(store::to_json(members[i]).dump());
      if (back.train_args() != members[i].train_args()) {
        finding("parse_sweep_member(to_json(m)) has other train arguments");
      }
      (void)members[i].label(axes);
    }
  } catch (const std::exception& e) {
    unexpected_exception("to_json / plan_sweep / parse_sweep_member of a parsed sweep", e);
  }
  return 0;
}
