// NVPTX codegen of GPU kernel shapes: grid loops with tail guards, vector
// accesses, shared memory with barriers, warp shuffles, atomics, 2-D layouts
// and predicated accesses; each compiled for sm_80 and sm_90a and assembled.
#include "tests/codegen/gpu/GpuCodegenTestUtil.h"

#include <fmt/format.h>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::compileAndAssemble;
using kiln::testing::ptxHas;

namespace {

const std::vector<std::string> kArchs = {"sm_80", "sm_90a"};

/// for b in block.x(grid): for t in thread.x(block): body(b * block + t)
StmtPtr gridLoop(int64_t grid, int64_t block, const std::function<StmtPtr(ExprPtr)> &body) {
  VarPtr b = makeVar("b"), t = makeVar("t");
  return forRange(b, grid, ForKind::BlockX,
                  forRange(t, block, ForKind::ThreadX,
                           body(add(mul(kir::ref(b), index(block)), kir::ref(t)))));
}

ExprPtr i32(int64_t v) { return intImm(v, Type::scalar(DType::I32)); }

} // namespace

TEST_CASE("nvptx: grid vector add with a tail guard", "[gpu-codegen]") {
  const int64_t n = 1000;
  BufferPtr x = makeBuffer("x", DType::F32, n), y = makeBuffer("y", DType::F32, n),
            out = makeBuffer("out", DType::F32, n);
  Kernel kernel{"vector_add", {x, y, out}, gridLoop(4, 256, [&](ExprPtr i) {
                  return ifThen(lt(i, index(n)), store(out, i, add(load(x, i), load(y, i))));
                })};
  for (const std::string &arch : kArchs) {
    std::string ptx = compileAndAssemble({kernel}, arch);
    CHECK(ptxHas(ptx, "%ctaid.x"));
    CHECK(ptxHas(ptx, "%tid.x"));
    CHECK(ptxHas(ptx, ".maxntid 256, 1, 1"));
    CHECK(ptxHas(ptx, "add.rn.f32")); // .rn: never contracted into an fma
    CHECK(ptxHas(ptx, "st.global.f32"));
    CHECK(ptxHas(ptx, "setp.")); // the tail guard
  }
}

TEST_CASE("nvptx: f32x4 vector copy is one 16-byte load and store", "[gpu-codegen]") {
  const int64_t n = 4096;
  BufferPtr x = makeBuffer("x", DType::F32, n), out = makeBuffer("out", DType::F32, n);
  Kernel kernel{"copy_x4", {x, out}, gridLoop(8, 128, [&](ExprPtr i) {
                  ExprPtr at = mul(i, index(4));
                  return store(out, at, load(x, at, 4));
                })};
  for (const std::string &arch : kArchs) {
    std::string ptx = compileAndAssemble({kernel}, arch);
    CHECK(ptxHas(ptx, ".v4.f32"));
    CHECK(ptxHas(ptx, "st.global.v4.f32"));
    CHECK(ptx.find("ld.global.f32") == std::string::npos); // not split into scalars
  }
}

TEST_CASE("nvptx: shared-memory block reduction with barriers", "[gpu-codegen]") {
  const int64_t block = 128, grid = 7;
  BufferPtr x = makeBuffer("x", DType::F32, block * grid), out = makeBuffer("out", DType::F32, grid);
  BufferPtr partial = makeBuffer("partial", DType::F32, block, MemScope::Shared);
  VarPtr b = makeVar("b"), t = makeVar("t");
  std::vector<StmtPtr> steps{store(partial, kir::ref(t), load(x, add(mul(kir::ref(b), index(block)), kir::ref(t)))),
                             barrier()};
  for (int64_t stride = block / 2; stride >= 1; stride /= 2) {
    steps.push_back(ifThen(lt(kir::ref(t), index(stride)),
                           store(partial, kir::ref(t),
                                 add(load(partial, kir::ref(t)),
                                     load(partial, add(kir::ref(t), index(stride)))))));
    steps.push_back(barrier());
  }
  steps.push_back(ifThen(eq(kir::ref(t), index(0)), store(out, kir::ref(b), load(partial, index(0)))));
  Kernel kernel{"block_sum", {x, out},
                forRange(b, grid, ForKind::BlockX,
                         allocate(partial, forRange(t, block, ForKind::ThreadX, seq(steps))))};
  for (const std::string &arch : kArchs) {
    std::string ptx = compileAndAssemble({kernel}, arch);
    CHECK(ptxHas(ptx, "bar.sync"));
    CHECK(ptxHas(ptx, ".shared .align 16 .b8"));
    CHECK(ptxHas(ptx, "[512]"));
    CHECK(ptxHas(ptx, "ld.shared.f32"));
    CHECK(ptxHas(ptx, "st.shared.f32"));
  }
}

