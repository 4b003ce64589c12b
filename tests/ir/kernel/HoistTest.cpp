// hoist (loop-invariant code motion) and the default kernel pipeline: exact
// printed results, what must not move, and evaluator checks that the
// transformed kernels compute what the originals do.
#include "ir/kernel/KernelTestUtil.h"
#include "passes/kernel/Passes.h"

using namespace kiln;
using namespace kiln::kir;
using namespace kiln::test;

namespace {

Type f32Type() { return Type::scalar(DType::F32); }
ExprPtr f32c(double v) { return floatImm(v, f32Type()); }

void checkHoist(const Kernel &original, const std::string &expected) {
  Kernel result = hoistLoopInvariants(original);
  CHECK(printKernel(result) == expected);
  requireSameResults(original, result);
}

} // namespace

TEST_CASE("hoist moves invariant lets before the loop, keeps variant ones", "[kernel][hoist]") {
  auto in = makeBuffer("in", DType::F32, 16), scale = makeBuffer("scale", DType::F32, 2);
  auto out = makeBuffer("out", DType::F32, 16);
  auto i = makeVar("i"), s = makeVar("s", f32Type()), t = makeVar("t", f32Type());
  auto u = makeVar("u", f32Type()), w = makeVar("w", f32Type());
  StmtPtr body =
      let(s, mul(load(scale, index(0)), f32c(2)),
          let(t, add(load(in, kir::ref(i)), kir::ref(s)),
              let(u, load(out, index(0)),
                  let(w, mul(kir::ref(s), kir::ref(s)),
                      store(out, kir::ref(i), add(add(kir::ref(t), kir::ref(u)), kir::ref(w)))))));
  checkHoist(Kernel{"lets", {in, scale, out}, forRange(i, 16, ForKind::Serial, body)},
             "kernel lets(in: f32[16], scale: f32[2], out: f32[16]) {\n"
             "  let s: f32 = load f32 scale[0] * 2.0f32\n"
             "  let w: f32 = s * s\n"
             "  for i in [0, 16) serial {\n"
             "    let t: f32 = load f32 in[i] + s\n"
             "    let u: f32 = load f32 out[0]\n"
             "    store f32 out[i] = t + u + w\n"
             "  }\n"
             "}\n");
}

TEST_CASE("hoist keeps loads in loops that may not run and lets under an if", "[kernel][hoist]") {
  auto in = makeBuffer("in", DType::F32, 16), sizes = makeBuffer("sizes", DType::I64, 1);
  auto out = makeBuffer("out", DType::F32, 16);
  auto i = makeVar("i"), n = makeVar("n"), m = makeVar("m");
  auto s = makeVar("s", f32Type()), z = makeVar("z", f32Type());
  StmtPtr body =
      let(s, load(in, index(0)),
          let(m, mul(kir::ref(n), index(4)),
              seq({store(out, kir::ref(i), mul(kir::ref(s), cast(kir::ref(m), f32Type()))),
                   ifThen(lt(kir::ref(i), index(8)),
                          let(z, load(in, index(1)), store(out, kir::ref(i), kir::ref(z))))})));
  Kernel kernel{"guarded",
                {in, sizes, out},
                let(n, kir::min(load(sizes, index(0)), index(16)),
                    forLoop(i, index(0), kir::ref(n), ForKind::Serial, body))};
  checkHoist(kernel, "kernel guarded(in: f32[16], sizes: i64[1], out: f32[16]) {\n"
                     "  let n = min(load i64 sizes[0], 16)\n"
                     "  let m = n * 4\n"
                     "  for i in [0, n) serial {\n"
                     "    let s: f32 = load f32 in[0]\n"
                     "    store f32 out[i] = s * cast<f32>(m)\n"
                     "    if i < 8 {\n"
                     "      let z: f32 = load f32 in[1]\n"
                     "      store f32 out[i] = z\n"
                     "    }\n"
                     "  }\n"
                     "}\n");
}

