// The warpgroup matrix products of sm_90a (kir::Wgmma): their shapes, the accumulator layout
// of each thread, and how a shared-memory matrix descriptor names an operand's elements, as
// the PTX ISA defines them ("Asynchronous Warpgroup Level Matrix Shared Memory Layout",
// "Matrix Descriptor Format"). GPU lowering lays tiles out by these functions, the backends
// encode descriptors with them, and the simulator reads operands through them.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "ir/kernel/MmaLayout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::kir {

inline constexpr int kWarpgroupThreads = 128;
inline constexpr int kWgmmaM = 64;
/// The only swizzle kiln uses: 16-byte chunks of 128-byte rows, XORed by the row within each
/// 1024-byte atom of 8 rows (descriptor swizzle mode 1).
inline constexpr int64_t kWgmmaRowBytes = 128;
inline constexpr int64_t kWgmmaAtomBytes = 1024;

struct WgmmaShapeInfo {
  int k = 16;
  DType operandDtype = DType::BF16; ///< the operands' buffer dtype (F32 for tf32)
  std::string_view ptxType;         ///< "bf16", "f16", "tf32", "e4m3"
  bool mnMajorAllowed = true;       ///< the ISA transposes only 16-bit operands
};

const WgmmaShapeInfo &wgmmaShapeInfo(WgmmaKind kind);
std::string_view wgmmaKindName(WgmmaKind kind); ///< "bf16.k16", ...
/// "m64n128k16.f32.bf16.bf16": the shape and types of the PTX instruction.
std::string wgmmaPtxShape(WgmmaKind kind, int n);

/// Whether `n` is an N the products take: 8 .. 256 in steps of 8.
bool isWgmmaN(int n);

/// The (row, column) of D that thread `thread` (0 .. 127 within its warpgroup) holds as its
/// `element`-th accumulator (0 .. n/2 - 1): the mma C layout of each n8 column block, warp w
/// of the group on rows 16w .. 16w+15.
MatrixPosition wgmmaAccumulatorPosition(int thread, int element);

/// The fields of a 64-bit matrix descriptor, in bytes (the encoding drops their low 4 bits and
/// keeps 18 bits of the start address).
struct WgmmaDescriptor {
  uint32_t startAddress = 0; ///< shared-memory byte address of the operand's first element
  uint32_t leadingBytes = 0;
  uint32_t strideBytes = 0;
  int baseOffset = 0;        ///< bits 49..51; 0 for atoms at 1024-byte boundaries
  int swizzle = 1;           ///< bits 62..63: 1 = 128-byte swizzle
};

uint64_t encodeWgmmaDescriptor(const WgmmaDescriptor &descriptor);
WgmmaDescriptor decodeWgmmaDescriptor(uint64_t bits);

/// The 128-byte swizzle of a shared byte address: bits 4..6 XOR bits 7..9.
uint32_t swizzle128(uint32_t address);

/// The shared byte address (after the swizzle) of element (mn, k) of an operand read through
/// `descriptor` (swizzle mode 1): M/N index `mn`, K index `k`, `elementBytes` wide.
uint32_t wgmmaOperandAddress(const WgmmaDescriptor &descriptor, bool mnMajor, int elementBytes,
                             int mn, int k);

/// What makes a product malformed (nullopt: nothing): an N out of range, an accumulator
/// fragment that is not n/2 f32 registers, an operand that is not a shared buffer of the
/// product's dtype, an MN-major operand of a product that cannot transpose, strides that are
/// not multiples of 16 bytes below 2^18.
/// Taking the fields, tests ask it without building a node.
std::optional<std::string> wgmmaProblem(WgmmaKind kind, int n, const Fragment &d,
                                        const SharedMatrix &a, const SharedMatrix &b);
std::optional<std::string> wgmmaProblem(const Wgmma &product);

} // namespace kiln::kir
