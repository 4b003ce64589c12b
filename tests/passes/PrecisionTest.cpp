// "precision": what each policy does to contractions (casts, accumulators,
// allow_tf32), what it leaves in f32, how it folds narrow values widened by
// an earlier contraction, and that the result stays within the policy's
// tolerance of the f32 graph while really rounding.
#include "PassTestUtil.h"

#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "passes/graph/GraphPasses.h"

#include <cmath>

using namespace kiln;
using namespace kiln::ir;
using namespace kiln::passes;
using namespace kiln::testing;

namespace {

/// Runs the policy's pass then dce; returns whether the pass changed anything.
bool applyPolicy(Graph &graph, PrecisionPolicy policy) {
  bool changed = runPassOrFail(createPrecisionPass(policy), graph);
  runPassOrFail(createDeadCodeEliminationPass(), graph);
  return changed;
}

DType operandDType(const Node &node, size_t index) { return node.operand(index)->type().dtype; }

/// The interface of a graph: input, parameter and output types by name.
std::string interfaceStr(const Graph &graph) {
  std::string text;
  for (const Value *input : graph.inputs())
    text += "in " + input->name() + ": " + input->type().str() + "\n";
  for (const Value *param : graph.params())
    text += "param " + param->name() + ": " + param->type().str() + "\n";
  for (const GraphOutput &output : graph.outputs())
    text += "out " + output.name + ": " + output.value->type().str() + "\n";
  return text;
}

// A two-layer perceptron with a softmax: the shape of most classifiers.
constexpr std::string_view kMlp = R"(graph @mlp {
  input %x: f32[5,12]
  param %w1: f32[12,24]
  param %b1: f32[24]
  param %w2: f32[24,7]
  %0: f32[5,24] = matmul(%x, %w1)
  %1: f32[5,24] = add(%0, %b1)
  %2: f32[5,24] = relu(%1)
  %3: f32[5,7] = matmul(%2, %w2)
  %4: f32[5,7] = softmax(%3)
  output "probs" = %4
})";

struct NarrowPolicy {
  PrecisionPolicy policy;
  DType dtype;
};

const NarrowPolicy kNarrowPolicies[] = {
    {PrecisionPolicy::Bf16Mixed, DType::BF16},
    {PrecisionPolicy::Fp16Mixed, DType::F16},
    {PrecisionPolicy::Fp8, DType::F8E4M3},
};

} // namespace

TEST_CASE("precision policies have names, operand dtypes and tolerances", "[passes][precision]") {
  for (PrecisionPolicy policy : kPrecisionPolicies) {
    auto parsed = parsePrecisionPolicy(precisionPolicyName(policy));
    REQUIRE(parsed);
    CHECK(*parsed == policy);
    // The tolerance is a power of two at least the format's unit roundoff.
    CHECK(precisionTolerance(policy) == std::ldexp(1.0, toleranceLog2(policy)));
    CHECK(toleranceLog2(policy) > unitRoundoffLog2(policy));
  }
  CHECK(precisionPolicyList() == "fp32, tf32, bf16-mixed, fp16-mixed, fp8");
  CHECK(contractionOperandDType(PrecisionPolicy::Fp32) == std::nullopt);
  CHECK(contractionOperandDType(PrecisionPolicy::Tf32) == std::nullopt);
  CHECK(contractionOperandDType(PrecisionPolicy::Bf16Mixed) == DType::BF16);
  CHECK(contractionOperandDType(PrecisionPolicy::Fp16Mixed) == DType::F16);
  CHECK(contractionOperandDType(PrecisionPolicy::Fp8) == DType::F8E4M3);
  // Narrower formats get looser tolerances.
  CHECK(precisionTolerance(PrecisionPolicy::Fp32) < precisionTolerance(PrecisionPolicy::Tf32));
  CHECK(precisionTolerance(PrecisionPolicy::Fp16Mixed) <
        precisionTolerance(PrecisionPolicy::Bf16Mixed));
  CHECK(precisionTolerance(PrecisionPolicy::Bf16Mixed) < precisionTolerance(PrecisionPolicy::Fp8));

  auto unknown = parsePrecisionPolicy("bf16");
  REQUIRE(!unknown);
  CHECK(unknown.error().message() ==
        "unknown precision policy 'bf16': expected one of fp32, tf32, bf16-mixed, fp16-mixed, fp8");
}

