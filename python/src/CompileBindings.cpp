// kiln.compile and the compiled model: runs on HostBuffers, each stage's text (dump), and
// the per-kernel profile table.
#include "CompileOptionsArgs.h"
#include "PyGraph.h"
#include "TensorConversion.h"

#include "compiler/Compile.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "runtime/ProfileReport.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <map>
#include <sstream>

namespace py = pybind11;

namespace kiln::python {
namespace {

/// A compiled model and what its dumps need: the graph's IR text as it was compiled (the
/// Python graph may grow afterwards) and the options.
struct PyModel {
  std::shared_ptr<CompiledModel> model;
  std::string graphText;
  CompileOptions options;
  CompileReport report;
  /// The schedules forced per group (kiln.compile's `schedules`): every dump names them.
  ForcedSchedules forced;
  std::map<std::string, std::string, std::less<>> dumps;
};

/// The lines every dump of a model with forced schedules starts with, so that the kernel
/// dump (which prints kernels, not schedules) says which schedule made them.
std::string forcedScheduleHeader(const ForcedSchedules &forced) {
  std::string header;
  for (const auto &[groupId, text] : forced)
    header += fmt::format("// group {} schedule: {} (forced)\n", groupId, text);
  return header;
}

/// The stages model.dump names, in pipeline order.
const std::pair<const char *, DumpFlags> kDumpStages[] = {
    {"graph", kDumpGraph}, {"fused", kDumpFused}, {"kernel", kDumpKernel},
    {"llvm", kDumpLlvm},   {"ptx", kDumpPtx},     {"cuda", kDumpCuda},
};

DumpFlags dumpFlagNamed(const std::string &stage) {
  std::string names;
  for (auto [name, flag] : kDumpStages) {
    if (stage == name)
      return flag;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw KilnError{Error(ErrorCode::InvalidArgument,
                        fmt::format("unknown stage '{}' (model.dump knows {})", stage, names))};
}

py::object optionalFloat(const std::optional<double> &value) {
  return value ? py::object(py::float_(*value)) : py::none();
}

py::list profileRows(const PyModel &m, const std::vector<runtime::RunProfile> &profiles) {
  // The CPU's peak is unknown here (measuring its bandwidth takes a while): a host model's
  // rows leave the fractions of peak as None.
  const runtime::DevicePeak *devicePeak = m.model->devicePeak();
  runtime::ProfileSummary summary = runtime::summarizeProfiles(
      profiles, m.model->plan().steps, devicePeak ? *devicePeak : runtime::DevicePeak{});
  py::list rows;
  for (const runtime::KernelProfileRow &row : summary.kernels) {
    py::dict entry;
    entry["step"] = row.step;
    entry["name"] = row.name;
    entry["calls"] = row.calls;
    entry["total_ms"] = row.totalMs;
    entry["mean_ms"] = row.meanMs;
    entry["fraction_of_run"] = row.fractionOfRun;
    entry["bytes_per_call"] = row.bytesPerCall;
    entry["flops_per_call"] = row.flopsPerCall;
    entry["bytes_per_second"] = row.bytesPerSecond;
    entry["flops_per_second"] = row.flopsPerSecond;
    entry["fraction_of_peak_bandwidth"] = optionalFloat(row.fractionOfPeakBandwidth);
    entry["fraction_of_peak_flops"] = optionalFloat(row.fractionOfPeakFlops);
    entry["bound"] = std::string(runtime::boundName(row.bound));
    rows.append(std::move(entry));
  }
  return rows;
}

} // namespace

void bindCompile(py::module_ &module) {
  py::class_<PyModel, std::shared_ptr<PyModel>>(module, "_CompiledModel")
      .def(
          "_run",
          [](const PyModel &m, const py::dict &inputs) {
            NamedTensors tensors = namedTensorsOf(inputs);
            std::optional<Expected<NamedTensors>> outputs;
            {
              py::gil_scoped_release release;
              outputs.emplace(m.model->run(tensors));
            }
            return buffersOf(valueOrThrow(std::move(*outputs)));
          },
          "Runs once: HostBuffers by name in, the outputs' HostBuffers by name out.")
      .def(
          "_profile",
          [](const PyModel &m, const py::dict &inputs, int runs) {
            NamedTensors tensors = namedTensorsOf(inputs);
            std::vector<runtime::RunProfile> profiles(std::max(runs, 1));
            std::optional<Error> failure;
            {
              py::gil_scoped_release release;
              for (runtime::RunProfile &profile : profiles) {
                RunOptions options;
                options.profile = &profile;
                if (auto ran = m.model->run(tensors, options); !ran) {
                  failure = std::move(ran).error();
                  break;
                }
              }
            }
            if (failure)
              throw KilnError{std::move(*failure)};
            return profileRows(m, profiles);
          },
          "Runs `runs` times with profiling: one dict per kernel, slowest first.")
      .def(
          "dump",
          [](PyModel &m, const std::string &stage) -> std::string {
            DumpFlags flag = dumpFlagNamed(stage);
            if (auto cached = m.dumps.find(stage); cached != m.dumps.end())
              return cached->second;
            std::unique_ptr<ir::Graph> graph = valueOrThrow(ir::parseGraph(m.graphText));
            std::ostringstream text;
            CompileOptions options = m.options;
            options.dump = flag;
            options.dumpStream = &text;
            std::optional<Expected<CompiledModel>> recompiled;
            {
              py::gil_scoped_release release;
              recompiled.emplace(compile(*graph, options));
            }
            valueOrThrow(std::move(*recompiled));
            return m.dumps[stage] = forcedScheduleHeader(m.forced) + text.str();
          },
          py::arg("stage"),
          "The text of one compile stage: graph, fused, kernel, llvm, and for GPU targets "
          "ptx and cuda (Triton's .asm). Compiles the model again with that dump on, once.")
      .def_property_readonly("graph_text", [](const PyModel &m) { return m.graphText; },
                             "The graph IR text as it was compiled (kiln.parse_ir reads it).")
      .def_property_readonly("num_kernels", [](const PyModel &m) { return m.model->numKernels(); })
      .def_property_readonly("target", [](const PyModel &m) { return m.report.target; })
      .def_property_readonly(
          "report",
          [](const PyModel &m) {
            py::dict report;
            report["target"] = m.report.target;
            report["fallback_reason"] = m.report.fallbackReason;
            report["num_groups"] = m.report.numGroups;
            report["num_kernels"] = m.report.numKernels;
            report["total_seconds"] = m.report.totalSeconds;
            report["kernel_cache"] = m.report.kernelCache;
            report["tuning"] = m.report.tuning;
            report["warnings"] = m.report.warnings;
            return report;
          },
          "What the compile did (CompileReport).")
      .def_property_readonly("input_names",
                             [](const PyModel &m) {
                               std::vector<std::string> names;
                               for (const auto &binding : m.model->plan().inputs)
                                 names.push_back(binding.name);
                               return names;
                             })
      .def_property_readonly("output_names", [](const PyModel &m) {
        std::vector<std::string> names;
        for (const auto &binding : m.model->plan().outputs)
          names.push_back(binding.name);
        return names;
      });

  module.def(
      "_compile",
      [](const GraphHandle &graph, const std::string &target, const std::string &precision,
         const std::string &backend, const std::string &gpuArch, bool kernelCache,
         const ForcedSchedules &schedules) {
        valueOrThrow(graph->finalize());
        auto m = std::make_shared<PyModel>();
        m->options = compileOptionsOf(target, precision, backend, gpuArch);
        m->options.useKernelCache = kernelCache;
        m->forced = schedules;
        auto forcedUse = std::make_shared<ForcedScheduleUse>();
        forceSchedules(m->options, schedules, forcedUse);
        m->graphText = ir::printGraph(graph->ir());
        std::optional<Expected<CompiledModel>> compiled;
        {
          py::gil_scoped_release release;
          compiled.emplace(compile(graph->ir(), m->options, &m->report));
        }
        m->model = std::make_shared<CompiledModel>(valueOrThrow(std::move(*compiled)));
        checkForcedSchedulesUsed(schedules, *forcedUse);
        // A DSL graph's parameters are bound now; a parsed graph's are passed to each run.
        if (graph->dsl)
          valueOrThrow(m->model->bindParams(graph->dsl->paramValues()));
        return m;
      },
      py::arg("graph"), py::arg("target"), py::arg("precision"), py::arg("backend"),
      py::arg("gpu_arch"), py::arg("kernel_cache"), py::arg("schedules"));
}

} // namespace kiln::python
