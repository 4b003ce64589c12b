// A naive matmul through the simulator: it must finish and agree with the
// evaluator; its speed is reported (WARN), never asserted.
#include "SimTestUtil.h"

#include <chrono>

using namespace kiln;
using namespace kiln::kir;
using kiln::test::GpuCoords;
using kiln::test::gpuKernel;

TEST_CASE("sim: a 64x64x64 naive matmul finishes (throughput sanity)", "[sim]") {
  const int64_t n = 64, tile = 16;
  auto a = makeBuffer("A", DType::F32, n * n), b = makeBuffer("B", DType::F32, n * n);
  auto c = makeBuffer("C", DType::F32, n * n);
  auto acc = makeBuffer("acc", DType::F32, 1, MemScope::Register);
  Kernel kernel = gpuKernel(
      "matmul", {a, b, c}, {n / tile, n / tile, 1}, {tile, tile, 1}, {}, [&](const GpuCoords &g) {
        auto i = makeVar("i"), j = makeVar("j"), k = makeVar("k");
        ExprPtr product = mul(load(a, add(mul(kir::ref(i), index(n)), kir::ref(k))),
                              load(b, add(mul(kir::ref(k), index(n)), kir::ref(j))));
        return let(
            i, add(mul(g.block[1], index(tile)), g.thread[1]),
            let(j, add(mul(g.block[0], index(tile)), g.thread[0]),
                allocate(acc, seq({store(acc, index(0), floatImm(0.0, Type::scalar(DType::F32))),
                                   forRange(k, n, ForKind::Serial,
                                            store(acc, index(0),
                                                  add(load(acc, index(0)), product))),
                                   store(c, add(mul(kir::ref(i), index(n)), kir::ref(j)),
                                         load(acc, index(0)))}))));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 31);
  auto start = std::chrono::steady_clock::now();
  auto stats = sim::simulateKernel(kernel, params);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  REQUIRE(stats.has_value());
  CHECK(stats->globalLoads == 2 * n * n * n);
  // Per thread and k: two loads, two index products, the multiply, the acc load,
  // add and store: about 10 thread-operations.
  double threadOps = 10.0 * n * n * n;
  WARN("64x64x64 naive matmul: " << seconds * 1e3 << " ms, about " << threadOps / seconds / 1e6
                                 << " million thread-operations per second");
  auto x = params[0].as<float>(), y = params[1].as<float>(), z = params[2].as<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t k = 0; k < n; ++k)
        sum += x[static_cast<size_t>(i * n + k)] * y[static_cast<size_t>(k * n + j)];
      REQUIRE(z[static_cast<size_t>(i * n + j)] == sum);
    }
  test::requireMatchesEvaluator(kernel);
}