TEST_CASE("the registered precision pass takes its policy from the pass options",
          "[passes][precision]") {
  auto graph = parseOrFail(kMlp);
  PassManager manager;
  REQUIRE(manager.addPipeline("precision,dce", PassOptions{.precision = PrecisionPolicy::Fp8}));
  auto changed = manager.run(*graph);
  REQUIRE(changed);
  CHECK(*changed);
  for (const Node *matmul : nodesOfKind(*graph, OpKind::MatMul))
    CHECK(matmul->type().dtype == DType::F8E4M3);
  // Without options the policy is fp32: nothing changes.
  auto plain = parseOrFail(kMlp);
  std::string before = printGraph(*plain);
  PassManager fp32;
  REQUIRE(fp32.addPipeline("precision"));
  auto unchanged = fp32.run(*plain);
  REQUIRE(unchanged);
  CHECK(!*unchanged);
  CHECK(printGraph(*plain) == before);
}

TEST_CASE("fp32 changes nothing", "[passes][precision]") {
  auto graph = parseOrFail(kMlp);
  std::string before = printGraph(*graph);
  CHECK(!applyPolicy(*graph, PrecisionPolicy::Fp32));
  CHECK(printGraph(*graph) == before);
}

TEST_CASE("tf32 allows tf32 on f32 matmul and conv2d only", "[passes][precision]") {
  auto graph = parseOrFail(R"(graph @tf32 {
    input %x: f32[2,3,8,8]
    param %f: f32[4,3,3,3]
    input %a: f32[6,5]
    input %b: f32[5,4]
    input %h: bf16[6,5]
    input %g: bf16[5,4]
    input %d: f64[6,5]
    input %e: f64[5,4]
    %0: f32[2,4,6,6] = conv2d(%x, %f)
    %1: f32[6,4] = matmul(%a, %b)
    %2: bf16[6,4] = matmul(%h, %g)
    %3: f64[6,4] = matmul(%d, %e) {accumulate = f64}
    %4: f32[6,4] = matmul(%a, %b) {accumulate = f64}
    output "conv" = %0
    output "f32" = %1
    output "bf16" = %2
    output "f64" = %3
    output "f32_f64acc" = %4
  })");
  std::string interface = interfaceStr(*graph);
  CHECK(applyPolicy(*graph, PrecisionPolicy::Tf32));
  CHECK(interfaceStr(*graph) == interface);
  auto allowsTf32 = [&](std::string_view output) {
    for (const GraphOutput &out : graph->outputs())
      if (out.name == output)
        return getBool(out.value->definingNode()->attrs(), "allow_tf32");
    FAIL("no output " << output);
    return false;
  };
  CHECK(allowsTf32("conv"));
  CHECK(allowsTf32("f32"));
  CHECK(!allowsTf32("bf16"));
  CHECK(!allowsTf32("f64"));
  CHECK(!allowsTf32("f32_f64acc")); // an explicit f64 accumulator is kept as written
  CHECK(countNodes(*graph, OpKind::Cast) == 0);
  // Applying it again finds nothing left to do.
  CHECK(!applyPolicy(*graph, PrecisionPolicy::Tf32));
}

