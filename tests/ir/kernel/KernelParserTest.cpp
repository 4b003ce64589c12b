// The kernel IR parser: printKernel(parseKernel(printKernel(k))) == printKernel(k) for every
// kernel every example model lowers to, on the CPU and on sm_80 and sm_90a (mma, ldmatrix,
// cp.async, wgmma, TMA, mbarriers), the parsed kernels behave as the originals under the
// kernel passes, and malformed text gives located errors.
#include "ir/kernel/Parser.h"
#include "ir/kernel/Printer.h"

#include "codegen/Target.h"
#include "compiler/Pipeline.h"
#include "examples/models/ExampleRegistry.h"
#include "passes/kernel/Passes.h"
#include "passes/lower/gpu/GpuContraction.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <set>
#include <sstream>

using namespace kiln;

namespace {

/// One way to lower the examples: a target and the options that pick its instructions.
struct LoweringCase {
  std::string name;
  compiler::LoweringTarget target;
  CompileOptions options;
};

std::vector<LoweringCase> loweringCases() {
  std::vector<LoweringCase> cases;
  CompileOptions cpu;
  cpu.target = TargetKind::Cpu;
  cpu.tuning = TuningMode::Off;
  cases.push_back({"cpu", codegen::referenceCpuTarget(), cpu});
  for (auto [arch, precision] : {std::pair{"sm_80", passes::PrecisionPolicy::Fp32},
                                 std::pair{"sm_80", passes::PrecisionPolicy::Bf16Mixed},
                                 std::pair{"sm_90a", passes::PrecisionPolicy::Fp32}}) {
    CompileOptions gpu = cpu;
    gpu.target = TargetKind::Cuda;
    gpu.gpuArch = arch;
    gpu.precision = precision;
    cases.push_back({fmt::format("{} {}", arch, passes::precisionPolicyName(precision)),
                     *codegen::gpuTargetNamed(arch), gpu});
  }
  // Warpgroup products with operands by cp.async, then by bulk tensor copies and mbarriers.
  const codegen::GpuTarget sm90a = *codegen::gpuTargetNamed("sm_90a");
  for (bool tma : {false, true}) {
    CompileOptions wgmma = cases.back().options;
    wgmma.precision = passes::PrecisionPolicy::Bf16Mixed;
    wgmma.chooseSchedule = [sm90a, tma](const ir::Graph &, const passes::FusionGroup &group) {
      return lower::wgmmaContractionSchedule(group, sm90a, tma);
    };
    cases.push_back({tma ? "sm_90a wgmma tma" : "sm_90a wgmma", sm90a, wgmma});
  }
  return cases;
}

/// The statement keyword of each line ("mma", "for", "tma_load"), to show that the corpus
/// covers every statement kind.
void collectKeywords(const std::string &text, std::set<std::string> &keywords) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t start = line.find_first_not_of(' ');
    if (start == std::string::npos)
      continue;
    std::string word = line.substr(start, line.find_first_of(" .", start) - start);
    // A target instruction led by its op names both: "mbarrier op=init" is mbarrier_init.
    if (size_t op = start + word.size(); line.compare(op, 4, " op=") == 0)
      word += "_" + line.substr(op + 4, line.find(',', op) - op - 4);
    keywords.insert(word);
  }
}

} // namespace

TEST_CASE("every lowered example kernel prints, parses and prints again to the same text",
          "[kernel][parser]") {
  std::set<std::string> keywords;
  size_t kernelCount = 0;
  for (const LoweringCase &c : loweringCases()) {
    for (const examples::ExampleModel &model : examples::exampleModels()) {
      INFO(model.name << " lowered for " << c.name);
      Graph graph(model.name, 1);
      model.build(graph, 1);
      REQUIRE(graph.finalize());
      std::ostringstream dump;
      CompileReport report;
      auto program = compiler::lowerProgram(graph.ir(), c.options, c.target, "parser-test", dump,
                                            report);
      REQUIRE(program.has_value());
      for (const kir::Kernel &kernel : program->kernels) {
        std::string text = kir::printKernel(kernel);
        auto parsed = kir::parseKernel(text, kernel.name);
        INFO(text);
        REQUIRE(parsed.has_value());
        REQUIRE(kir::printKernel(*parsed) == text);
        // The parsed tree is the same program: the passes treat it as they treat the original.
        CHECK(kir::printKernel(kir::runKernelPasses(*parsed)) ==
              kir::printKernel(kir::runKernelPasses(kernel)));
        collectKeywords(text, keywords);
        ++kernelCount;
      }
    }
  }
  CHECK(kernelCount > 100);
  for (const char *keyword :
       {"kernel", "for", "let", "if", "alloc", "store", "barrier", "mma", "ldmatrix", "async_copy",
        "async_commit", "async_wait", "wgmma", "wgmma_sync_fence", "wgmma_sync_commit",
        "wgmma_sync_wait", "mbarrier_init", "mbarrier_arrive_expect_tx", "mbarrier_wait",
        "tma_load"}) {
    INFO("no lowered kernel has a '" << keyword << "' statement");
    CHECK(keywords.contains(keyword));
  }
}

