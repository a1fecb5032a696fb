// Sanity bounds on a device's figures, in one place for the figures a profile file publishes
// (device_profile.cpp: `--profiles FILE`) and those a calibration cache keeps
// (local_profile.cpp: ~/.cache/mixlab/*-profiles.json). A figure outside its bounds is refused
// (a profile file: ProfileError naming the file, the profile and the field) or has its cache
// entry measured again; without them a bandwidth of 1e-308 GB/s or a roof of 1e-300 FLOP/s
// would give infinite step times and made-up speed-ups.
//
// The bounds hold every real device with a wide margin (a laptop CPU's 10 GB/s and 50 GFLOP/s,
// an H200's 4.8 TB/s and 2 PFLOP/s of FP8):
//   memory or host-link bandwidth   0.1 GB/s .. 100 TB/s
//   peak arithmetic rate            1 GFLOP/s .. 100 PFLOP/s
//   launch or call overhead         0.1 us .. 10 ms
//   streaming multiprocessors       1 .. 100000
//   clock                           1 MHz .. 100 GHz
//   memory size                     1 MiB .. 1 PiB
//   L2 cache                        1 KiB .. 64 GiB
#pragma once

#include <string>

namespace mixlab::doctor {

struct FigureBounds {
  double min;  // in the figure's own unit: bytes/s, FLOP/s, s, count, MHz, bytes
  double max;
  double print_unit;      // errors print value / print_unit ...
  const char* unit_name;  // ... in this unit: "GB/s"
};

inline constexpr FigureBounds kBandwidthBounds{0.1e9, 100e12, 1e9, "GB/s"};
inline constexpr FigureBounds kPeakRateBounds{1e9, 100e15, 1e12, "TFLOP/s"};
inline constexpr FigureBounds kOverheadBounds{0.1e-6, 10e-3, 1e-6, "us"};
inline constexpr FigureBounds kSmCountBounds{1, 100000, 1, "SMs"};
inline constexpr FigureBounds kClockBounds{1, 100000, 1, "MHz"};
inline constexpr FigureBounds kMemoryBounds{1048576.0, 1125899906842624.0, 1073741824.0, "GiB"};
inline constexpr FigureBounds kL2Bounds{1024.0, 68719476736.0, 1048576.0, "MiB"};
// A rate as a fraction of another (a misaligned GEMM's of the aligned one's).
inline constexpr FigureBounds kFractionBounds{0.001, 4.0, 0.01, "%"};

// Empty when `value` lies within `bounds` (or is 0 and `zero_allowed`: a figure the device does
// not have); else what is wrong: "is 1e-299 GB/s; a real device's lies between 0.1 and 1e+05
// GB/s" (NaN and infinities are outside).
std::string figure_problem(double value, const FigureBounds& bounds, bool zero_allowed = false);

}  // namespace mixlab::doctor