TEST_CASE("mixed policies narrow contraction operands and keep the rest in f32",
          "[passes][precision]") {
  NarrowPolicy policy =
      GENERATE(from_range(std::begin(kNarrowPolicies), std::end(kNarrowPolicies)));
  INFO("policy " << precisionPolicyName(policy.policy));
  auto graph = parseOrFail(kMlp);
  std::string interface = interfaceStr(*graph);
  CHECK(applyPolicy(*graph, policy.policy));
  CHECK(interfaceStr(*graph) == interface); // inputs, params and outputs stay f32

  auto matmuls = nodesOfKind(*graph, OpKind::MatMul);
  REQUIRE(matmuls.size() == 2);
  for (const Node *matmul : matmuls) {
    CHECK(operandDType(*matmul, 0) == policy.dtype);
    CHECK(operandDType(*matmul, 1) == policy.dtype);
    CHECK(matmul->type().dtype == policy.dtype);
    CHECK(getType(matmul->attrs(), "accumulate") == DType::F32);
    CHECK(!getBool(matmul->attrs(), "allow_tf32"));
    // The narrow result is widened back before anything else reads it.
    for (const Use &use : matmul->result()->uses()) {
      CHECK(use.user->kind() == OpKind::Cast);
      CHECK(use.user->type().dtype == DType::F32);
    }
  }
  // Bias, relu and softmax still compute in f32.
  for (OpKind kind : {OpKind::Add, OpKind::Relu, OpKind::Softmax}) {
    auto nodes = nodesOfKind(*graph, kind);
    REQUIRE(nodes.size() == 1);
    CHECK(nodes[0]->type().dtype == DType::F32);
  }
  // Casts: x, w1, relu's result and w2 narrowed, two results widened.
  CHECK(countNodes(*graph, OpKind::Cast) == 6);
  // Applying the policy again finds no f32 contraction.
  CHECK(!applyPolicy(*graph, policy.policy));
}

TEST_CASE("a parameter read by several contractions is cast once", "[passes][precision]") {
  auto graph = parseOrFail(R"(graph @shared {
    input %x: f32[3,8]
    input %y: f32[3,8]
    param %w: f32[8,8]
    %0: f32[3,8] = matmul(%x, %w)
    %1: f32[3,8] = matmul(%y, %w)
    %2: f32[3,8] = add(%0, %1)
    output "z" = %2
  })");
  applyPolicy(*graph, PrecisionPolicy::Bf16Mixed);
  const Value *w = graph->findParam("w");
  REQUIRE(w->uses().size() == 1);
  const Node *cast = w->uses()[0].user;
  CHECK(cast->kind() == OpKind::Cast);
  CHECK(cast->result()->uses().size() == 2);
}

TEST_CASE("a contraction reads an earlier contraction's narrow result directly",
          "[passes][precision]") {
  NarrowPolicy policy =
      GENERATE(from_range(std::begin(kNarrowPolicies), std::end(kNarrowPolicies)));
  INFO("policy " << precisionPolicyName(policy.policy));
  // matmul -> matmul, and matmul -> reshape -> transpose -> matmul: f32 holds
  // every narrow value, so narrowing the widened result again is the identity
  // and the moves can run on the narrow value.
  auto graph = parseOrFail(R"(graph @chain {
    input %x: f32[6,8]
    param %w1: f32[8,12]
    param %w2: f32[12,4]
    %0: f32[6,12] = matmul(%x, %w1)
    %1: f32[6,4] = matmul(%0, %w2)
    %2: f32[2,3,4] = reshape(%1) {shape = [2, 3, 4]}
    %3: f32[2,4,3] = transpose(%2) {perm = [0, 2, 1]}
    %4: f32[8,3] = reshape(%3) {shape = [8, 3]}
    %5: f32[8,2] = slice(%4) {starts = [0, 1], steps = [1, 1], stops = [8, 3]}
    %6: f32[2,8] = transpose(%5) {perm = [1, 0]}
    %7: f32[2,6] = matmul(%6, %x) {transpose_b = true}
    output "y" = %7
  })");
  NamedTensors bindings = randomBindings(*graph, 5);
  NamedTensors before = interpretOrFail(*graph, bindings);
  applyPolicy(*graph, policy.policy);
  auto matmuls = nodesOfKind(*graph, OpKind::MatMul);
  REQUIRE(matmuls.size() == 3);
  // The second matmul reads the first's narrow result itself.
  CHECK(matmuls[1]->operand(0) == matmuls[0]->result());
  // The moves before the third run on narrow values; no cast between them.
  const Node *moved = matmuls[2]->operand(0)->definingNode();
  for (OpKind kind : {OpKind::Transpose, OpKind::Slice, OpKind::Reshape, OpKind::Transpose,
                      OpKind::Reshape}) {
    REQUIRE(moved != nullptr);
    CHECK(moved->kind() == kind);
    CHECK(moved->type().dtype == policy.dtype);
    moved = moved->operand(0)->definingNode();
  }
  CHECK(moved == matmuls[1]);
  // x, w1 and w2 narrowed (x once, for the first and the last matmul), the
  // last result widened; the first two widened results died.
  CHECK(countNodes(*graph, OpKind::Cast) == 3 + 1);
  CHECK(matmuls[2]->operand(1) == matmuls[0]->operand(0));
  // Still the same computation, within the policy's tolerance.
  NamedTensors after = interpretOrFail(*graph, bindings);
  const HostTensor &want = before.at("y"), &got = after.at("y");
  double scale = 0, error = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    scale = std::max(scale, std::abs(want.getDouble(i)));
    error = std::max(error, std::abs(want.getDouble(i) - got.getDouble(i)));
  }
  CHECK(error <= precisionTolerance(policy.policy) * scale);
}

