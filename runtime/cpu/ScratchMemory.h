// Heap scratch for kernel-local buffers too large for a thread's stack: the
// generated host code allocates it on function entry and frees it on exit.
#pragma once

#include <cstdint>

extern "C" {
/// `bytes` of 64-byte aligned memory, from the blocks this thread freed
/// lately when one is large enough. A kernel cannot return an error, so
/// running out of memory aborts with a message naming the size.
void *kiln_cpu_scratch_alloc(int64_t bytes);
/// Gives a block back; the thread keeps a few (at most 40 MiB) for reuse.
void kiln_cpu_scratch_free(void *pointer);
}