TEST_CASE("hoist moves a loading let only out of a loop that certainly runs", "[kernel][hoist]") {
  auto d = makeBuffer("d", DType::I64, 1), table = makeBuffer("table", DType::I64, 4);
  auto out = makeBuffer("out", DType::I64, 8);
  auto i = makeVar("i"), k = makeVar("k"), q = makeVar("q"), r = makeVar("r");
  StmtPtr runs =
      forRange(i, 4, ForKind::Serial,
               let(q, div(index(100), load(d, index(0))), store(out, kir::ref(i), kir::ref(q))));
  // The loop runs d - 7 times and reads table[d - 8]: in bounds whenever it
  // runs (d in [8, 11]), out of bounds for d = 7, when it must not run.
  StmtPtr mayNotRun = forLoop(
      k, index(0), sub(load(d, index(0)), index(7)), ForKind::Serial,
      let(r, load(table, sub(load(d, index(0)), index(8))), store(out, kir::ref(k), kir::ref(r))));
  Kernel kernel{"faults", {d, table, out}, seq({runs, mayNotRun})};
  Kernel result = hoistLoopInvariants(kernel);
  CHECK(printKernel(result) == "kernel faults(d: i64[1], table: i64[4], out: i64[8]) {\n"
                               "  let q = 100 / load i64 d[0] {\n"
                               "    for i in [0, 4) serial {\n"
                               "      store i64 out[i] = q\n"
                               "    }\n"
                               "  }\n"
                               "  for k in [0, load i64 d[0] - 7) serial {\n"
                               "    let r = load i64 table[load i64 d[0] - 8]\n"
                               "    store i64 out[k] = r\n"
                               "  }\n"
                               "}\n");
  for (double value : {7.0, 9.0}) {
    std::vector<HostTensor> a{
        HostTensor::fromDoubles(DType::I64, {1}, std::vector<double>{value}),
        HostTensor::fromDoubles(DType::I64, {4}, std::vector<double>{10, 20, 30, 40}),
        HostTensor(DType::I64, {8})};
    std::vector<HostTensor> b = a;
    REQUIRE(evaluateKernel(kernel, a));
    REQUIRE(evaluateKernel(result, b));
    CHECK(a[2].toDoubles() == b[2].toDoubles());
  }
}

TEST_CASE("hoist binds invariant index products before the loop", "[kernel][hoist]") {
  auto in = makeBuffer("in", DType::F32, 128), out = makeBuffer("out", DType::F32, 64);
  auto i = makeVar("i"), j = makeVar("j");
  auto flat = [&] { return add(mul(kir::ref(i), index(8)), kir::ref(j)); };
  Kernel kernel{"products",
                {in, out},
                forRange(i, 8, ForKind::Serial,
                         forRange(j, 8, ForKind::Serial,
                                  store(out, flat(), load(in, mul(flat(), index(2))))))};
  checkHoist(kernel, "kernel products(in: f32[128], out: f32[64]) {\n"
                     "  for i in [0, 8) serial {\n"
                     "    let inv = i * 8\n"
                     "    for j in [0, 8) serial {\n"
                     "      store f32 out[inv + j] = load f32 in[(inv + j) * 2]\n"
                     "    }\n"
                     "  }\n"
                     "}\n");
}

TEST_CASE("hoisted products climb as far out as their operands allow", "[kernel][hoist]") {
  auto a = makeBuffer("A", DType::F32, 8192), out = makeBuffer("out", DType::F32, 8192);
  auto i = makeVar("i"), j = makeVar("j"), k = makeVar("k");
  auto flat = [&] {
    return add(add(mul(kir::ref(i), index(4096)), mul(kir::ref(j), index(64))), kir::ref(k));
  };
  Kernel kernel{"nest",
                {a, out},
                forRange(i, 2, ForKind::Serial,
                         forRange(j, 64, ForKind::Serial,
                                  forRange(k, 64, ForKind::Unrolled,
                                           store(out, flat(), mul(load(a, flat()), f32c(2))))))};
  checkHoist(kernel, "kernel nest(A: f32[8192], out: f32[8192]) {\n"
                     "  for i in [0, 2) serial {\n"
                     "    let inv = i * 4096\n"
                     "    for j in [0, 64) serial {\n"
                     "      let inv.1 = inv + j * 64\n"
                     "      for k in [0, 64) unrolled {\n"
                     "        store f32 out[inv.1 + k] = load f32 A[inv.1 + k] * 2.0f32\n"
                     "      }\n"
                     "    }\n"
                     "  }\n"
                     "}\n");
}

