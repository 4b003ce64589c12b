// The AOT bundle file: a section file (runtime/cache/SectionFile.h) with its
// own magic and version, and the sections a bundle holds (docs/aot.md).
// Writing and inspecting live here; loading in BundleLoader.h.
#pragma once

#include "runtime/Device.h"
#include "runtime/LaunchPlan.h"
#include "runtime/SizeBucketRules.h"
#include "runtime/cache/SectionFile.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime::bundle {

inline constexpr std::string_view kBundleMagic = "KILNAOT\n";
/// Bumped whenever a section's layout changes; a bundle of another version is rejected.
/// 2: launch dims carry tensor maps; 3: step kinds (all_reduce); 4: derived values.
inline constexpr uint32_t kBundleFormatVersion = 5;
inline constexpr SectionFileFormat kBundleFormat{kBundleMagic, kBundleFormatVersion,
                                                 "kiln bundle"};

/// Section names. Per GPU architecture A: "cuda.A.plan", "cuda.A.ptx", "cuda.A.cubin".
/// The largest bundle file kiln reads (weights included); a bound, so a file
/// that grows while read cannot exhaust memory.
inline constexpr uint64_t kMaxBundleBytes = uint64_t{1} << 36;
inline constexpr std::string_view kMetaSection = "meta";
inline constexpr std::string_view kHostPlanSection = "plan";
inline constexpr std::string_view kHostCodeSection = "host.so";
inline constexpr std::string_view kSizeBucketsSection = "size-buckets";
inline constexpr std::string_view kWeightsSection = "weights";
inline constexpr std::string_view kTuningSection = "tuning";
std::string gpuSectionName(std::string_view arch, std::string_view part);

enum class BundleTarget { Cpu, Cuda };
std::string_view bundleTargetName(BundleTarget target);

/// The "meta" section: text lines "key: value", readable with `kiln bundle-info`.
struct BundleMeta {
  std::string kilnVersion; ///< the kiln that wrote it
  BundleTarget target = BundleTarget::Cpu;
  std::string model;       ///< the graph's name
  /// Cpu: what the host code was compiled for (LLVM's triple, CPU and features).
  std::string cpuTriple, cpuName, cpuFeatures;
  /// Cuda: the architectures with code, in the order given to `kiln aot --arch`.
  std::vector<std::string> gpuArchs;
};
std::string encodeMeta(const BundleMeta &meta);
Expected<BundleMeta> decodeMeta(std::string_view text);

/// One GPU architecture's kernels and the plan they were lowered into
/// (schedules, and so workspaces and launch dims, differ per architecture).
struct GpuArchCode {
  std::string arch;
  LaunchPlan plan;
  std::vector<LaunchDims> stepDims; ///< one per plan step
  std::string ptx;
  std::string cubin; ///< empty when ptxas was unavailable
};

/// Everything a bundle holds, as the writer provides it.
struct BundleContents {
  BundleMeta meta;
  LaunchPlan hostPlan; ///< Cpu; a symbolic plan runs every size in its symbols' ranges
  /// Cpu, a symbolic plan: the size buckets that run part of the range with schedules of their
  /// own (docs/dynamic-shapes.md), smallest first; their kernels are in the same shared object.
  std::vector<SizeBucketPlan> hostBuckets;
  std::string hostSharedObject; ///< Cpu: an ELF shared object exporting every kernel
  std::vector<GpuArchCode> gpu; ///< Cuda
  NamedTensors weights;         ///< optional: bound as parameters at load
  std::string tuningRecords;    ///< optional: the tuning records, as text
};

/// The bundle's bytes (deterministic for the same contents).
std::string encodeBundle(const BundleContents &contents);

/// Writes a bundle to `path` atomically (a temporary file in the same
/// directory, renamed into place): a failure leaves no file behind and any
/// older file at `path` untouched. IOError naming the path and the reason.
Expected<void> writeBundleFile(const std::string &path, std::string_view bytes);

/// What `kiln bundle-info` prints.
struct BundleInfo {
  uint32_t formatVersion = 0;
  std::string header;
  BundleMeta meta;
  std::vector<std::pair<std::string, size_t>> sections; ///< name and payload bytes
  size_t fileBytes = 0;
};
/// Checks the container (magic, version, checksum) and the meta section.
Expected<BundleInfo> inspectBundle(std::string_view bytes);

} // namespace kiln::runtime::bundle
