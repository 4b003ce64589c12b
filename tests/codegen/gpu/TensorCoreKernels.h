// One-warp GPU kernels that exercise each tensor-core statement: an Mma on
// fragments read from global memory, an LdMatrix from a shared tile, and
// AsyncCopy round trips through shared memory. The codegen tests check their
// PTX from both backends; test_gpu runs the same kernels on a GPU.
#pragma once

#include "ir/kernel/Builder.h"
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

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

/// A warpgroup product test kernel (wgmmaKernel) and the misuses the simulator must report.
struct WgmmaKernelSpec {
  kir::WgmmaKind kind = kir::WgmmaKind::BF16_K16;
  int n = 16;
  bool aMnMajor = false, bMnMajor = false;
  int warpgroups = 1;
  bool wait = true;           ///< retire the product and read the accumulators (else neither)
  bool readEarly = false;     ///< copy the accumulators out before the wait instead
  bool partial = false;       ///< thread 5 skips the product
  bool divergentStart = false; ///< thread 3 names another B start
  bool writeOperand = false;  ///< store into the A tile between the product and its wait
  bool zeroAccumulators = false; ///< store zeros into the accumulators, then accumulate
  bool sharedFence = true;    ///< fence the tile stores for the async proxy
  bool fence = true;          ///< wgmma_fence before the product
};

/// The element index in its shared tile of each (mn, k) of an operand (mn-major order: index
/// mn * k + kk), in the canonical 128-byte swizzled layout with the tile at 0: K-major rows are
/// M/N; MN-major rows are K, M/N in 128-byte panels k rows apart (LBO = k * 128 bytes).
inline std::vector<int64_t> wgmmaTileIndices(kir::WgmmaKind kind, bool mnMajor, int mnCount) {
  const kir::WgmmaShapeInfo &info = kir::wgmmaShapeInfo(kind);
  int bytes = dtypeByteSize(info.operandDtype), k = info.k;
  kir::WgmmaDescriptor descriptor{0, mnMajor ? uint32_t(k * 128) : 16u, 1024u, 0, 1};
  std::vector<int64_t> indices(static_cast<size_t>(mnCount * k));
  for (int mn = 0; mn < mnCount; ++mn)
    for (int p = 0; p < k; ++p)
      indices[static_cast<size_t>(mn * k + p)] =
          kir::wgmmaOperandAddress(descriptor, mnMajor, bytes, mn, p) / bytes;
  return indices;
}

/// For each thread of a warpgroup and accumulator e (thread-major): its flat D position
/// row * n + col.
inline std::vector<int64_t> wgmmaAccumulatorIndices(int n) {
  std::vector<int64_t> indices;
  for (int thread = 0; thread < kir::kWarpgroupThreads; ++thread)
    for (int e = 0; e < n / 2; ++e) {
      kir::MatrixPosition at = kir::wgmmaAccumulatorPosition(thread, e);
      indices.push_back(int64_t(at.row) * n + at.col);
    }
  return indices;
}