TEST_CASE("hoist leaves GPU-bound loops and twice-bound variables alone", "[kernel][hoist]") {
  auto scale = makeBuffer("scale", DType::I64, 1), out = makeBuffer("out", DType::I64, 16);
  auto b = makeVar("b"), t = makeVar("t"), s = makeVar("s");
  StmtPtr gpu = forRange(
      b, 2, ForKind::BlockX,
      forRange(t, 8, ForKind::ThreadX,
               let(s, mul(load(scale, index(0)), index(3)),
                   store(out, add(mul(kir::ref(b), index(8)), kir::ref(t)), kir::ref(s)))));
  CHECK(hoistLoopInvariants(gpu) == gpu);

  // The same Var bound by two lets in one body: hoisting both would shadow one.
  auto i = makeVar("i"), n = makeVar("n"), x = makeVar("x");
  StmtPtr twice =
      forRange(i, 4, ForKind::Serial,
               seq({let(x, mul(kir::ref(n), index(2)), store(out, kir::ref(i), kir::ref(x))),
                    let(x, mul(kir::ref(n), index(3)),
                        store(out, add(kir::ref(i), index(4)), kir::ref(x)))}));
  checkHoist(Kernel{"twice", {scale, out}, let(n, load(scale, index(0)), twice)},
             "kernel twice(scale: i64[1], out: i64[16]) {\n"
             "  let n = load i64 scale[0]\n"
             "  let inv = n * 2\n"
             "  let inv.1 = n * 3\n"
             "  for i in [0, 4) serial {\n"
             "    let x = inv {\n"
             "      store i64 out[i] = x\n"
             "    }\n"
             "    let x = inv.1\n"
             "    store i64 out[i + 4] = x\n"
             "  }\n"
             "}\n");
}

TEST_CASE("runKernelPasses cleans up a lowered split-loop reduction", "[kernel][hoist]") {
  // out[r] = sum_c in[r, c] for a 8x12 matrix, the column loop split 3 x 4 and
  // the element index written as lowering would: (flat / 12) * 12 + flat % 12.
  auto in = makeBuffer("in", DType::F32, 96), out = makeBuffer("out", DType::F32, 8);
  auto acc = makeBuffer("acc", DType::F32, 1, MemScope::Register);
  auto r = makeVar("r"), co = makeVar("co"), ci = makeVar("ci"), c = makeVar("c");
  ExprPtr flat = add(mul(kir::ref(r), index(12)), kir::ref(c));
  ExprPtr element = add(mul(div(flat, index(12)), index(12)), mod(flat, index(12)));
  StmtPtr update = store(acc, index(0), add(load(acc, index(0)), load(in, element)));
  StmtPtr body = allocate(
      acc, seq({store(acc, index(0), f32c(0)),
                forRange(co, 3, ForKind::Serial,
                         forRange(ci, 4, ForKind::Serial,
                                  let(c, add(mul(kir::ref(co), index(4)), kir::ref(ci)), update))),
                store(out, kir::ref(r), load(acc, index(0)))}));
  Kernel kernel{"rowsum", {in, out}, forRange(r, 8, ForKind::Parallel, body)};
  Kernel result = runKernelPasses(kernel);
  CHECK(printKernel(result) ==
        "kernel rowsum(in: f32[96], out: f32[8]) {\n"
        "  for r in [0, 8) parallel {\n"
        "    alloc acc: f32[1] register\n"
        "    store f32 acc[0] = 0.0f32\n"
        "    let inv = r * 12 {\n"
        "      for co in [0, 3) serial {\n"
        "        let inv.1 = co * 4\n"
        "        for ci in [0, 4) serial {\n"
        "          let c = inv.1 + ci\n"
        "          store f32 acc[0] = load f32 acc[0] + load f32 in[inv + c]\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "    store f32 out[r] = load f32 acc[0]\n"
        "  }\n"
        "}\n");
  requireSameResults(kernel, result);
  // A second run changes nothing.
  CHECK(printKernel(runKernelPasses(result)) == printKernel(result));
}