TEST_CASE("narrowing never folds away a rounding the policy asked for", "[passes][precision]") {
  // The first matmul's result is widened, biased in f32 and narrowed again:
  // that second rounding is new (the add's result is not a narrow value),
  // and the widened result is also an output, which stays f32.
  auto graph = parseOrFail(R"(graph @keep {
    input %x: f32[4,8]
    param %w: f32[8,8]
    param %b: f32[8]
    %0: f32[4,8] = matmul(%x, %w)
    %1: f32[4,8] = add(%0, %b)
    %2: f32[4,8] = matmul(%1, %w)
    output "first" = %0
    output "second" = %2
  })");
  applyPolicy(*graph, PrecisionPolicy::Bf16Mixed);
  runPassOrFail(createAlgebraicSimplifyPass(), *graph);
  runPassOrFail(createCommonSubexpressionEliminationPass(), *graph);
  runPassOrFail(createDeadCodeEliminationPass(), *graph);
  auto matmuls = nodesOfKind(*graph, OpKind::MatMul);
  REQUIRE(matmuls.size() == 2);
  const Node *narrowed = matmuls[1]->operand(0)->definingNode();
  REQUIRE(narrowed != nullptr);
  CHECK(narrowed->kind() == OpKind::Cast);
  CHECK(narrowed->operand(0)->definingNode()->kind() == OpKind::Add);
  const Value *first = graph->outputs()[0].value;
  CHECK(first->type().dtype == DType::F32);
  CHECK(first->definingNode()->kind() == OpKind::Cast);
  CHECK(first->definingNode()->operand(0) == matmuls[0]->result());
  // x, w (shared), the add's result narrowed; two results widened.
  CHECK(countNodes(*graph, OpKind::Cast) == 5);
}

TEST_CASE("conv2d is narrowed; normalizations and pooling stay f32", "[passes][precision]") {
  NarrowPolicy policy =
      GENERATE(from_range(std::begin(kNarrowPolicies), std::end(kNarrowPolicies)));
  INFO("policy " << precisionPolicyName(policy.policy));
  auto graph = parseOrFail(R"(graph @block {
    input %x: f32[2,3,9,9]
    param %f: f32[4,3,3,3]
    param %scale: f32[4]
    param %bias: f32[4]
    param %mean: f32[4]
    param %var: f32[4]
    param %g: f32[7]
    param %h: f32[7]
    %0: f32[2,4,7,7] = conv2d(%x, %f)
    %1: f32[2,4,7,7] = batch_norm(%0, %scale, %bias, %mean, %var)
    %2: f32[2,4,3,3] = max_pool2d(%1) {kernel = [2, 2], stride = [2, 2]}
    %3: f32[2,4,1,1] = global_avg_pool(%1)
    %4: f32[2,4,7,7] = layer_norm(%0, %g, %h)
    %5: f32[2,4] = reduce_sum(%0) {axes = [2, 3]}
    output "pool" = %2
    output "gap" = %3
    output "ln" = %4
    output "sum" = %5
  })");
  std::string interface = interfaceStr(*graph);
  applyPolicy(*graph, policy.policy);
  CHECK(interfaceStr(*graph) == interface);
  auto convs = nodesOfKind(*graph, OpKind::Conv2D);
  REQUIRE(convs.size() == 1);
  CHECK(operandDType(*convs[0], 0) == policy.dtype);
  CHECK(operandDType(*convs[0], 1) == policy.dtype);
  CHECK(getType(convs[0]->attrs(), "accumulate") == DType::F32);
  for (OpKind kind : {OpKind::BatchNorm, OpKind::MaxPool2D, OpKind::GlobalAvgPool,
                      OpKind::LayerNorm, OpKind::ReduceSum})
    for (const Node *node : nodesOfKind(*graph, kind)) {
      INFO(node->name());
      CHECK(node->type().dtype == DType::F32);
      CHECK(operandDType(*node, 0) == DType::F32);
    }
}

