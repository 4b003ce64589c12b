// The kernel-IR verifier: one minimal malformed kernel per rule, with the message it gets, and
// a sweep over every kernel the compiler lowers from the example models (CPU, sm_80, sm_90a),
// which must all pass.
#include "codegen/Target.h"
#include "compiler/Pipeline.h"
#include "examples/models/ExampleRegistry.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"
#include "ir/kernel/Builder.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/Verifier.h"
#include "passes/kernel/Passes.h"
#include "passes/lower/gpu/GpuContraction.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <functional>
#include <sstream>

namespace kiln::kir {
namespace {

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

/// The verifier's message for `kernel`, or "" when it passes.
std::string verifyError(const Kernel &kernel) {
  Expected<void> verified = verifyKernel(kernel);
  if (verified)
    return "";
  CHECK(verified.error().code() == ErrorCode::VerifyError);
  return verified.error().message();
}

template <typename T, typename... Args> std::shared_ptr<const T> node(Args &&...args) {
  return std::make_shared<const T>(std::forward<Args>(args)...);
}

/// A one-block, 32-thread GPU kernel: `threadBody(tx)` is what each thread runs, `shared` are
/// allocated per block.
Kernel gpuKernelOf(std::string name, std::vector<BufferPtr> params,
                   const std::function<StmtPtr(const ExprPtr &tx)> &threadBody,
                   std::vector<BufferPtr> shared = {}) {
  VarPtr bx = makeVar("bx"), tx = makeVar("tx");
  StmtPtr inner = forRange(tx, 32, ForKind::ThreadX, threadBody(kir::ref(tx)));
  for (auto it = shared.rbegin(); it != shared.rend(); ++it)
    inner = allocate(*it, inner);
  return Kernel{std::move(name), std::move(params), forRange(bx, 1, ForKind::BlockX, inner)};
}

const BufferPtr out = makeBuffer("out", DType::F32, 64);
ExprPtr f32c(double v) { return floatImm(v, Type::scalar(DType::F32)); }
ExprPtr i32c(int64_t v) { return intImm(v, Type::scalar(DType::I32)); }

/// A host kernel storing `value` to out[i] for i in [0, 64).
Kernel hostStore(std::string name, const std::function<ExprPtr(const ExprPtr &i)> &value) {
  VarPtr i = makeVar("i");
  return Kernel{std::move(name), {out},
                forRange(i, 64, ForKind::Serial,
                         node<Store>(out, kir::ref(i), value(kir::ref(i))))};
}

TEST_CASE("verifier: well-formed host and GPU kernels pass", "[kernel][verifier]") {
  CHECK(verifyError(hostStore("ok", [](const ExprPtr &) { return f32c(1.0); })) == "");
  CHECK(verifyError(gpuKernelOf("ok_gpu", {out}, [](const ExprPtr &tx) {
          return seq({store(out, tx, f32c(2.0)), barrier()});
        })) == "");
}

// What a node's own constructor checks (operand types, index and predicate dtypes, store
// dtypes, fragment sizes, the GPU statements' operand rules) cannot be built wrong at all:
// NodeChecksTest covers those. These cases build kernels of well-formed nodes that are wrong
// in context, or break a rule only the verifier knows.
TEST_CASE("verifier: expression types", "[kernel][verifier]") {
  SECTION("operations the IR does not define") {
    auto k = hostStore("booladd", [](const ExprPtr &) {
      return cast(node<Binary>(BinaryOp::Add, boolImm(true), boolImm(false), Type::boolean()),
                  Type::scalar(DType::F32));
    });
    CHECK_THAT(verifyError(k), StartsWith("kernel booladd: add is not defined on bool"));
  }
  SECTION("lanes stay within the limit") {
    VarPtr i = makeVar("i");
    BufferPtr wide = makeBuffer("wide", DType::F32, 1024);
    Kernel tooWide{"wide", {wide}, forRange(i, 1, ForKind::Serial,
                                            node<Store>(wide, index(0),
                                                        node<Broadcast>(f32c(1.0), 128)))};
    CHECK_THAT(verifyError(tooWide), Contains("has 128 lanes (1 .. 64)"));
  }
}

TEST_CASE("verifier: indices, predicates, stores and loops", "[kernel][verifier]") {
  SECTION("a predicate is bool with 1 lane or the access's") {
    VarPtr i = makeVar("i");
    Kernel k{"pred", {out}, forRange(i, 16, ForKind::Serial,
                                     node<Store>(out, mul(kir::ref(i), index(4)),
                                                 broadcast(f32c(0.0), 4),
                                                 broadcast(boolImm(true), 2)))};
    CHECK_THAT(verifyError(k), Contains("store predicate") &&
                                   Contains("must be bool or boolx4, got boolx2"));
  }
}

TEST_CASE("verifier: scopes of variables and buffers", "[kernel][verifier]") {
  VarPtr i = makeVar("i"), n = makeVar("n");
  SECTION("a variable is used only inside the for or let that binds it") {
    Kernel k{"free", {out}, store(out, kir::ref(n), f32c(0.0))};
    CHECK_THAT(verifyError(k), StartsWith("kernel free: variable n is used outside its scope"));
    Kernel after{"after", {out}, seq({let(n, index(1), store(out, kir::ref(n), f32c(0.0))),
                                      store(out, kir::ref(n), f32c(1.0))})};
    CHECK_THAT(verifyError(after), StartsWith("kernel after: variable n is used outside its "
                                              "scope"));
  }
  SECTION("a variable in scope is not bound again") {
    Kernel k{"rebind", {out}, forRange(i, 4, ForKind::Serial,
                                       forRange(i, 4, ForKind::Serial,
                                                store(out, kir::ref(i), f32c(0.0))))};
    CHECK_THAT(verifyError(k), StartsWith("kernel rebind: loop rebinds variable i, which is "
                                          "already in scope"));
  }
  SECTION("a buffer is a parameter or used inside its allocation") {
    BufferPtr tmp = makeBuffer("tmp", DType::F32, 4, MemScope::Local);
    Kernel stray{"stray", {out}, store(tmp, index(0), f32c(0.0))};
    CHECK_THAT(verifyError(stray), StartsWith("kernel stray: store into buffer tmp, which is "
                                              "neither a parameter nor allocated"));
    Kernel after{"after", {out}, seq({allocate(tmp, store(tmp, index(0), f32c(0.0))),
                                      store(out, index(0), load(tmp, index(0)))})};
    CHECK_THAT(verifyError(after), Contains("load from buffer tmp, which is neither"));
  }
  SECTION("a buffer already in scope is not allocated again") {
    BufferPtr tmp = makeBuffer("tmp", DType::F32, 4, MemScope::Local);
    Kernel twice{"twice", {out}, allocate(tmp, allocate(tmp, store(tmp, index(0), f32c(0.0))))};
    CHECK_THAT(verifyError(twice), Contains("allocates buffer tmp, which is already"));
  }
  SECTION("parameters are global buffers") {
    BufferPtr shared = makeBuffer("s", DType::F32, 4, MemScope::Shared);
    Kernel k{"param", {shared}, store(shared, index(0), f32c(0.0))};
    CHECK(verifyError(k) == "kernel param: parameter s is a shared buffer (parameters are global)");
  }
}

TEST_CASE("verifier: GPU statements stand inside the thread loops", "[kernel][verifier]") {
  SECTION("a barrier") {
    Kernel k{"host", {out}, seq({barrier(), store(out, index(0), f32c(0.0))})};
    CHECK(verifyError(k) == "kernel host: a barrier outside the thread loops (GPU statements run "
                            "inside a thread.* loop nest), in `barrier`");
  }
  SECTION("a shuffle") {
    VarPtr v = makeVar("v", Type::scalar(DType::F32)), tx = makeVar("tx");
    Kernel k{"outside", {out},
             let(v, shuffle(ShuffleMode::Xor, f32c(1.0), i32c(1)),
                 forRange(tx, 16, ForKind::ThreadX, store(out, kir::ref(tx), kir::ref(v))))};
    CHECK_THAT(verifyError(k), StartsWith("kernel outside: a warp shuffle outside the thread "
                                          "loops"));
  }
  SECTION("an atomic and an async copy in a host kernel") {
    Kernel atomicHost{"atomics", {out}, atomic(AtomicOp::Add, out, index(0), f32c(1.0))};
    CHECK_THAT(verifyError(atomicHost), StartsWith("kernel atomics: an atomic outside the thread "
                                                   "loops"));
  }
}

TEST_CASE("verifier: barriers only under uniform control flow", "[kernel][verifier]") {
  SECTION("an if on the thread index") {
    auto k = gpuKernelOf("diverge", {out}, [](const ExprPtr &tx) {
      return ifThen(lt(tx, index(16)), barrier());
    });
    CHECK_THAT(verifyError(k), StartsWith("kernel diverge: a barrier under control flow that "
                                          "varies by thread (`if tx < 16`)"));
  }
  SECTION("through a let, a register load or a loop bound") {
    VarPtr half = makeVar("half"), j = makeVar("j");
    auto viaLet = gpuKernelOf("let", {out}, [&](const ExprPtr &tx) {
      return let(half, div(tx, index(2)), ifThen(eq(kir::ref(half), index(0)), barrier()));
    });
    CHECK_THAT(verifyError(viaLet), Contains("a barrier under control flow that varies"));
    auto viaLoop = gpuKernelOf("loop", {out}, [&](const ExprPtr &tx) {
      return forLoop(j, index(0), tx, ForKind::Serial, barrier());
    });
    CHECK_THAT(verifyError(viaLoop), Contains("a barrier under control flow that varies by thread "
                                              "(`for j in [0, tx) serial`)"));
    BufferPtr reg = makeBuffer("r", DType::I64, 1, MemScope::Register);
    auto viaRegister = gpuKernelOf("reg", {out}, [&](const ExprPtr &) {
      return allocate(reg, ifThen(eq(load(reg, index(0)), index(0)), barrier()));
    });
    CHECK_THAT(verifyError(viaRegister), Contains("a barrier under control flow that varies"));
  }
  SECTION("uniform conditions and loops are fine") {
    BufferPtr counts = makeBuffer("counts", DType::I64, 4);
    VarPtr j = makeVar("j");
    auto k = gpuKernelOf("uniform", {out, counts}, [&](const ExprPtr &tx) {
      return seq({forLoop(j, index(0), load(counts, index(0)), ForKind::Serial,
                          seq({store(out, tx, f32c(1.0)), barrier()})),
                  ifThen(gt(load(counts, index(1)), index(0)), barrier())});
    });
    CHECK(verifyError(k) == "");
  }
}

TEST_CASE("verifier: GPU statements' scopes, dtypes and sizes", "[kernel][verifier]") {
  SECTION("tensor maps read kernel parameters") {
    BufferPtr tensor = makeBuffer("t", DType::F16, 64 * 64);
    BufferPtr dst = makeBuffer("dst", DType::F16, 64 * 8, MemScope::Shared);
    BufferPtr bars = makeBuffer("bars", DType::I64, 1, MemScope::Shared);
    auto map = std::make_shared<const TensorMap>(
        TensorMap{"t_map", tensor, {64, 64}, {64}, {64, 8}, TmaSwizzle::Bytes128});
    auto copy = [&](const ExprPtr &) {
      return node<TargetInstr>(
          TmaLoad{dst, index(0), map, std::vector<ExprPtr>{index(0), index(0)}, bars, index(0)});
    };
    CHECK(verifyError(gpuKernelOf("tma", {tensor, out}, copy, {dst, bars})) == "");
    CHECK_THAT(verifyError(gpuKernelOf("tma", {out}, copy, {dst, bars})),
               StartsWith("kernel tma: tensor map t_map reads t, which is not a parameter"));
  }
}

TEST_CASE("verifier: launch structure of GPU kernels", "[kernel][verifier]") {
  VarPtr bx = makeVar("bx"), tx = makeVar("tx"), ty = makeVar("ty");
  SECTION("block loops outside thread loops") {
    Kernel k{"inverted", {out},
             forRange(tx, 32, ForKind::ThreadX,
                      forRange(bx, 2, ForKind::BlockX, store(out, kir::ref(tx), f32c(0.0))))};
    CHECK_THAT(verifyError(k), StartsWith("GPU kernel inverted has a block.x loop 'bx' inside "
                                          "its thread loops"));
  }
  SECTION("each kind at most once, from 0") {
    Kernel twice{"twice", {out},
                 forRange(tx, 4, ForKind::ThreadX,
                          forRange(ty, 4, ForKind::ThreadX, store(out, kir::ref(ty), f32c(0.0))))};
    CHECK_THAT(verifyError(twice), Contains("binds two loops to thread.x"));
    Kernel offset{"offset", {out}, forLoop(tx, index(1), index(4), ForKind::ThreadX,
                                           store(out, kir::ref(tx), f32c(0.0)))};
    CHECK_THAT(verifyError(offset), Contains("bounds that are not [0, constant >= 1)"));
  }
}

TEST_CASE("verifier: the tests run the kernel passes with verification on", "[kernel][verifier]") {
  // TestMain sets KILN_VERIFY_KERNEL_IR=1, which turns it on in release builds too.
  CHECK(verifyKernelPassesEnabled());
  setVerifyKernelPasses(false);
  CHECK_FALSE(verifyKernelPassesEnabled());
  setVerifyKernelPasses(true);
  CHECK(verifyKernelPassesEnabled());
}

// ---- Every kernel the compiler makes passes -----------------------------------------------

/// The example at the small size the simulator tests use.
void buildSmallExample(const examples::ExampleModel &model, Graph &graph) {
  if (model.name == "vgg")
    examples::buildVggTransfer(graph, {.batch = 1, .imageSize = 32});
  else if (model.name == "transformer")
    examples::buildTransformerBlock(
        graph, {.batch = 1, .sequenceLength = 9, .modelDim = 32, .numHeads = 2, .mlpDim = 64});
  else
    model.build(graph, 1);
}

struct SweepConfig {
  std::string name;
  std::optional<std::string> gpuArch; ///< nullopt: the host CPU
  passes::PrecisionPolicy precision = passes::PrecisionPolicy::Fp32;
  bool wgmma = false, tma = false;
};

TEST_CASE("verifier: every kernel lowered from every example passes", "[kernel][verifier]") {
  const std::vector<SweepConfig> configs = {
      {"cpu", std::nullopt},
      {"sm_80 fp32", "sm_80"},
      {"sm_80 bf16-mixed", "sm_80", passes::PrecisionPolicy::Bf16Mixed},
      {"sm_90a fp32", "sm_90a"},
      {"sm_90a bf16-mixed wgmma", "sm_90a", passes::PrecisionPolicy::Bf16Mixed, true},
      {"sm_90a bf16-mixed wgmma tma", "sm_90a", passes::PrecisionPolicy::Bf16Mixed, true, true},
  };
  size_t verified = 0;
  for (const examples::ExampleModel &model : examples::exampleModels()) {
    for (const SweepConfig &config : configs) {
      std::string context = fmt::format("example {} for {}", model.name, config.name);
      INFO(context);
      Graph graph(model.name, 1);
      buildSmallExample(model, graph);
      REQUIRE(graph.finalize());
      CompileOptions options;
      options.tuning = TuningMode::Off;
      options.precision = config.precision;
      compiler::LoweringTarget target = codegen::hostCpuTarget();
      if (config.gpuArch) {
        auto gpu = codegen::gpuTargetNamed(*config.gpuArch);
        REQUIRE(gpu.has_value());
        target = *gpu;
        if (config.wgmma)
          options.chooseSchedule = [gpu = *gpu, tma = config.tma](
                                       const ir::Graph &, const passes::FusionGroup &group) {
            return lower::wgmmaContractionSchedule(group, gpu, tma);
          };
      }
      std::ostringstream dump;
      CompileReport report;
      // Lowering verifies each kernel before and after every kernel pass (the tests turn
      // verification on); the kernels it returns are verified here once more, by name.
      auto program = compiler::lowerProgram(graph.ir(), options, target, "verifier-sweep", dump,
                                            report);
      REQUIRE(program.has_value());
      CHECK(!program->kernels.empty());
      for (const Kernel &kernel : program->kernels) {
        Expected<void> result = verifyKernel(kernel);
        if (!result)
          FAIL(context << ": " << result.error().message() << "\n" << printKernel(kernel));
        ++verified;
      }
    }
  }
  CHECK(verified > 100);
}

} // namespace
} // namespace kiln::kir