TEST_CASE("nvptx: warp shuffles in every mode and type", "[gpu-codegen]") {
  const std::pair<ShuffleMode, const char *> modes[] = {{ShuffleMode::Xor, "bfly"},
                                                         {ShuffleMode::Down, "down"},
                                                         {ShuffleMode::Up, "up"},
                                                         {ShuffleMode::Idx, "idx"}};
  // 64 threads fill two warps; 48 leave the second warp partial (a lane mask).
  for (int64_t block : {64, 48}) {
    for (DType dtype : {DType::F32, DType::I32, DType::F64, DType::I64}) {
      std::vector<Kernel> kernels;
      for (auto [mode, name] : modes) {
        BufferPtr x = makeBuffer("x", dtype, block), out = makeBuffer("out", dtype, block);
        VarPtr t = makeVar("t");
        ExprPtr value = load(x, kir::ref(t));
        // A butterfly sum over 16 lanes, or one shuffle by a lane read at run time.
        ExprPtr lane = cast(kir::ref(t), Type::scalar(DType::I32));
        ExprPtr moved = shuffle(mode, value, mode == ShuffleMode::Idx ? mod(lane, i32(7)) : i32(3));
        kernels.push_back(Kernel{fmt::format("shfl_{}_{}_{}", name, dtypeName(dtype), block),
                                 {x, out},
                                 forRange(t, block, ForKind::ThreadX,
                                          store(out, kir::ref(t), add(value, moved)))});
      }
      for (const std::string &arch : kArchs) {
        INFO(dtypeName(dtype) << " block " << block);
        std::string ptx = compileAndAssemble(kernels, arch);
        for (auto [mode, name] : modes) {
          std::string instruction = fmt::format("shfl.sync.{}.b32", name);
          CHECK(ptxHas(ptx, instruction));
        }
        // Up clamps at 0, the others at 31.
        CHECK(ptxHas(ptx, ", 0, "));
        CHECK(ptxHas(ptx, ", 31, "));
        if (block == 64)
          CHECK(ptxHas(ptx, "-1;"));
      }
    }
  }
}

