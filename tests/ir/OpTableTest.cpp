// The op table: every row is complete and consistent, and names round-trip.
#include "ir/graph/OpTable.h"

#include <catch2/catch.hpp>
#include <set>

using namespace kiln;
using namespace kiln::ir;

TEST_CASE("every op has a unique name, an inference and a reference function", "[optable]") {
  std::set<std::string_view> names;
  REQUIRE(allOps().size() == static_cast<size_t>(kNumOps));
  for (const OpInfo &info : allOps()) {
    INFO(info.name);
    CHECK(names.insert(info.name).second);
    CHECK(info.infer != nullptr);
    // A composite elementwise op's reference is its decomposition.
    CHECK((info.reference != nullptr || isCompositeElementwise(info)));
    CHECK(!info.doc.empty());
    CHECK(info.minOperands >= 0);
    CHECK((info.maxOperands == -1 || info.maxOperands >= info.minOperands));
    REQUIRE(opKindFromName(info.name).has_value());
    CHECK(*opKindFromName(info.name) == info.kind);
    std::set<std::string_view> attrNames;
    for (const AttrSpec &spec : info.attrs) {
      CHECK(attrNames.insert(spec.name).second);
      if (spec.defaultValue)
        CHECK(attrKind(*spec.defaultValue) == spec.kind);
    }
  }
  CHECK_FALSE(opKindFromName("conv3d").has_value());
}

TEST_CASE("the composite ops named by the design each have a decomposition", "[optable]") {
  for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax, OpKind::LayerNorm, OpKind::BatchNorm,
                      OpKind::ScaledDotProductAttention, OpKind::GlobalAvgPool})
    CHECK(opInfo(kind).decompose != nullptr);
  CHECK(opInfo(OpKind::Add).decompose == nullptr);
}

TEST_CASE("composite elementwise rows name only their decomposition", "[optable]") {
  const std::set<OpKind> composites = {OpKind::Relu6,    OpKind::HardSigmoid, OpKind::HardSwish,
                                       OpKind::Softplus, OpKind::Mish,        OpKind::LeakyRelu,
                                       OpKind::Elu};
  for (OpKind kind : composites) {
    INFO(opName(kind));
    CHECK(isCompositeElementwise(opInfo(kind)));
  }
  for (const OpInfo &info : allOps()) {
    INFO(info.name);
    // An elementwise row with a decomposition leaves its reference and gradient to it:
    // one more of either would be a second definition that could disagree. batch_norm
    // is the exception, an op with a kernel (element emission) of its own.
    if (info.category == OpCategory::Elementwise && info.decompose != nullptr &&
        info.kind != OpKind::BatchNorm) {
      CHECK(info.reference == nullptr);
      CHECK(info.gradient == nullptr);
    }
    if (isCompositeElementwise(info))
      CHECK(info.gradient == nullptr);
  }
  CHECK_FALSE(isCompositeElementwise(opInfo(OpKind::BatchNorm)));
  CHECK_FALSE(isCompositeElementwise(opInfo(OpKind::Softmax)));
  CHECK_FALSE(isCompositeElementwise(opInfo(OpKind::Silu)));
}

TEST_CASE("normalizeAttrs fills defaults and rejects bad attributes", "[optable]") {
  auto filled = normalizeAttrs(OpKind::Conv2D, {});
  REQUIRE(filled);
  CHECK(getInts(*filled, "stride") == std::vector<int64_t>{1, 1});
  CHECK(getString(*filled, "layout") == "nchw");
  CHECK(getType(*filled, "accumulate") == DType::F32);

  auto unknown = normalizeAttrs(OpKind::Relu, {{"alpha", 0.1}});
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message() == "relu: unknown attribute 'alpha' (known: none)");

  auto missing = normalizeAttrs(OpKind::Transpose, {});
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message(),
             Catch::Contains("transpose: missing required attribute 'perm'"));

  auto wrongKind = normalizeAttrs(OpKind::Softmax, {{"axis", std::string("last")}});
  REQUIRE_FALSE(wrongKind);
  CHECK(wrongKind.error().message() == "softmax: attribute 'axis' expects int, got string");

  auto intAsFloat = normalizeAttrs(OpKind::Clamp, {{"min", int64_t{0}}, {"max", int64_t{6}}});
  REQUIRE(intAsFloat);
  CHECK(getFloat(*intAsFloat, "max") == 6.0);
}

TEST_CASE("attribute text is canonical and marks floats", "[optable]") {
  CHECK(attrStr(Attr(int64_t{3})) == "3");
  CHECK(attrStr(Attr(2.0)) == "2.0");
  CHECK(attrStr(Attr(0.1)) == "0.1");
  CHECK(attrStr(Attr(1e-300)) == "1e-300");
  CHECK(attrStr(Attr(-std::numeric_limits<double>::infinity())) == "-inf");
  CHECK(attrStr(Attr(std::vector<int64_t>{1, -2})) == "[1, -2]");
  CHECK(attrStr(Attr(std::vector<double>{0.5, 1.0})) == "[0.5, 1.0]");
  CHECK(attrStr(Attr(std::string("a\"b"))) == "\"a\\\"b\"");
  CHECK(attrStr(Attr(DType::BF16)) == "bf16");
  CHECK(attrStr(Attr(true)) == "true");
}
