#include "ir/kernel/WgmmaLayout.h"

#include "support/Error.h"

#include <fmt/format.h>

namespace kiln::kir {

const WgmmaShapeInfo &wgmmaShapeInfo(WgmmaKind kind) {
  static const WgmmaShapeInfo f16{16, DType::F16, "f16", true};
  static const WgmmaShapeInfo bf16{16, DType::BF16, "bf16", true};
  static const WgmmaShapeInfo tf32{8, DType::F32, "tf32", false};
  static const WgmmaShapeInfo e4m3{32, DType::F8E4M3, "e4m3", false};
  switch (kind) {
  case WgmmaKind::F16_K16: return f16;
  case WgmmaKind::BF16_K16: return bf16;
  case WgmmaKind::TF32_K8: return tf32;
  case WgmmaKind::E4M3_K32: return e4m3;
  }
  KILN_UNREACHABLE("wgmma kind");
}

std::string_view wgmmaKindName(WgmmaKind kind) {
  switch (kind) {
  case WgmmaKind::F16_K16: return "f16.k16";
  case WgmmaKind::BF16_K16: return "bf16.k16";
  case WgmmaKind::TF32_K8: return "tf32.k8";
  case WgmmaKind::E4M3_K32: return "e4m3.k32";
  }
  KILN_UNREACHABLE("wgmma kind");
}

std::string wgmmaPtxShape(WgmmaKind kind, int n) {
  const WgmmaShapeInfo &info = wgmmaShapeInfo(kind);
  return fmt::format("m64n{}k{}.f32.{}.{}", n, info.k, info.ptxType, info.ptxType);
}

bool isWgmmaN(int n) { return n >= 8 && n <= 256 && n % 8 == 0; }

MatrixPosition wgmmaAccumulatorPosition(int thread, int element) {
  KILN_CHECK(thread >= 0 && thread < kWarpgroupThreads, "wgmma thread out of range");
  KILN_CHECK(element >= 0 && element < 128, "wgmma accumulator out of range");
  const int warp = thread / 32, lane = thread % 32;
  const int group = lane / 4, threadInGroup = lane % 4;
  const int within = element % 4; // the mma C layout inside each n8 block
  return {16 * warp + group + 8 * (within / 2), 8 * (element / 4) + 2 * threadInGroup + within % 2};
}

namespace {
uint64_t field(uint32_t bytes) { return (bytes & 0x3FFFFu) >> 4; }
} // namespace

uint64_t encodeWgmmaDescriptor(const WgmmaDescriptor &d) {
  return field(d.startAddress) | field(d.leadingBytes) << 16 | field(d.strideBytes) << 32 |
         uint64_t(d.baseOffset & 7) << 49 | uint64_t(d.swizzle & 3) << 62;
}

WgmmaDescriptor decodeWgmmaDescriptor(uint64_t bits) {
  auto bytesAt = [&](int shift) { return static_cast<uint32_t>((bits >> shift) & 0x3FFF) << 4; };
  WgmmaDescriptor d;
  d.startAddress = bytesAt(0);
  d.leadingBytes = bytesAt(16);
  d.strideBytes = bytesAt(32);
  d.baseOffset = static_cast<int>((bits >> 49) & 7);
  d.swizzle = static_cast<int>((bits >> 62) & 3);
  return d;
}

uint32_t swizzle128(uint32_t address) { return address ^ (((address >> 7) & 7u) << 4); }

// The canonical 128-byte swizzled layouts in bytes: K-major rows are M/N indices, 128 bytes of
// K each, 8 rows to an atom and `strideBytes` between atoms; MN-major rows are K indices, each
// a 128-byte panel of M/N, 8 rows to an atom, `strideBytes` between atoms along K and
// `leadingBytes` between panels along M/N.
uint32_t wgmmaOperandAddress(const WgmmaDescriptor &d, bool mnMajor, int elementBytes, int mn,
                             int k) {
  uint32_t eb = static_cast<uint32_t>(elementBytes);
  uint32_t linear;
  if (!mnMajor) {
    linear = d.startAddress + uint32_t(mn / 8) * d.strideBytes + uint32_t(mn % 8) * 128 +
             uint32_t(k) * eb;
  } else {
    uint32_t panel = 128 / eb;
    linear = d.startAddress + uint32_t(mn) / panel * d.leadingBytes + uint32_t(mn) % panel * eb +
             uint32_t(k / 8) * d.strideBytes + uint32_t(k % 8) * 128;
  }
  return swizzle128(linear);
}

std::optional<std::string> wgmmaProblem(const Wgmma &w) {
  return wgmmaProblem(w.wgmmaKind, w.n, w.d, w.a, w.b);
}

std::optional<std::string> wgmmaProblem(WgmmaKind kind, int n, const Fragment &dFragment,
                                        const SharedMatrix &a, const SharedMatrix &b) {
  const WgmmaShapeInfo &info = wgmmaShapeInfo(kind);
  std::string name = fmt::format("wgmma.{}", wgmmaPtxShape(kind, n));
  if (!isWgmmaN(n))
    return fmt::format("{}: n must be 8 .. 256 in steps of 8", name);
  const Buffer *d = dFragment.buffer.get();
  if (!d || d->scope != MemScope::Register || d->dtype != DType::F32)
    return fmt::format("{}: d must be a register buffer of f32", name);
  if (dFragment.offset < 0 || dFragment.offset + n / 2 > d->size)
    return fmt::format("{}: d {}[{}, {}) is outside its {} elements", name, d->name,
                       dFragment.offset, dFragment.offset + n / 2, d->size);
  for (const auto &[operand, matrix] : {std::pair{"a", &a}, std::pair{"b", &b}}) {
    const Buffer *buffer = matrix->buffer.get();
    if (!buffer || buffer->scope != MemScope::Shared || buffer->dtype != info.operandDtype)
      return fmt::format("{}: operand {} must be a shared buffer of {}", name, operand,
                         dtypeName(info.operandDtype));
    if (!matrix->start || matrix->start->type() != Type::index())
      return fmt::format("{}: operand {}'s start must be an i64 scalar", name, operand);
    if (matrix->mnMajor && !info.mnMajorAllowed)
      return fmt::format("{}: operand {} is MN-major, which only 16-bit products allow", name,
                         operand);
    for (int64_t bytes : {matrix->leadingBytes, matrix->strideBytes})
      if (bytes < 0 || bytes % 16 != 0 || bytes >= (int64_t(1) << 18))
        return fmt::format("{}: operand {}'s strides must be multiples of 16 bytes below 2^18",
                           name, operand);
  }
  return std::nullopt;
}

} // namespace kiln::kir
