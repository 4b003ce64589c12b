// kiln.train: the trainer of compiler/training (docs/training.md) on a DSL graph whose
// outputs include the loss: steps on batches of host tensors, the parameters read back.
#include "CompileOptionsArgs.h"
#include "PyGraph.h"
#include "PythonErrors.h"
#include "TensorConversion.h"

#include "compiler/training/Trainer.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

training::OptimizerKind optimizerNamed(const std::string &name) {
  for (auto kind : {training::OptimizerKind::Sgd, training::OptimizerKind::Adam,
                    training::OptimizerKind::AdamW})
    if (name == training::optimizerKindName(kind))
      return kind;
  throw KilnError{Error(
      ErrorCode::InvalidArgument,
      fmt::format("unknown optimizer '{}' (use 'sgd', 'adam' or 'adamw')", name))};
}

} // namespace

void bindTraining(py::module_ &module) {
  py::class_<training::Trainer>(module, "_Trainer")
      .def(
          "step",
          [](training::Trainer &trainer, const py::dict &batch) {
            NamedTensors tensors = namedTensorsOf(batch);
            training::StepResult step = valueOrThrow([&] {
              py::gil_scoped_release release;
              return trainer.step(tensors);
            }());
            py::dict out;
            out["loss"] = step.loss;
            out["step"] = step.stepCount;
            out["skipped"] = step.skipped;
            out["outputs"] = step.outputs.empty() ? py::dict() : buffersOf(step.outputs.front());
            return out;
          },
          py::arg("batch"))
      .def("params", [](const training::Trainer &trainer) {
        return buffersOf(valueOrThrow(trainer.params()));
      })
      .def_property_readonly("step_count", &training::Trainer::stepCount)
      .def_property(
          "learning_rate", &training::Trainer::learningRate,
          [](training::Trainer &trainer, double rate) {
            valueOrThrow(trainer.setLearningRate(rate));
          });

  module.def(
      "_train",
      [](const GraphHandle &graph, const std::string &loss, const std::string &optimizer,
         double learningRate, double momentum, bool nesterov, double beta1, double beta2,
         double epsilon, std::optional<double> weightDecay, std::optional<double> clipGlobalNorm,
         const std::string &target, const std::string &precision) {
        if (!graph->dsl)
          throw KilnError{Error(ErrorCode::InvalidArgument,
                                "kiln.train needs a graph built with the DSL (a parsed graph "
                                "has no parameter values to start from)")};
        valueOrThrow(graph->finalize());
        training::TrainingOptions options;
        options.lossOutput = loss;
        options.optimizer.kind = optimizerNamed(optimizer);
        options.optimizer.learningRate = learningRate;
        options.optimizer.momentum = momentum;
        options.optimizer.nesterov = nesterov;
        options.optimizer.beta1 = beta1;
        options.optimizer.beta2 = beta2;
        options.optimizer.epsilon = epsilon;
        // AdamW's decoupled decay defaults to 0.01 (OptimizerOptions::adamW), the others' to 0.
        options.optimizer.weightDecay =
            weightDecay.value_or(options.optimizer.kind == training::OptimizerKind::AdamW ? 0.01
                                                                                          : 0.0);
        options.clipGlobalNorm = clipGlobalNorm;
        options.compile = compileOptionsOf(target, precision, "llvm", "");
        std::optional<Expected<training::Trainer>> trainer;
        {
          py::gil_scoped_release release;
          trainer.emplace(training::Trainer::create(*graph->dsl, std::move(options)));
        }
        return valueOrThrow(std::move(*trainer));
      },
      py::arg("graph"), py::arg("loss"), py::arg("optimizer"), py::arg("learning_rate"),
      py::arg("momentum"), py::arg("nesterov"), py::arg("beta1"), py::arg("beta2"),
      py::arg("epsilon"), py::arg("weight_decay"), py::arg("clip_global_norm"), py::arg("target"),
      py::arg("precision"));
}

} // namespace kiln::python