TEST_CASE("contractions the graph typed explicitly are left as written", "[passes][precision]") {
  PrecisionPolicy policy = GENERATE(PrecisionPolicy::Tf32, PrecisionPolicy::Bf16Mixed,
                                    PrecisionPolicy::Fp16Mixed, PrecisionPolicy::Fp8);
  INFO("policy " << precisionPolicyName(policy));
  auto graph = parseOrFail(R"(graph @explicit {
    input %a: f16[4,8]
    input %b: f16[8,4]
    input %c: f32[4,8]
    input %d: f32[8,4]
    input %i: i8[4,8]
    input %j: i8[8,4]
    input %q: f32[2,5,8]
    %0: f16[4,4] = matmul(%a, %b)
    %1: f32[4,4] = matmul(%c, %d) {accumulate = f64}
    %2: i32[4,4] = matmul(%i, %j) {accumulate = i32}
    %3: f32[2,5,8] = scaled_dot_product_attention(%q, %q, %q) {scale = 0.35}
    output "f16" = %0
    output "f64acc" = %1
    output "int8" = %2
    output "attention" = %3
  })");
  std::string before = printGraph(*graph);
  CHECK(!applyPolicy(*graph, policy));
  CHECK(printGraph(*graph) == before);
}

TEST_CASE("decomposed attention gets narrow matmuls around an f32 softmax",
          "[passes][precision]") {
  auto graph = parseOrFail(R"(graph @attention {
    input %q: f32[2,5,8]
    input %k: f32[2,6,8]
    input %v: f32[2,6,3]
    %0: f32[2,5,3] = scaled_dot_product_attention(%q, %k, %v) {causal = true, scale = 0.35}
    output "y" = %0
  })");
  NamedTensors bindings = randomBindings(*graph, 11);
  NamedTensors before = interpretOrFail(*graph, bindings);
  runPassOrFail(createDecomposePass(), *graph);
  applyPolicy(*graph, PrecisionPolicy::Bf16Mixed);
  auto matmuls = nodesOfKind(*graph, OpKind::MatMul);
  REQUIRE(matmuls.size() == 2);
  for (const Node *matmul : matmuls)
    CHECK(matmul->type().dtype == DType::BF16);
  for (OpKind kind : {OpKind::ReduceMax, OpKind::ReduceSum, OpKind::Exp, OpKind::Div})
    for (const Node *node : nodesOfKind(*graph, kind))
      CHECK(node->type().dtype == DType::F32);
  requireCloseOutputs(before, interpretOrFail(*graph, bindings),
                      precisionTolerance(PrecisionPolicy::Bf16Mixed));
}

TEST_CASE("a narrowed graph really rounds, and stays within the policy's tolerance",
          "[passes][precision]") {
  NarrowPolicy policy =
      GENERATE(from_range(std::begin(kNarrowPolicies), std::end(kNarrowPolicies)));
  INFO("policy " << precisionPolicyName(policy.policy));
  auto graph = parseOrFail(kMlp);
  auto narrowed = parseOrFail(kMlp);
  applyPolicy(*narrowed, policy.policy);
  for (uint64_t seed : {1u, 2u, 3u}) {
    INFO("seed " << seed);
    NamedTensors bindings = randomBindings(*graph, seed, -1.0, 1.0);
    const HostTensor want = interpretOrFail(*graph, bindings).at("probs");
    const HostTensor got = interpretOrFail(*narrowed, bindings).at("probs");
    double scale = 0, error = 0;
    for (int64_t i = 0; i < want.numElements(); ++i) {
      scale = std::max(scale, std::abs(want.getDouble(i)));
      error = std::max(error, std::abs(want.getDouble(i) - got.getDouble(i)));
    }
    CHECK(error > 0); // the narrow operands changed the result...
    CHECK(error <= precisionTolerance(policy.policy) * scale); // ...within tolerance
  }
}
