// The reference evaluator of kernel IR: runs a kernel on the host, one
// statement at a time, so lowering can be tested independently of any backend.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kiln::kir {

/// Limits that turn a runaway kernel into an error instead of a hang.
struct EvaluateOptions {
  int64_t maxLoopIterations = int64_t{1} << 30; ///< summed over every loop
  int64_t maxLocalBytes = int64_t{1} << 30;     ///< one Allocate's storage
};

/// Runs `kernel` with `params[i]` as the memory of `kernel.params[i]`: each
/// span must hold exactly size * dtypeByteSize elements' bytes, in the
/// element encoding of ScalarOps.h (little-endian, f16/bf16/f8 as their bits,
/// bool as one byte).
///
/// Every loop runs serially in order, whatever its kind (parallel, vectorized,
/// block and thread loops included). Allocate gives zero-filled storage. Each
/// operation has the meaning stated in ScalarOps.h. A Select evaluates both arms
/// (a backend may), so an out-of-bounds load in the arm not taken is reported.
///
/// The kernel must pass the verifier (kir::verifyKernel, whose error is returned
/// as it is): types, scopes and bindings are not checked again here. A GPU
/// statement or shuffle (which the verifier admits inside thread loops) is
/// ErrorCode::Unsupported: the evaluator runs threads one after another.
///
/// Run-time errors (the message starts with "kernel <name>: "): a parameter
/// count or size mismatch; an out-of-bounds access, naming the buffer, the
/// element, the buffer's size and, for vectors, the access's first element;
/// a loop whose bounds overflow i64; the limits of `options`. On error the
/// parameters may be partly written.
Expected<void> evaluateKernel(const Kernel &kernel, std::span<const std::span<std::byte>> params,
                              const EvaluateOptions &options = {});

/// The same with HostTensors: tensor i must have kernel.params[i]'s dtype and
/// its number of elements (any shape).
Expected<void> evaluateKernel(const Kernel &kernel, std::span<HostTensor> params,
                              const EvaluateOptions &options = {});

/// "out-of-bounds load a[70] (a has 64 elements; 4-lane access at a[68])" for lane `lane` of
/// an access of `lanes` elements at `first`: the evaluator's and the simulator's message.
std::string outOfBoundsText(std::string_view access, std::string_view buffer, int64_t size,
                            int64_t first, int lane, int lanes);

} // namespace kiln::kir
