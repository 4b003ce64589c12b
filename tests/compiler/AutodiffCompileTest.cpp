// The backward graphs of a small MLP and a depthwise block compiled for the CPU: autodiff builds
// only ops every backend runs, and the compiled gradients match the fp64
// reference within f32's tolerance (support/Tolerance.h: rel 1e-4, abs 1e-5).
#include "compiler/CompileTestUtil.h"

#include "frontend/Autodiff.h"
#include "frontend/Ops.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("an MLP's gradients compile for the CPU and match the reference", "[autodiff][compile]") {
  CompileCase c("mlp_backward");
  // Odd sizes: batch 5, 7 features, 9 hidden units, 3 classes.
  Tensor x = c.input("x", {5, 7});
  Tensor labels = c.input("labels", {5, 1}, DType::I64, Values::indices(3, true));
  Tensor w1 = c.param("w1", {7, 9});
  Tensor b1 = c.param("b1", {9});
  Tensor w2 = c.param("w2", {9, 3});
  Tensor b2 = c.param("b2", {3});
  Tensor hidden = tanh(matmul(x, w1) + b1);
  Tensor logProbabilities = logSoftmax(matmul(hidden, w2) + b2);
  Tensor picked = takeAlongAxis(logProbabilities, labels, 1);
  Tensor loss = -reduceMean(picked, {0, 1});
  std::vector<Tensor> wrt{w1, b1, w2, b2, x};
  std::vector<Tensor> grads = gradients(loss, wrt);
  c.output("loss", loss);
  const char *names[] = {"grad_w1", "grad_b1", "grad_w2", "grad_b2", "grad_x"};
  for (size_t i = 0; i < grads.size(); ++i)
    c.output(names[i], grads[i]);
  CompileOptions options;
  options.target = TargetKind::Cpu;
  NamedTensors outputs = c.check(options);
  CHECK(outputs.size() == 6);
}

TEST_CASE("a depthwise block's gradients compile for the CPU and match the reference",
          "[autodiff][compile]") {
  // 1x1 expand -> relu -> depthwise 3x3 stride 2 (a pooling group, NHWC between the two
  // convolutions) -> a squared loss; the gradients include convolutions of their own.
  CompileCase c("depthwise_backward");
  Tensor x = c.input("x", {2, 4, 9, 7});
  Tensor expand = c.param("expand", {16, 4, 1, 1});
  Tensor depthwise = c.param("depthwise", {16, 1, 3, 3});
  Conv2DOptions options;
  options.stride = {2, 2};
  options.padding = Padding::symmetric(1, 1);
  options.groups = 16;
  Tensor y = conv2d(relu(conv2d(x, expand)), depthwise, options);
  Tensor loss = reduceMean(y * y, {0, 1, 2, 3});
  std::vector<Tensor> wrt{expand, depthwise, x};
  std::vector<Tensor> grads = gradients(loss, wrt);
  c.output("loss", loss);
  c.output("grad_expand", grads[0]);
  c.output("grad_depthwise", grads[1]);
  c.output("grad_x", grads[2]);
  CompileOptions compile;
  compile.target = TargetKind::Cpu;
  c.check(compile);
}
