// Host JIT tests of memory access: predicated scalar and vector loads and
// stores (false lanes read nothing and write nothing), bool and narrow-float
// element types in memory, vector loads at odd element offsets.
#include "HostTestUtil.h"

#include <cmath>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::AlignedVector;
using kiln::testing::JitKernel;

TEST_CASE("predicated scalar loads yield zero and never touch memory when false",
          "[codegen][host][memory]") {
  const int64_t n = 31;
  auto in = makeBuffer("in", DType::F32, n);
  auto out = makeBuffer("out", DType::F32, n);
  auto i = makeVar("i");
  // Where the predicate is false the index is far outside any mapping: a load
  // that ran anyway would crash the test.
  ExprPtr keep = ne(mod(kir::ref(i), index(3)), index(0));
  ExprPtr wild = select(keep, kir::ref(i), index(int64_t{1} << 44));
  StmtPtr body = store(out, kir::ref(i), load(in, wild, 1, keep));
  JitKernel kernel(Kernel{"predicated_load", {in, out}, forRange(i, n, ForKind::Vectorized, body)});
  AlignedVector<float> input(n), output(n, -1.0f);
  for (int64_t k = 0; k < n; ++k)
    input[k] = static_cast<float>(k) + 0.5f;
  kernel({input.data(), output.data()});
  for (int64_t k = 0; k < n; ++k)
    REQUIRE(output[k] == (k % 3 != 0 ? input[k] : 0.0f));
}

TEST_CASE("predicated scalar stores write only where true", "[codegen][host][memory]") {
  const int64_t n = 29;
  auto out = makeBuffer("out", DType::I32, n);
  auto i = makeVar("i");
  ExprPtr even = eq(mod(kir::ref(i), index(2)), index(0));
  // The value reads far out of bounds where the predicate is false: a store
  // that evaluated it anyway would crash.
  auto table = makeBuffer("table", DType::I32, n);
  ExprPtr value = load(table, select(even, kir::ref(i), index(int64_t{1} << 44)));
  StmtPtr body = store(out, kir::ref(i), value, even);
  JitKernel kernel(Kernel{"predicated_store", {table, out}, forRange(i, n, ForKind::Serial, body)});
  AlignedVector<int32_t> tableValues(n), output(n, -99);
  for (int64_t k = 0; k < n; ++k)
    tableValues[k] = static_cast<int32_t>(k * k);
  kernel({tableValues.data(), output.data()});
  for (int64_t k = 0; k < n; ++k)
    REQUIRE(output[k] == (k % 2 == 0 ? k * k : -99));
}

TEST_CASE("predicated vector loads and stores with scalar and lane predicates",
          "[codegen][host][memory]") {
  const int lanes = 4;
  const int64_t groups = 9, n = groups * lanes;
  auto in = makeBuffer("in", DType::F32, n);
  auto outScalarPred = makeBuffer("out_scalar_pred", DType::F32, n);
  auto outLanePred = makeBuffer("out_lane_pred", DType::F32, n);
  auto g = makeVar("g");
  ExprPtr at = mul(kir::ref(g), index(lanes));
  ExprPtr groupOdd = eq(mod(kir::ref(g), index(2)), index(1));
  ExprPtr values = load(in, at, lanes, groupOdd); // zeros for even groups
  ExprPtr positive =
      gt(load(in, at, lanes), broadcast(floatImm(0.0, Type::scalar(DType::F32)), lanes));
  StmtPtr body = seq(
      {store(outScalarPred, at, values), store(outLanePred, at, load(in, at, lanes), positive)});
  JitKernel kernel(Kernel{"predicated_vector",
                          {in, outScalarPred, outLanePred},
                          forRange(g, groups, ForKind::Serial, body)});
  AlignedVector<float> input(n), scalarPred(n, -1.0f), lanePred(n, -1.0f);
  for (int64_t k = 0; k < n; ++k)
    input[k] = (k % 3 == 0 ? -1.0f : 1.0f) * static_cast<float>(k + 1);
  kernel({input.data(), scalarPred.data(), lanePred.data()});
  for (int64_t k = 0; k < n; ++k) {
    bool oddGroup = (k / lanes) % 2 == 1;
    REQUIRE(scalarPred[k] == (oddGroup ? input[k] : 0.0f));
    REQUIRE(lanePred[k] == (input[k] > 0 ? input[k] : -1.0f));
  }
}