TEST_CASE("the parser reads every statement and expression form the printer writes",
          "[kernel][parser]") {
  // Forms the examples' kernels may not reach: predicated and vector loads, shuffles,
  // atomics, evaluate, else branches, nested blocks, every literal kind, braced lets.
  const std::string text =
      "kernel forms(in: f32[64], out: f32[64], counts: i32[4], sizes: i64[1]) min_blocks_per_sm=2 {\n"
      "  for b in [0, 2) block.x {\n"
      "    for t in [0, 32) thread.x {\n"
      "      let n = load i64 sizes[0] {\n"
      "        for i in [1, 1 + n) serial {\n"
      "          store f32 out[i] = (load f32 in[i] if i < 64) + -inff32 * nanf32 - 1e-30f32\n"
      "        }\n"
      "      }\n"
      "      let v: f32x4 = load f32x4 in[t * 4] + broadcast(0.1f32, 4)\n"
      "      store f32x4 out[t * 4] = select(v > broadcast(0.0f32, 4), v, -v) if truex4\n"
      "      atomic add i32 counts[0] <- shuffle_xor(cast<i32>(t), 16i32) & -2i32 | 1i32\n"
      "      atomic max i64 sizes[0] <- shuffle_idx(-9223372036854775808 % 7, 0i32)\n"
      "      if !(t != 0) && b >= 1 || false {\n"
      "        eval fma(1.0f64, pow(2.0f64, 0.5f64), cast<f64>(min(1.5f32, max(0.5f32, abs(-1.0f32)))))\n"
      "      } else {\n"
      "        {}\n"
      "        {\n"
      "          store f32 out[t] = cast<f32>(cast<bf16>(exp(log(sqrt(rsqrt(tanh(erf(sin(cos(floor(1.0f32)))))))))))\n"
      "        }\n"
      "      }\n"
      "      barrier\n"
      "    }\n"
      "  }\n"
      "}\n";
  auto parsed = kir::parseKernel(text, "forms");
  if (!parsed)
    FAIL(parsed.error().str());
  CHECK(kir::printKernel(*parsed) == text);
  CHECK(parsed->minBlocksPerSm == 2);
  CHECK(parsed->params.size() == 4);
}

TEST_CASE("one name is one object: sibling scopes share it, the passes see one variable",
          "[kernel][parser]") {
  // The printer names an object once, so the same name bound twice is the same variable
  // (hoist handles one variable bound by two lets; its lit test depends on this).
  auto kernel = kir::parseKernel("kernel k(out: i64[8]) {\n"
                                 "  for i in [0, 4) serial {\n"
                                 "    store i64 out[i] = i\n"
                                 "  }\n"
                                 "  for i in [0, 4) serial {\n"
                                 "    store i64 out[i + 4] = i\n"
                                 "  }\n"
                                 "}\n");
  REQUIRE(kernel.has_value());
  const auto &body = static_cast<const kir::Block &>(*kernel->body);
  REQUIRE(body.stmts.size() == 2);
  CHECK(kir::as<kir::For>(*body.stmts[0])->var == kir::as<kir::For>(*body.stmts[1])->var);
}

TEST_CASE("parseKernels reads several kernels; parseKernel wants exactly one", "[kernel][parser]") {
  std::string two = "kernel a(x: f32[1]) {\n}\n// between\nkernel b(y: i8[2] shared) {\n}\n";
  auto kernels = kir::parseKernels(two, "two.kir");
  REQUIRE(kernels.has_value());
  REQUIRE(kernels->size() == 2);
  CHECK(kir::printKernel((*kernels)[0]) + kir::printKernel((*kernels)[1]) ==
        "kernel a(x: f32[1]) {\n}\nkernel b(y: i8[2] shared) {\n}\n");
  auto one = kir::parseKernel(two, "two.kir");
  REQUIRE(!one.has_value());
  CHECK(one.error().message() == "expected one kernel, found 2");
  auto none = kir::parseKernels("// nothing\n", "none.kir");
  REQUIRE(!none.has_value());
  CHECK(none.error().str() == "none.kir:2:1: expected 'kernel', found end of input");
}

