// The communicator one rank of `kiln train` hands the Trainer: the host one (MPI)
// for a training program on the CPU, NCCL opened over it for one on the GPU.
#pragma once

#include "compiler/Compile.h"
#include "runtime/dist/Communicator.h"

#include <memory>

namespace kiln::tool {

/// For a group of several ranks: `host` itself when the training program runs on
/// the CPU; NCCL opened over `host` on GPU 0 (the local rank's GPU, which
/// selectLocalRankGpu made the only one visible) when it runs on a GPU (--target
/// cuda, or auto with a usable GPU on every rank), so the program's all_reduce
/// reduces device buffers while the Trainer's own exchanges use
/// hostCommunicator(). The result keeps `host` alive. A rank that cannot load NCCL
/// or open its GPU makes every rank fail, each saying which is missing; ranks
/// whose --target auto chose differently fail together too.
Expected<std::shared_ptr<runtime::dist::Communicator>>
openRankCommunicator(std::shared_ptr<runtime::dist::Communicator> host,
                     const CompileOptions &compile);

} // namespace kiln::tool
