// The ptxas driver: assembles PTX into a cubin for one GPU architecture and
// reports each kernel's registers, shared memory, stack and spills.
#pragma once

#include "codegen/Target.h"
#include "support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::codegen {

/// What ptxas reports for one kernel (`ptxas -v`).
struct KernelResources {
  std::string name;
  int registers = 0;
  int64_t sharedBytes = 0, stackBytes = 0, spillStoreBytes = 0, spillLoadBytes = 0;
};

/// An assembled module: the cubin, each kernel's resources, and ptxas's full log.
struct PtxasResult {
  std::vector<std::byte> cubin;
  std::vector<KernelResources> kernels;
  std::string log;
};

/// Assembles PTX for target.archName() with `ptxas -v`; the tool is
/// $KILN_PTXAS, else $CUDA_HOME/bin/ptxas, else /usr/local/cuda/bin/ptxas. A
/// missing ptxas is ErrorCode::Unavailable naming where it looked; a rejected
/// PTX is ErrorCode::CompileError carrying ptxas's log as a note. Temporary
/// files are always removed.
Expected<PtxasResult> runPtxas(std::string_view ptx, const GpuTarget &target);

/// Parses `ptxas -v` output into per-kernel resources (exposed for tests), in
/// the order ptxas reports the kernels.
std::vector<KernelResources> parsePtxasVerbose(std::string_view log);

/// The ptxas runPtxas would run (the first rule above that names a path),
/// whether or not the file exists.
std::string ptxasPath();

} // namespace kiln::codegen