TEST_CASE("malformed kernel text is a located error, never an assertion", "[kernel][parser]") {
  struct Case {
    std::string body;
    std::string error;
  };
  // Each body goes inside `kernel k(a: f32[16], s: i64[1]) {` on line 1.
  const std::vector<Case> cases = {
      {"store f32 a[0] = 1i32", "1:51: the stored value must be f32, not i32"},
      {"store f32 q[0] = 1.0f32", "1:44: undefined buffer 'q'"},
      {"store f32 a[j] = 1.0f32", "1:46: undefined variable 'j'"},
      {"let x = 1\nlet x = 2", "2:5: variable 'x' is already bound here"},
      {"for i in [0, 4) serial {\n}\nlet i: f32 = 1.0f32",
       "3:5: variable 'i' was bound before as i64, here as f32 (one name is one variable)"},
      {"alloc a: f32[4] register", "1:40: buffer 'a' is already defined here"},
      {"alloc g: f32[4] global", "1:50: an alloc's scope is local, shared or register, not 'global'"},
      {"store f32 a[0] = exp(1i32)", "1:51: exp takes floats, not i32"},
      {"store f32 a[0] = pow(1.0f32)", "1:61: expected ',' (pow takes 2 arguments), found ')'"},
      {"store f32 a[0] = frob(1.0f32)", "1:51: unknown function 'frob'"},
      {"store f32 a[0] = cast<f32x4>(1.0f32)",
       "1:51: cast from f32 to f32x4 changes the lane count"},
      {"store f32 a[0] = 1.5i32", "1:51: a literal of i32 has no fraction or exponent"},
      {"store f32 a[0] = 1.0q8", "1:51: 'q8' is not a type (a literal's suffix is one: 3i32, 1.5f32)"},
      {"store f32 a[0] = 1e999f32", "1:51: 1e999 is not a finite f32 value"},
      {"store f32 a[0] = (load f32 a[0] + 1.0f32 if true)",
       "1:75: expected ')', found 'if'"},
      {"for i in [1, 5 + 1) serial {\n}",
       "1:43: a loop's range is [begin, end) with constant bounds, [0, extent) or "
       "[begin, begin + extent), not [1, 5 + 1)"},
      {"for i in [0, 4) serial {", "3:1: expected '}', found end of input"},
      {"async_wait pendingGroups=9", "1:34: async wait for 9 pending groups (0 .. 7)"},
      {"async_wait 9", "1:45: expected 'pendingGroups=' (async_wait's next operand), found '9'"},
      {"async_wait pendingGroups=1, lanes=2",
       "1:60: expected a statement, found ','"},
      {"async_wait pendingGroups=4294967297", "1:59: async_wait pendingGroups is out of range"},
      {"wgmma_sync op=flush, pendingGroups=0", "1:48: unknown wgmma_sync op 'flush'"},
      {"alloc b: i64[1] shared\nmbarrier op=wait, barriers=b, index=0, count=0",
       "2:1: mbarrier_wait lacks a parity (only a wait has one)"},
      {"alloc r: bf16[64] register\nwgmma wgmmaKind=bf16.k16, n=64, d=r[0:], a=a[0] k lbo=16 "
       "sbo=1024, b=a[0] k lbo=16 sbo=1024, accumulate=false",
       "2:1: wgmma.m64n64k16.f32.bf16.bf16: d must be a register buffer of f32"},
      {"alloc r: bf16[8] register\nldmatrix destination=r[0:], matrices=4, transpose=false, "
       "source=a, rowIndex=0",
       "2:1: ldmatrix reads global buffer a, not a shared one"},
      {"kernel", "1:34: expected a statement, found 'kernel'"},
      // Tensor maps past 2^40, or spanning past 2^63 elements, never reach tensorMapProblem's
      // 64-bit arithmetic.
      {"alloc t: f32[64] shared\nalloc m: i64[1] shared\ntma_load destination=t, "
       "destinationIndex=0, map=map(a dims [16, 1099511627777] strides [16] box [16, 1] "
       "swizzle none), coords=[0, 0], barriers=m, barrierIndex=0",
       "3:49: tensor map map: dimensions and strides are 1 to 2^40, not 1099511627777"},
      {"alloc t: f32[64] shared\nalloc m: i64[1] shared\ntma_load destination=t, "
       "destinationIndex=0, map=map(a dims [16, 1099511627776] strides [1099511627776] box "
       "[16, 1] swizzle none), coords=[0, 0], barriers=m, barrierIndex=0",
       "3:49: tensor map map: spans more than the 16 elements of a"},
  };
  for (const Case &c : cases) {
    INFO(c.body);
    auto kernel = kir::parseKernel("kernel k(a: f32[16], s: i64[1]) {" + c.body + "\n}\n", "bad");
    REQUIRE(!kernel.has_value());
    CHECK(kernel.error().code() == ErrorCode::ParseError);
    CHECK(kernel.error().str() == "bad:" + c.error);
  }
}
