// kiln.compile and the compiled model: runs on HostBuffers (and, on the cuda target, CUDA
// tensors in place), each stage's text (dump), and the per-kernel profile table.
#include "CompileOptionsArgs.h"
#include "PyGraph.h"
#include "TensorBorrowing.h"
#include "TensorConversion.h"

#include "compiler/Compile.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "runtime/ProfileReport.h"
#include "runtime/cuda/CudaDevice.h"

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

/// Where the model's kernels run: "cpu", "sim", or "cuda:N" (the GPU's ordinal).
std::string deviceName(const PyModel &m) {
  if (auto *gpu = dynamic_cast<runtime::cuda::CudaDevice *>(m.model->device()))
    return fmt::format("cuda:{}", gpu->properties().ordinal);
  return m.model->device() ? "sim" : "cpu";
}

using DeviceTensors = std::map<std::string, std::shared_ptr<DeviceTensor>>;

/// `tensors` as the addresses a run takes, after checking each is on the model's GPU with
/// the type of the binding it names (`what`: "input" or "output").
std::map<std::string, runtime::DevicePtr, std::less<>>
addressesOf(const PyModel &m, const DeviceTensors &tensors, const char *what) {
  std::string device = deviceName(m);
  std::map<std::string, runtime::DevicePtr, std::less<>> addresses;
  for (const auto &[name, tensor] : tensors) {
    std::string on = fmt::format("cuda:{}", tensor->ordinal);
    if (on != device)
      throw KilnError{Error(ErrorCode::InvalidArgument,
                            fmt::format("{} '{}' is on {}, and the model runs on {}: its kernels "
                                        "cannot use it in place",
                                        what, name, on, device))};
    valueOrThrow(m.model->checkBindingType(name, tensor->dtype, tensor->shape));
    addresses.emplace(name, tensor->address);
  }
  return addresses;
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
          "_run_on_device",
          [](const PyModel &m, const py::dict &inputs, const DeviceTensors &deviceInputs,
             const DeviceTensors &deviceOutputs) {
            NamedTensors tensors = namedTensorsOf(inputs);
            DeviceInputs onDevice;
            onDevice.addresses = addressesOf(m, deviceInputs, "input");
            DeviceOutputs toDevice;
            toDevice.addresses = addressesOf(m, deviceOutputs, "output");
            RunOptions options;
            options.deviceInputs = &onDevice;
            options.deviceOutputs = &toDevice;
            std::optional<Expected<NamedTensors>> outputs;
            {
              py::gil_scoped_release release;
              outputs.emplace(m.model->run(tensors, options));
            }
            return buffersOf(valueOrThrow(std::move(*outputs)));
          },
          py::arg("inputs"), py::arg("device_inputs"), py::arg("device_outputs"),
          "Runs once on a cuda model: host inputs (HostBuffers) and CUDA inputs (DeviceTensors) "
          "by name; the outputs named in device_outputs are written there, the others come "
          "back as HostBuffers by name.")
      .def(
          "_profile",
          [](const PyModel &m, const py::dict &inputs, int runs,
             const DeviceTensors &deviceInputs) {
            NamedTensors tensors = namedTensorsOf(inputs);
            DeviceInputs onDevice;
            onDevice.addresses = addressesOf(m, deviceInputs, "input");
            std::vector<runtime::RunProfile> profiles(std::max(runs, 1));
            std::optional<Error> failure;
            {
              py::gil_scoped_release release;
              // One untimed run first: values derived from the weights (packed weights,
              // transposed filters) are computed once, not in the runs a profile describes.
              if (m.model->plan().derivedBytes > 0) {
                RunOptions options;
                if (!onDevice.addresses.empty())
                  options.deviceInputs = &onDevice;
                if (auto ran = m.model->run(tensors, options); !ran)
                  failure = std::move(ran).error();
              }
              for (runtime::RunProfile &profile : profiles) {
                if (failure)
                  break;
                RunOptions options;
                options.profile = &profile;
                if (!onDevice.addresses.empty())
                  options.deviceInputs = &onDevice;
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
          py::arg("inputs"), py::arg("runs"), py::arg("device_inputs") = DeviceTensors{},
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
      .def_property_readonly("device", &deviceName,
                             "Where the kernels run: \"cpu\", \"sim\" or \"cuda:N\".")
      .def_property_readonly(
          "output_types",
          [](const PyModel &m) {
            py::dict types;
            for (const auto &binding : m.model->plan().outputs) {
              const runtime::PlanBuffer &buffer = m.model->plan().buffers[binding.buffer];
              types[py::str(binding.name)] =
                  py::make_tuple(std::string(dtypeName(buffer.dtype)), buffer.shape);
            }
            return types;
          },
          "{output name: (dtype, shape)}, in the model's output order.")
      .def_property_readonly(
          "report",
          [](const PyModel &m) {
            py::dict report;
            report["target"] = m.report.target;
            report["fallback_reason"] = m.report.fallbackReason;
            report["num_groups"] = m.report.numGroups;
            report["num_kernels"] = m.report.numKernels;
            report["num_prelude_kernels"] = m.report.numPreludeKernels;
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