TEST_CASE("nvptx: global and shared atomics", "[gpu-codegen]") {
  struct Case {
    AtomicOp op;
    DType dtype;
    const char *instruction;
  };
  const Case cases[] = {{AtomicOp::Add, DType::F32, "atom.global.add.f32"},
                        {AtomicOp::Add, DType::F64, "atom.global.add.f64"},
                        {AtomicOp::Add, DType::I32, "atom.global.add.u32"},
                        {AtomicOp::Add, DType::I64, "atom.global.add.u64"},
                        {AtomicOp::Max, DType::I32, "atom.global.max.s32"},
                        {AtomicOp::Max, DType::I64, "atom.global.max.s64"},
                        {AtomicOp::Min, DType::I32, "atom.global.min.s32"},
                        {AtomicOp::Min, DType::I64, "atom.global.min.s64"}};
  for (const Case &c : cases) {
    BufferPtr x = makeBuffer("x", c.dtype, 1000), out = makeBuffer("out", c.dtype, 3);
    Kernel global{fmt::format("atomic_{}_{}", atomicOpName(c.op), dtypeName(c.dtype)),
                  {x, out}, gridLoop(4, 250, [&](ExprPtr i) {
                    return atomic(c.op, out, mod(i, index(3)), load(x, i));
                  })};
    // The same through shared memory: per-block atomics, then one global write.
    BufferPtr bins = makeBuffer("bins", c.dtype, 3, MemScope::Shared);
    VarPtr b = makeVar("b"), t = makeVar("t");
    StmtPtr perThread = seq({ifThen(lt(kir::ref(t), index(3)), store(bins, kir::ref(t), load(x, kir::ref(t)))),
                             barrier(),
                             atomic(c.op, bins, mod(kir::ref(t), index(3)),
                                    load(x, add(mul(kir::ref(b), index(250)), kir::ref(t)))),
                             barrier(),
                             ifThen(lt(kir::ref(t), index(3)),
                                    atomic(c.op, out, kir::ref(t), load(bins, kir::ref(t))))});
    Kernel shared{global.name + "_shared", {x, out},
                  forRange(b, 4, ForKind::BlockX,
                           allocate(bins, forRange(t, 250, ForKind::ThreadX, perThread)))};
    for (const std::string &arch : kArchs) {
      std::string ptx = compileAndAssemble({global, shared}, arch);
      CHECK(ptxHas(ptx, c.instruction));
      std::string sharedInstruction = c.instruction;
      sharedInstruction.replace(sharedInstruction.find("global"), 6, "shared");
      CHECK(ptxHas(ptx, sharedInstruction));
    }
  }
}

TEST_CASE("nvptx: thread.y and block.y layouts", "[gpu-codegen]") {
  const int64_t rows = 40, cols = 150;
  BufferPtr x = makeBuffer("x", DType::F32, rows * cols), out = makeBuffer("out", DType::F32, rows * cols);
  VarPtr by = makeVar("by"), bx = makeVar("bx"), ty = makeVar("ty"), tx = makeVar("tx");
  ExprPtr row = add(mul(kir::ref(by), index(8)), kir::ref(ty));
  ExprPtr col = add(mul(kir::ref(bx), index(32)), kir::ref(tx));
  ExprPtr at = add(mul(row, index(cols)), col);
  StmtPtr body = ifThen(logicalAnd(lt(row, index(rows)), lt(col, index(cols))),
                        store(out, at, mul(load(x, at), floatImm(2.0, Type::scalar(DType::F32)))));
  Kernel kernel{"scale_2d", {x, out},
                forRange(by, 5, ForKind::BlockY,
                         forRange(bx, 5, ForKind::BlockX,
                                  forRange(ty, 8, ForKind::ThreadY,
                                           forRange(tx, 32, ForKind::ThreadX, body))))};
  for (const std::string &arch : kArchs) {
    std::string ptx = compileAndAssemble({kernel}, arch);
    CHECK(ptxHas(ptx, "%tid.y"));
    CHECK(ptxHas(ptx, "%ctaid.y"));
    CHECK(ptxHas(ptx, ".maxntid 32, 8, 1"));
  }
}

TEST_CASE("nvptx: predicated loads and stores", "[gpu-codegen]") {
  const int64_t n = 1001;
  BufferPtr x = makeBuffer("x", DType::F32, n), out = makeBuffer("out", DType::F32, 1024);
  Kernel scalar{"predicated_scalar", {x, out}, gridLoop(4, 256, [&](ExprPtr i) {
                  ExprPtr inside = lt(i, index(n));
                  // A false predicate reads nothing (x has no element i) and yields 0.
                  return store(out, i, load(x, i, 1, inside), lt(i, index(1024)));
                })};
  Kernel vector{"predicated_x4", {x, out}, gridLoop(1, 256, [&](ExprPtr i) {
                  ExprPtr at = mul(i, index(4));
                  ExprPtr inside = lt(add(at, index(3)), index(n));
                  return store(out, at, load(x, at, 4, inside), inside);
                })};
  for (const std::string &arch : kArchs) {
    std::string ptx = compileAndAssemble({scalar, vector}, arch);
    CHECK(ptxHas(ptx, "@%p"));   // branches or predicated instructions guard the accesses
    CHECK(ptxHas(ptx, "ld.global"));
  }
}
