// The targets a lowering test case runs on, and LoweringCase::check over them.
#include "LoweringTestUtil.h"
#include "lower/gpu/GpuLoweringTestUtil.h"

#include <cstdlib>
#include <string_view>

namespace kiln::test {

const std::vector<TestTarget> &testTargets() {
  static const std::vector<TestTarget> targets = [] {
    const char *chosen = std::getenv("KILN_LOWERING_TARGETS");
    if (chosen == nullptr || *chosen == '\0')
      return std::vector<TestTarget>{TestTarget::Cpu, TestTarget::Sim};
    std::vector<TestTarget> result;
    std::string_view rest = chosen;
    while (!rest.empty()) {
      std::string_view name = rest.substr(0, rest.find(','));
      rest.remove_prefix(std::min(rest.size(), name.size() + 1));
      if (name == "cpu")
        result.push_back(TestTarget::Cpu);
      else if (name == "sim")
        result.push_back(TestTarget::Sim);
      else
        FAIL("KILN_LOWERING_TARGETS names '" << name << "': use cpu, sim or both");
    }
    return result;
  }();
  return targets;
}

const char *testTargetName(TestTarget target) {
  return target == TestTarget::Cpu ? "cpu" : "sim";
}

NamedTensors runOn(LoweringCase &c, TestTarget target) {
  return target == TestTarget::Cpu ? c.lowered(Executor::Evaluator) : runOnGpu(c);
}

lower::Schedule defaultScheduleOn(TestTarget target, const ir::Graph &graph,
                                  const passes::FusionGroup &group) {
  if (target == TestTarget::Cpu)
    return lower::defaultSchedule(graph, group, testHostTarget());
  return lower::defaultSchedule(graph, group, testGpuTarget());
}

void LoweringCase::check(double toleranceScale) {
  for (TestTarget target : testTargets()) {
    INFO("target " << testTargetName(target));
    if (target == TestTarget::Cpu)
      checkCpu(toleranceScale);
    else
      checkGpu(*this, toleranceScale);
  }
}

} // namespace kiln::test
