// One-warp GPU kernels that exercise each tensor-core statement: an Mma on
// fragments read from global memory, an LdMatrix from a shared tile, and
// AsyncCopy round trips through shared memory. The codegen tests check their
// PTX from both backends; test_gpu runs the same kernels on a GPU.
#pragma once

#include "ir/kernel/Builder.h"
#include "ir/kernel/MmaLayout.h"

#include <fmt/format.h>

#include <string>

namespace kiln::testing {

/// D = A x B + C for one warp, every operand in fragment order in global
/// memory: lane l's i-th A element is aFrag[l * aElements + i] (the element
/// mmaFragmentPosition(kind, A, l, i) of A; likewise B, C and D). Each lane
/// copies its fragments into registers (a and b in one buffer, b at offset
/// aElements), runs the mma accumulating in place (d is c), and writes d out.
/// Parameters: aFrag, bFrag, cFrag, dFrag.
inline kir::Kernel mmaKernel(kir::MmaKind kind) {
  using namespace kiln::kir;
  const MmaShapeInfo &info = mmaShapeInfo(kind);
  const int na = info.aElements, nb = info.bElements, nc = info.cElements;
  BufferPtr aFrag = makeBuffer("a_frag", info.operandDtype, 32 * na);
  BufferPtr bFrag = makeBuffer("b_frag", info.operandDtype, 32 * nb);
  BufferPtr cFrag = makeBuffer("c_frag", DType::F32, 32 * nc);
  BufferPtr dFrag = makeBuffer("d_frag", DType::F32, 32 * nc);
  BufferPtr operands = makeBuffer("ab", info.operandDtype, na + nb, MemScope::Register);
  BufferPtr acc = makeBuffer("acc", DType::F32, nc, MemScope::Register);
  VarPtr lane = makeVar("lane");
  auto at = [&](int count, int i) { return add(mul(kir::ref(lane), index(count)), index(i)); };
  std::vector<StmtPtr> body;
  for (int i = 0; i < na; ++i)
    body.push_back(store(operands, index(i), load(aFrag, at(na, i))));
  for (int i = 0; i < nb; ++i)
    body.push_back(store(operands, index(na + i), load(bFrag, at(nb, i))));
  for (int i = 0; i < nc; ++i)
    body.push_back(store(acc, index(i), load(cFrag, at(nc, i))));
  body.push_back(mma(kind, Fragment{acc, 0}, Fragment{operands, 0}, Fragment{operands, na},
                     Fragment{acc, 0}));
  for (int i = 0; i < nc; ++i)
    body.push_back(store(dFrag, at(nc, i), load(acc, index(i))));
  std::string name = fmt::format("mma_{}", mmaKindName(kind));
  for (char &c : name)
    if (c == '.')
      c = '_';
  return Kernel{name,
                {aFrag, bFrag, cFrag, dFrag},
                forRange(lane, 32, ForKind::ThreadX,
                         allocate(operands, allocate(acc, seq(std::move(body)))))};
}

/// Row stride, in elements, of the shared tile an LdMatrix kernel reads: 48
/// bytes, so rows are 16-byte aligned but not contiguous and the per-lane
/// addresses matter.
inline int64_t ldMatrixRowStride(DType dtype) { return 48 / dtypeByteSize(dtype); }

/// Elements of the source (and shared tile) of ldMatrixKernel(matrices, ...):
/// 8 rows per matrix, ldMatrixRowStride apart.
inline int64_t ldMatrixSourceSize(int matrices, DType dtype = DType::F16) {
  return 8 * matrices * ldMatrixRowStride(dtype);
}

/// One warp copies `source` (ldMatrixSourceSize elements of `dtype`, 16-bit,
/// or 8-bit read as byte pairs) into a shared tile, then LdMatrix loads
/// `matrices` 8 x 8 matrices from it: row r of matrix j starts at element
/// (8 j + r) * ldMatrixRowStride. Lane l writes the n elements it received
/// per matrix (2, or 4 bytes) to out[l * n matrices + e]. Parameters: source, out.
inline kir::Kernel ldMatrixKernel(int matrices, bool transpose, DType dtype = DType::F16) {
  using namespace kiln::kir;
  const int64_t size = ldMatrixSourceSize(matrices, dtype);
  const int perLane = ldMatrixElementsPerMatrix(dtypeByteSize(dtype)) * matrices;
  BufferPtr source = makeBuffer("source", dtype, size);
  BufferPtr out = makeBuffer("out", dtype, 32 * perLane);
  BufferPtr tile = makeBuffer("tile", dtype, size, MemScope::Shared);
  BufferPtr fragment = makeBuffer("frag", dtype, perLane, MemScope::Register);
  VarPtr lane = makeVar("lane"), k = makeVar("k");
  ExprPtr copied = add(mul(kir::ref(k), index(32)), kir::ref(lane));
  // Lanes past the last matrix's rows give an address ldmatrix ignores; keep it in the tile.
  ExprPtr row = mul(mod(kir::ref(lane), index(8 * matrices)), index(ldMatrixRowStride(dtype)));
  std::vector<StmtPtr> body{forRange(k, size / 32, ForKind::Serial,
                                     store(tile, copied, load(source, copied))),
                            barrier(), ldMatrix(Fragment{fragment, 0}, matrices, transpose, tile, row)};
  for (int e = 0; e < perLane; ++e)
    body.push_back(store(out, add(mul(kir::ref(lane), index(perLane)), index(e)),
                         load(fragment, index(e))));
  return Kernel{fmt::format("ldmatrix_x{}{}_{}", matrices, transpose ? "_trans" : "",
                            dtypeName(dtype)),
                {source, out},
                allocate(tile, forRange(lane, 32, ForKind::ThreadX,
                                        allocate(fragment, seq(std::move(body)))))};
}

/// What asyncCopyKernel's tile holds before the copies, which must overwrite
/// it (with zeros where the predicate is false).
inline constexpr float kAsyncCopySentinel = -7.0f;

/// Whether asyncCopyKernel's lane `lane` copies its chunk (else zero-fills it).
inline bool asyncCopyLaneCopies(int lane) { return lane % 3 != 1; }

/// One warp fills a shared tile with kAsyncCopySentinel, then copies `source`
/// (64 x lanes f32) into it with AsyncCopy of `lanes` f32 (4, 8 or 16 bytes):
/// lane l copies chunks l and 32 + l, in two committed groups; with
/// `predicated`, lanes where asyncCopyLaneCopies is false zero-fill both
/// chunks. After wait_group 1, wait_group 0 and a barrier, lane l writes
/// chunks (l + 1) % 32 and 32 + (l + 1) % 32 of the tile (copied by another
/// lane) to `out`, so out equals source except the zero-filled chunks.
/// Parameters: source, out.
inline kir::Kernel asyncCopyKernel(int lanes, bool predicated) {
  using namespace kiln::kir;
  const int64_t size = 64 * lanes;
  BufferPtr source = makeBuffer("source", DType::F32, size);
  BufferPtr out = makeBuffer("out", DType::F32, size);
  BufferPtr tile = makeBuffer("tile", DType::F32, size, MemScope::Shared);
  VarPtr lane = makeVar("lane"), k = makeVar("k");
  ExprPtr copies = predicated ? ne(mod(kir::ref(lane), index(3)), index(1)) : nullptr;
  auto chunk = [&](ExprPtr which) { return mul(which, index(lanes)); };
  ExprPtr first = chunk(kir::ref(lane)), second = chunk(add(kir::ref(lane), index(32)));
  ExprPtr neighbour = mod(add(kir::ref(lane), index(1)), index(32));
  ExprPtr readFirst = chunk(neighbour), readSecond = chunk(add(neighbour, index(32)));
  ExprPtr filled = add(mul(kir::ref(k), index(32)), kir::ref(lane));
  std::vector<StmtPtr> body{
      forRange(k, size / 32, ForKind::Serial,
               store(tile, filled, constant(kAsyncCopySentinel, Type::scalar(DType::F32)))),
      barrier(),
      asyncCopy(tile, first, source, first, lanes, copies),
      asyncCommit(),
      asyncCopy(tile, second, source, second, lanes, copies),
      asyncCommit(),
      asyncWait(1),
      asyncWait(0),
      barrier(),
      store(out, readFirst, load(tile, readFirst, lanes)),
      store(out, readSecond, load(tile, readSecond, lanes))};
  return Kernel{fmt::format("async_copy_{}b{}", 4 * lanes, predicated ? "_predicated" : ""),
                {source, out},
                allocate(tile, forRange(lane, 32, ForKind::ThreadX, seq(std::move(body))))};
}

} // namespace kiln::testing
