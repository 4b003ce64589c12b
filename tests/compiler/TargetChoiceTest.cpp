// chooseTarget: the one choice of machine that compile() makes and that tools lowering as
// compile() does (kiln.groups in Python) share: what it picks for each target kind, its
// fingerprint, and that compile() reports the same choice, error and fallback.
#include "CompileTestUtil.h"

#include "compiler/Devices.h"
#include "compiler/GpuCompile.h"
#include "compiler/tuning/TuningKeys.h"

namespace kiln::test {
namespace {

TargetChoice choiceFor(TargetKind kind, std::string gpuArch = "") {
  CompileOptions options;
  options.target = kind;
  options.gpuArch = std::move(gpuArch);
  Expected<TargetChoice> choice = chooseTarget(options);
  REQUIRE(choice.has_value());
  return std::move(*choice);
}

TEST_CASE("chooseTarget picks the CPU and the simulator from the options alone", "[compiler]") {
  TargetChoice cpu = choiceFor(TargetKind::Cpu);
  CHECK(cpu.kind == TargetKind::Cpu);
  REQUIRE(std::holds_alternative<codegen::CpuTarget>(cpu.target));
  CHECK(cpu.fingerprint.get() == tuning::targetFingerprint(codegen::hostCpuTarget()));
  CHECK(cpu.fallbackReason.empty());
  CHECK(!cpu.cudaDevice);

  TargetChoice sim = choiceFor(TargetKind::Sim);
  CHECK(sim.kind == TargetKind::Sim);
  REQUIRE(std::holds_alternative<codegen::GpuTarget>(sim.target));
  const auto &gpu = std::get<codegen::GpuTarget>(sim.target);
  CHECK(gpu.archName() == kDefaultGpuArch);
  CHECK(sim.fingerprint.get() == compiler::simGpuFingerprint(gpu));
  CHECK(std::get<codegen::GpuTarget>(choiceFor(TargetKind::Sim, "sm_80").target).archName() ==
        "sm_80");

  CompileOptions bad;
  bad.target = TargetKind::Sim;
  bad.gpuArch = "sm_70";
  Expected<TargetChoice> refused = chooseTarget(bad);
  REQUIRE_FALSE(refused.has_value());
  CHECK_THAT(refused.error().message(), Catch::StartsWith("unknown GPU architecture 'sm_70'"));
}

TEST_CASE("chooseTarget takes the GPU for cuda and auto when there is one, as compile() does",
          "[compiler]") {
  CompileCase c("target_choice");
  Tensor x = c.input("x", {2, 3});
  c.output("y", x + x);
  REQUIRE(c.graph().finalize());
  CompileOptions cuda, automatic;
  cuda.target = TargetKind::Cuda;
  automatic.target = TargetKind::Auto;
  Expected<TargetChoice> cudaChoice = chooseTarget(cuda);
  TargetChoice autoChoice = chooseTarget(automatic).value();
  if (compiler::cudaDevice()) {
    REQUIRE(cudaChoice.has_value());
    CHECK(cudaChoice->kind == TargetKind::Cuda);
    CHECK(cudaChoice->cudaDevice.has_value());
    CHECK(autoChoice.kind == TargetKind::Cuda);
    return;
  }
  // No GPU: cuda is compile()'s error, auto the CPU with compile()'s reason.
  REQUIRE_FALSE(cudaChoice.has_value());
  CHECK(cudaChoice.error().code() == ErrorCode::Unavailable);
  auto refused = compile(c.graph().ir(), cuda);
  REQUIRE_FALSE(refused.has_value());
  CHECK(cudaChoice.error().str() == refused.error().str());
  CHECK(autoChoice.kind == TargetKind::Cpu);
  CompileReport report;
  REQUIRE(compile(c.graph().ir(), automatic, &report).has_value());
  CHECK_THAT(autoChoice.fallbackReason, Catch::StartsWith("no usable GPU ("));
  CHECK(autoChoice.fallbackReason == report.fallbackReason);
}

} // namespace
} // namespace kiln::test