TEST_CASE("vector loads and stores at unaligned element offsets", "[codegen][host][memory]") {
  const int lanes = 8;
  const int64_t n = 67;
  auto in = makeBuffer("in", DType::F64, n);
  auto out = makeBuffer("out", DType::F64, n);
  // 8 lanes from element 3 onwards: not a multiple of the vector size.
  StmtPtr body = store(
      out, index(5),
      mul(load(in, index(3), lanes), broadcast(floatImm(2.0, Type::scalar(DType::F64)), lanes)));
  JitKernel kernel(Kernel{"offset_vectors", {in, out}, body});
  AlignedVector<double> input(n), output(n, 0.0);
  for (int64_t k = 0; k < n; ++k)
    input[k] = static_cast<double>(k) * 1.25;
  kernel({input.data(), output.data()});
  for (int64_t k = 0; k < n; ++k)
    REQUIRE(output[k] == (k >= 5 && k < 5 + lanes ? 2.0 * input[k - 2] : 0.0));
}

TEST_CASE("bool buffers hold 0/1 bytes and narrow floats copy as bits", "[codegen][host][memory]") {
  const int64_t n = 16;
  auto flagsIn = makeBuffer("flags_in", DType::Bool, n);
  auto flagsOut = makeBuffer("flags_out", DType::Bool, n);
  auto halfIn = makeBuffer("half_in", DType::F16, n);
  auto halfOut = makeBuffer("half_out", DType::F16, n);
  auto i = makeVar("i");
  // flags_out = !flags_in (vector of 8); half_out = flag ? half_in : 0.0 (as f16)
  ExprPtr at = mul(kir::ref(i), index(8));
  ExprPtr flags = load(flagsIn, at, 8);
  StmtPtr body = seq({store(flagsOut, at, logicalNot(flags)),
                      store(halfOut, at,
                            select(flags, load(halfIn, at, 8),
                                   broadcast(floatImm(0.0, Type::scalar(DType::F16)), 8)))});
  JitKernel kernel(Kernel{"bool_and_half",
                          {flagsIn, flagsOut, halfIn, halfOut},
                          forRange(i, n / 8, ForKind::Serial, body)});
  AlignedVector<uint8_t> flagValues(n), negated(n, 9);
  AlignedVector<uint16_t> halves(n), copied(n, 0xffff);
  for (int64_t k = 0; k < n; ++k) {
    flagValues[k] = static_cast<uint8_t>(k % 3 == 1);
    halves[k] = static_cast<uint16_t>(0x3c00 + k * 17);
  }
  kernel({flagValues.data(), negated.data(), halves.data(), copied.data()});
  for (int64_t k = 0; k < n; ++k) {
    REQUIRE(negated[k] == (flagValues[k] ? 0 : 1));
    REQUIRE(copied[k] == (flagValues[k] ? halves[k] : 0));
  }
}

TEST_CASE("an Evaluate statement compiles and has no effect", "[codegen][host][memory]") {
  auto out = makeBuffer("out", DType::F32, 1);
  Type f32 = Type::scalar(DType::F32);
  StmtPtr body = seq({std::make_shared<Evaluate>(call(Intrinsic::Exp, {floatImm(1.0, f32)})),
                      store(out, index(0), floatImm(3.0, f32))});
  JitKernel kernel(Kernel{"evaluate", {out}, body});
  AlignedVector<float> result{0.0f};
  kernel({result.data()});
  CHECK(result[0] == 3.0f);
}

TEST_CASE("fill and copy loops that LLVM turns into memset/memcpy link and run",
          "[codegen][host][memory]") {
  const int64_t n = 4099;
  auto src = makeBuffer("src", DType::I8, n);
  auto zeroed = makeBuffer("zeroed", DType::I8, n);
  auto copied = makeBuffer("copied", DType::I8, n);
  auto i = makeVar("i"), j = makeVar("j");
  StmtPtr body =
      seq({forRange(i, n, ForKind::Serial,
                    store(zeroed, kir::ref(i), intImm(0, Type::scalar(DType::I8)))),
           forRange(j, n, ForKind::Serial, store(copied, kir::ref(j), load(src, kir::ref(j))))});
  Kernel k{"fill_copy", {src, zeroed, copied}, body};
  auto ir = codegen::emitHostLlvmIr(k, kiln::testing::hostTarget(), true);
  REQUIRE(ir.has_value());
  CHECK(ir->find("llvm.memset") != std::string::npos);
  JitKernel kernel(k);
  AlignedVector<int8_t> source(n), zeros(n, 5), copy(n, 0);
  for (int64_t m = 0; m < n; ++m)
    source[m] = static_cast<int8_t>(m * 7);
  kernel({source.data(), zeros.data(), copy.data()});
  CHECK(zeros == AlignedVector<int8_t>(n, 0));
  CHECK(copy == source);
}
