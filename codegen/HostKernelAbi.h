// The C functions generated host kernels may call besides libm: parallel
// loops, heap scratch and narrow-float conversions. Part of the CPU target's
// description (the target layer, below codegen and runtime): codegen emits
// calls to these names, runtime/cpu defines them, and neither includes the other.
#pragma once

#include <cstdint>

extern "C" {
/// Runs body(closure, begin, end) over chunks covering [0, n) on the global
/// thread pool (runtime/cpu/ThreadPool.h) and returns when all have run.
void kiln_cpu_parallel_for(void (*body)(void *closure, int64_t begin, int64_t end), void *closure,
                           int64_t n);

/// `bytes` of 64-byte aligned memory for a kernel-local buffer too large for a
/// thread's stack, from the blocks this thread freed lately when one is large
/// enough. A kernel cannot return an error, so running out of memory aborts
/// with a message naming the size.
void *kiln_cpu_scratch_alloc(int64_t bytes);
/// Gives a block back; the thread keeps a few (at most 40 MiB) for reuse.
void kiln_cpu_scratch_free(void *pointer);

// Narrow-float conversions where no instruction does the job (fp8 both ways;
// f64 -> f16/bf16 rounding once; f16 on CPUs without F16C), so the JIT's
// results match the reference interpreter bit for bit (support/FloatConvert.h).
uint8_t kiln_cpu_f32_to_f8e4m3(float value);
uint8_t kiln_cpu_f64_to_f8e4m3(double value);
float kiln_cpu_f8e4m3_to_f32(uint8_t bits);
uint8_t kiln_cpu_f32_to_f8e5m2(float value);
uint8_t kiln_cpu_f64_to_f8e5m2(double value);
float kiln_cpu_f8e5m2_to_f32(uint8_t bits);
uint16_t kiln_cpu_f32_to_f16(float value);
uint16_t kiln_cpu_f64_to_f16(double value);
float kiln_cpu_f16_to_f32(uint16_t bits);
uint16_t kiln_cpu_f64_to_bf16(double value);
}
