// The tuning database's keys: a group's signature names its computation, not
// its values or its place in a model, and its shapes are kept apart.
#include "CompileTestUtil.h"

#include "codegen/Target.h"
#include "compiler/tuning/TuningKeys.h"
#include "support/Version.h"

#include <functional>

namespace kiln::test {
namespace {

/// The identities of every group compile() lowers in the graph `build` makes.
std::vector<tuning::GroupIdentity> identitiesOf(const std::function<void(CompileCase &)> &build) {
  CompileCase c("keys");
  build(c);
  REQUIRE(c.graph().finalize());
  std::vector<tuning::GroupIdentity> ids;
  CompileOptions options;
  options.target = TargetKind::Cpu;
  options.chooseSchedule = [&](const ir::Graph &graph, const passes::FusionGroup &group) {
    ids.push_back(tuning::groupIdentity(graph, group));
    return std::optional<lower::Schedule>{};
  };
  compileOrFail(c.graph().ir(), options);
  return ids;
}

/// relu(x @ w + b) with the given names and sizes.
std::function<void(CompileCase &)> dense(std::string prefix, int64_t m, int64_t k, int64_t n,
                                         DType dtype = DType::F32) {
  return [=](CompileCase &c) {
    Tensor x = c.input(prefix + "x", {m, k}, dtype);
    Tensor w = c.param(prefix + "w", {k, n}, dtype);
    c.output(prefix + "y", relu(matmul(x, w) + c.param(prefix + "b", {n}, dtype)));
  };
}

TEST_CASE("a group's signature ignores value names and separates shapes", "[compiler]") {
  auto a = identitiesOf(dense("first_", 8, 12, 5));
  auto b = identitiesOf(dense("other_", 8, 12, 5));
  auto wider = identitiesOf(dense("first_", 8, 12, 7));
  auto half = identitiesOf(dense("first_", 8, 12, 5, DType::F16));
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  REQUIRE(wider.size() == 1);
  REQUIRE(half.size() == 1);

  CHECK(a[0].signature == b[0].signature);
  CHECK(a[0].shapes == b[0].shapes);
  CHECK(a[0].signature.find("first_") == std::string::npos);
  CHECK(a[0].signature.find("matmul") != std::string::npos);

  CHECK(wider[0].signature == a[0].signature);
  CHECK(wider[0].shapes != a[0].shapes);
  CHECK(half[0].signature != a[0].signature);

  CHECK(a[0].summary.find("contraction") == 0);
  INFO(a[0].summary);
  CHECK(a[0].summary.find("12x5") != std::string::npos);
}

TEST_CASE("tuning keys carry the target fingerprint and kiln's version", "[compiler]") {
  codegen::CpuTarget cpu = codegen::hostCpuTarget();
  auto id = identitiesOf(dense("", 4, 4, 4)).at(0);
  tuning::TuningKey key = tuning::tuningKey(id, tuning::targetFingerprint(cpu));
  CHECK(key.kilnVersion == kilnVersion());
  CHECK(key.target.find(cpu.cpuName) != std::string::npos);

  codegen::CpuTarget fewerCores = cpu;
  fewerCores.cores = cpu.cores + 1;
  CHECK(tuning::targetFingerprint(fewerCores) != key.target);

  auto sm90 = codegen::gpuTargetNamed("sm_90a");
  REQUIRE(sm90);
  std::string withCudnn = tuning::targetFingerprint(*sm90, {"13000", "ptxas 13.0", "9.10.2"});
  std::string otherCudnn = tuning::targetFingerprint(*sm90, {"13000", "ptxas 13.0", "9.11.0"});
  CHECK(withCudnn.find("sm_90a") != std::string::npos);
  CHECK(withCudnn != otherCudnn);
}

} // namespace
} // namespace kiln::test
