// The identity of a fusion group and of a target, as the tuning database keys
// them (docs/tuning.md): canonical text, deterministic, independent of value
// names and of where the group sits in the graph.
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "runtime/tuning/TuningRecord.h"

#include <string>

namespace kiln::tuning {

/// The group's signature (ops in order, dtypes, attributes, which operand
/// feeds which op; values numbered by first use) and, separately, its shapes.
struct GroupIdentity {
  std::string signature;
  std::string shapes;
  std::string summary; ///< one line for people (group kind, ops, main shapes)
};

GroupIdentity groupIdentity(const ir::Graph &graph, const passes::FusionGroup &group);

/// Versions a GPU record depends on besides the architecture ("unavailable"
/// where a component is missing).
struct GpuToolchainVersions {
  std::string driver;  ///< CUDA driver version, e.g. "13000"
  std::string toolkit; ///< ptxas / NVRTC version text
  std::string cudnn;   ///< cuDNN version, e.g. "9.10.2"
};

/// "cpu x86_64-pc-linux-gnu znver4 +avx2,... cores=16" — everything on the
/// CPU that changes which schedule wins.
std::string targetFingerprint(const codegen::CpuTarget &target);
/// "gpu sm_90a sms=132 l2=... driver=... toolkit=... cudnn=...".
std::string targetFingerprint(const codegen::GpuTarget &target,
                              const GpuToolchainVersions &versions);

/// The database key of `group` on a target with that fingerprint, for this kiln.
TuningKey tuningKey(const GroupIdentity &group, const std::string &targetFingerprint);

} // namespace kiln::tuning
