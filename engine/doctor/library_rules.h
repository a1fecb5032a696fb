// What the doctor assumes of NVIDIA's libraries, each assumption with the versions it holds for
// and the document it comes from. A profile carries the library versions it is predicted with:
// the present GPU's (measured), MixLab's own for a published profile, or a user's stack given
// with `--libraries cublas=11.2,cudnn=8.1` for a what-if.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/device_info.h"

namespace mixlab::doctor {

// A behaviour of a library from a version on.
struct LibraryRule {
  const char* library;  // "cuBLAS"
  const char* since;    // "11.0"
  const char* source;   // the document
};

// 16-bit GEMMs whose dimensions are not multiples of 8 (16 bytes): before these versions they
// ran without tensor cores; from them on they use tensor cores, at a lower efficiency.
inline constexpr const char* kTensorCoreRequirementsSource =
    "NVIDIA, Matrix Multiplication Background User's Guide (DU-09799-001), 2.2 Tensor Core "
    "Requirements, Table 1: FP16 and BF16 dimensions in multiples of 8 (16 bytes) were required "
    "for tensor cores with cuBLAS before 11.0 and cuDNN before 7.6.3; from those versions on "
    "tensor cores are used always, most efficiently at multiples of 8 (Figure 2: cuBLAS 10.1 "
    "against 11.0)";
inline constexpr LibraryRule kMisalignedGemmOnTensorCores{"cuBLAS", "11.0",
                                                          kTensorCoreRequirementsSource};
inline constexpr LibraryRule kMisalignedConvolutionOnTensorCores{"cuDNN", "7.6.3",
                                                                 kTensorCoreRequirementsSource};

// The efficiency of a misaligned 16-bit GEMM on tensor cores, as a fraction of the aligned
// rate, where no GPU has measured it (the GPU calibration does, DeviceProfile::
// misaligned_matmul_efficiency): an estimate, because the guide shows the slowdown in a chart
// without giving a figure.
inline constexpr double kMisalignedEfficiencyEstimate = 0.5;
inline constexpr const char* kMisalignedEfficiencyEstimateSource =
    "an estimate (NVIDIA's guide shows misaligned GEMMs slower on tensor cores from cuBLAS 11.0 "
    "without a figure to read); the GPU calibration measures it (a cuBLASLt 16-bit matmul with "
    "K = 4095 against 4096)";

// The libraries MixLab's CUDA backend is built against: what a published profile predicts with.
LibraryVersions builtin_library_versions();
inline constexpr const char* kBuiltinLibrariesSource =
    "the libraries MixLab's CUDA backend is built against (CUDA 13, cuDNN 9)";

// Whether dotted `version` ("11.2", "8.1.1", "13") is `since` or later, part by part (a missing
// part counts as 0). An empty version is taken as the present one (true).
bool version_at_least(std::string_view version, std::string_view since);

// Whether the rule holds for these libraries (the version of its library, by name).
bool holds(const LibraryRule& rule, const LibraryVersions& libraries);
// The version of the rule's library in `libraries`, "" when not known.
std::string version_of(const LibraryRule& rule, const LibraryVersions& libraries);

// "cublas=11.2,cudnn=8.1" (either or both, any case, dotted numbers) over `base`. Throws
// ConfigError naming the part that is not such ("--libraries: 'cublas=eleven' is not a dotted
// version", "--libraries: unknown library 'nccl' (cublas, cudnn)").
LibraryVersions parse_library_versions(std::string_view text, LibraryVersions base = {});

// "cuBLAS 11.2, cuDNN 8.1" (the parts known).
std::string describe_gpu_libraries(const LibraryVersions& libraries);

}  // namespace mixlab::doctor
