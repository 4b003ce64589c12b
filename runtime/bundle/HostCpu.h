// What a CPU bundle's code needs from the machine that loads it: the
// architecture of its triple and the instruction-set extensions (LLVM's
// feature names) it was compiled for, detected here without LLVM (CPUID).
#pragma once

#include "support/Error.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime::bundle {

/// The instruction-set features of this CPU that the operating system lets
/// programs use, by LLVM's names ("avx2", "fma", "avx512f", ...). Only the
/// features in kiln's detection table (the ones generated code may use) are
/// reported; empty on architectures other than x86-64.
const std::set<std::string> &hostCpuFeatures();

/// Whether hostCpuFeatures() can tell if `feature` is present.
bool isDetectableCpuFeature(std::string_view feature);

/// The features enabled ("+name") in an LLVM feature string that the table
/// can detect and `host` lacks, in the string's order.
std::vector<std::string> missingCpuFeatures(std::string_view requiredFeatures,
                                            const std::set<std::string> &host);

/// The architecture this kiln was built for, as a triple's first component ("x86_64").
std::string_view hostArchitecture();

/// Checks a bundle's triple and feature string against this machine
/// (`host`: the features to assume, normally hostCpuFeatures()). The error
/// (Unsupported) names the bundle's triple and every missing feature.
Expected<void> checkHostCpu(std::string_view triple, std::string_view cpuName,
                            std::string_view features, const std::set<std::string> &host);

} // namespace kiln::runtime::bundle
