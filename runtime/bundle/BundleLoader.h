// Loading an AOT bundle into a runnable CompiledModel with kiln_rt alone: no
// LLVM, no NVRTC. Every section is checked before anything is loaded.
#pragma once

#include "runtime/CompiledModel.h"
#include "runtime/bundle/BundleFile.h"
#include "support/Error.h"

#include <set>
#include <string>
#include <string_view>

namespace kiln::runtime::bundle {

struct BundleLoadOptions {
  /// Bind the bundle's weights (if it has any) as the model's parameters.
  bool bindWeights = true;
  /// CPU bundles: the CPU features to check the code against instead of this
  /// machine's (tests use it to play a machine that lacks some).
  const std::set<std::string> *assumeCpuFeatures = nullptr;
};

struct LoadedBundle {
  CompiledModel model;
  BundleMeta meta;
  /// The "tuning" section's text (empty when the bundle has none).
  std::string tuningRecords;
  /// What was loaded: "host shared object (x86_64-pc-linux-gnu, znver3)",
  /// "cubin for sm_90a on NVIDIA H100 ...".
  std::string code;
  bool weightsBound = false;
};

/// Reads and loads the bundle at `path`. Errors name the file and what is wrong
/// with it: not a bundle, another format version (naming both), truncated,
/// checksum mismatch, a malformed section, code for another CPU (listing the
/// missing features) or for GPUs other than this one (listing both), no CUDA driver.
Expected<LoadedBundle> loadBundle(const std::string &path, const BundleLoadOptions &options = {});

/// The same from bytes already in memory; `name` stands for the file in errors.
Expected<LoadedBundle> loadBundleFromBytes(std::string_view bytes,
                                           const BundleLoadOptions &options = {},
                                           std::string_view name = "<memory>");

/// Every check of loading (container, meta, plans, weights, sections the
/// target needs) without loading code or touching a device: the fuzzer's entry.
Expected<void> checkBundle(std::string_view bytes);

} // namespace kiln::runtime::bundle