/// Each warpgroup g: D_g = A x B, A 64 x k and B n x k from global (mn-major order), stored into
/// shared tiles at `a_index` / `b_index` (wgmmaTileIndices), then D to global as each thread
/// holds it (`d_index`: wgmmaAccumulatorIndices), warpgroup g's at g * 64 * n.
/// Parameters: a, b, d, a_index, b_index, d_index.
inline kir::Kernel wgmmaKernel(const WgmmaKernelSpec &spec) {
  using namespace kir;
  const WgmmaShapeInfo &info = wgmmaShapeInfo(spec.kind);
  const int k = info.k, n = spec.n, perThread = n / 2;
  auto tileSize = [&](bool mnMajor, int mnCount) {
    std::vector<int64_t> indices = wgmmaTileIndices(spec.kind, mnMajor, mnCount);
    int64_t atom = kWgmmaAtomBytes / dtypeByteSize(info.operandDtype);
    return (*std::ranges::max_element(indices) + atom) / atom * atom; // whole atoms
  };
  auto a = makeBuffer("a", info.operandDtype, int64_t(kWgmmaM) * k);
  auto b = makeBuffer("b", info.operandDtype, int64_t(n) * k);
  auto d = makeBuffer("d", DType::F32, int64_t(spec.warpgroups) * kWgmmaM * n);
  auto aIndex = makeBuffer("a_index", DType::I64, int64_t(kWgmmaM) * k);
  auto bIndex = makeBuffer("b_index", DType::I64, int64_t(n) * k);
  auto dIndex = makeBuffer("d_index", DType::I64, int64_t(kWarpgroupThreads) * perThread);
  auto aTile = makeBuffer("a_tile", info.operandDtype, tileSize(spec.aMnMajor, kWgmmaM),
                          MemScope::Shared);
  auto bTile = makeBuffer("b_tile", info.operandDtype, tileSize(spec.bMnMajor, n),
                          MemScope::Shared);
  auto acc = makeBuffer("acc", DType::F32, perThread, MemScope::Register);
  const int threads = kWarpgroupThreads * spec.warpgroups;
  auto tv = makeVar("t");
  ExprPtr t = kir::ref(tv);
  ExprPtr inGroup = mod(t, index(kWarpgroupThreads)), group = div(t, index(kWarpgroupThreads));
  auto fill = [&](const BufferPtr &tile, const BufferPtr &from, const BufferPtr &at,
                  const char *name) {
    auto i = makeVar(name);
    ExprPtr element = add(mul(kir::ref(i), index(threads)), t);
    return forRange(i, (from->size + threads - 1) / threads, ForKind::Serial,
                    ifThen(lt(element, index(from->size)),
                           store(tile, load(at, element), load(from, element))));
  };
  SharedMatrix am{aTile, index(0), spec.aMnMajor, spec.aMnMajor ? k * 128 : 16, 1024};
  SharedMatrix bm{bTile, index(0), spec.bMnMajor, spec.bMnMajor ? k * 128 : 16, 1024};
  if (spec.divergentStart)
    bm.start = select(eq(t, index(3)), index(8), index(0));
  auto e = makeVar("e");
  ExprPtr at = load(dIndex, add(mul(inGroup, index(perThread)), kir::ref(e)));
  StmtPtr copyOut = forRange(e, perThread, ForKind::Serial,
                             store(d, add(mul(group, index(int64_t(kWgmmaM) * n)), at),
                                   load(acc, kir::ref(e))));
  StmtPtr product = wgmma(spec.kind, n, {acc, 0}, am, bm, spec.zeroAccumulators);
  if (spec.partial)
    product = ifThen(ne(t, index(5)), product);
  std::vector<StmtPtr> body{fill(aTile, a, aIndex, "ia"), fill(bTile, b, bIndex, "ib")};
  if (spec.zeroAccumulators) {
    auto z = makeVar("z");
    body.push_back(forRange(z, perThread, ForKind::Serial,
                            store(acc, kir::ref(z), floatImm(0.0, Type::scalar(DType::F32)))));
  }
  if (spec.sharedFence)
    body.push_back(wgmmaSync(WgmmaSyncOp::SharedFence));
  body.push_back(barrier());
  if (spec.fence)
    body.push_back(wgmmaSync(WgmmaSyncOp::Fence));
  body.push_back(product);
  body.push_back(wgmmaSync(WgmmaSyncOp::Commit));
  if (spec.readEarly)
    body.push_back(copyOut);
  if (spec.writeOperand)
    body.push_back(fill(aTile, a, aIndex, "iw"));
  if (spec.wait)
    body.push_back(wgmmaSync(WgmmaSyncOp::Wait, 0));
  if (spec.wait && !spec.readEarly)
    body.push_back(copyOut);
  StmtPtr thread = forRange(tv, threads, ForKind::ThreadX, allocate(acc, seq(std::move(body))));
  return Kernel{fmt::format("wgmma_{}_n{}{}{}", wgmmaKindName(spec.kind), n,
                            spec.aMnMajor ? "_amn" : "", spec.bMnMajor ? "_bmn" : ""),
                {a, b, d, aIndex, bIndex, dIndex},
                allocate(aTile, allocate(bTile, thread))};
}

} // namespace kiln::testing
