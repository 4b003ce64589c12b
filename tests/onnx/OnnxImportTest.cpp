// The ONNX importer on models built in memory: values, initializers of every dtype, names,
// folding, input shapes, and the errors of models it cannot or must not import.
#include "frontend/Evaluate.h"
#include "frontend/onnx/ConverterRegistry.h"
#include "frontend/onnx/Import.h"
#include "tests/frontend/TempDir.h"
#include "tests/onnx/OnnxModelBuilder.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <onnx/defs/schema.h>

#include <sys/stat.h>

#include <fstream>

namespace kiln {
namespace {

using test::OnnxModelBuilder;
constexpr int32_t kFloat = ::onnx::TensorProto_DataType_FLOAT;
constexpr int32_t kInt64 = ::onnx::TensorProto_DataType_INT64;

HostTensor int64s(std::vector<int64_t> shape, std::vector<int64_t> values) {
  HostTensor tensor(DType::I64, std::move(shape));
  std::copy(values.begin(), values.end(), tensor.as<int64_t>().begin());
  return tensor;
}

std::string errorText(const Expected<std::unique_ptr<Graph>> &imported) {
  REQUIRE_FALSE(imported);
  return imported.error().str();
}

TEST_CASE("a Gemm + Relu model computes its definition, with its weights as frozen params") {
  OnnxModelBuilder builder;
  builder.input("x", kFloat, {int64_t{2}, int64_t{3}});
  Rng rng(7);
  HostTensor weight = HostTensor::randomNormal(DType::F32, {4, 3}, rng);
  HostTensor bias = HostTensor::randomNormal(DType::F32, {4}, rng);
  builder.initializer("fc.weight", weight, kFloat);
  builder.initializer("onnx::Gemm_7", bias, kFloat);
  auto &gemm = builder.node("Gemm", {"x", "fc.weight", "onnx::Gemm_7"}, {"h"}, "fc");
  OnnxModelBuilder::attr(gemm, "transB", int64_t{1});
  builder.node("Relu", {"h"}, {"y"});
  builder.output("y", kFloat, {int64_t{2}, int64_t{4}});

  auto graph = onnx::importModelFromBytes(builder.bytes());
  REQUIRE(graph);
  // ONNX names stay (mapped to identifiers); weights are frozen parameters.
  REQUIRE((*graph)->paramValues().count("fc.weight") == 1);
  REQUIRE((*graph)->paramValues().count("onnx__Gemm_7") == 1);
  CHECK_FALSE((*graph)->isTrainable("fc.weight"));
  HostTensor x = HostTensor::randomNormal(DType::F32, {2, 3}, rng);
  auto outputs = evaluate(**graph, {{"x", x}});
  REQUIRE(outputs);
  const HostTensor &y = outputs->at("y");
  REQUIRE(y.shape() == std::vector<int64_t>{2, 4});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      double sum = bias.getDouble(j);
      for (int64_t k = 0; k < 3; ++k)
        sum += x.getDouble(i * 3 + k) * weight.getDouble(j * 3 + k);
      CHECK(y.getDouble(i * 4 + j) == Approx(std::max(sum, 0.0)).epsilon(1e-6));
    }

  onnx::ImportOptions trainable;
  trainable.trainableParams = true;
  auto graph2 = onnx::importModelFromBytes(builder.bytes(), trainable);
  REQUIRE(graph2);
  CHECK((*graph2)->isTrainable("fc.weight"));
}

TEST_CASE("initializers of every dtype, in raw_data and in the typed fields, keep their values") {
  struct Case {
    DType dtype;
    int32_t onnxType;
    std::vector<double> values;
  };
  const std::vector<Case> cases = {
      {DType::F32, ::onnx::TensorProto_DataType_FLOAT, {1.5, -2.25, 3e-8}},
      {DType::F64, ::onnx::TensorProto_DataType_DOUBLE, {1.0 / 3.0, -7.0, 1e300}},
      {DType::F16, ::onnx::TensorProto_DataType_FLOAT16, {0.5, -65504.0, 0.099975586}},
      {DType::BF16, ::onnx::TensorProto_DataType_BFLOAT16, {1.0, -3.140625, 256.0}},
      {DType::I64, kInt64, {-9007199254740991.0, 0, 42}},
      {DType::I32, ::onnx::TensorProto_DataType_INT32, {-2147483648.0, 7, 2147483647.0}},
      {DType::I8, ::onnx::TensorProto_DataType_INT8, {-128, 0, 127}},
      {DType::Bool, ::onnx::TensorProto_DataType_BOOL, {1, 0, 1}},
  };
  for (const Case &c : cases) {
    for (bool raw : {true, false}) {
      CAPTURE(dtypeName(c.dtype), raw);
      HostTensor value = HostTensor::fromDoubles(c.dtype, {3}, c.values);
      OnnxModelBuilder builder;
      auto &tensor = builder.initializer("t", value, c.onnxType);
      if (!raw) {
        tensor.clear_raw_data();
        for (int64_t i = 0; i < 3; ++i) {
          switch (c.dtype) {
          case DType::F32: tensor.add_float_data(static_cast<float>(c.values[i])); break;
          case DType::F64: tensor.add_double_data(c.values[i]); break;
          case DType::I64: tensor.add_int64_data(value.as<int64_t>()[i]); break;
          case DType::F16:
          case DType::BF16: {
            uint16_t bits;
            std::memcpy(&bits, value.bytes().data() + 2 * i, 2);
            tensor.add_int32_data(bits);
            break;
          }
          default: tensor.add_int32_data(static_cast<int32_t>(c.values[i]));
          }
        }
      }
      builder.node("Identity", {"t"}, {"y"});
      builder.output("y", c.onnxType, {int64_t{3}});
      auto graph = onnx::importModelFromBytes(builder.bytes());
      REQUIRE(graph);
      // Floating-point initializers are parameters; the others fold into constants.
      CHECK((*graph)->paramValues().count("t") == (isFloatingPoint(c.dtype) ? 1u : 0u));
      auto outputs = evaluate(**graph, {});
      REQUIRE(outputs);
      const HostTensor &y = outputs->at("y");
      REQUIRE(y.dtype() == c.dtype);
      CHECK(std::vector<uint8_t>(y.bytes().begin(), y.bytes().end()) ==
            std::vector<uint8_t>(value.bytes().begin(), value.bytes().end()));
    }
  }
}

TEST_CASE("an initializer whose data disagrees with its dims or type is a clear error") {
  OnnxModelBuilder builder;
  auto &tensor = builder.initializer("w", HostTensor(DType::F32, {2, 2}), kFloat);
  tensor.set_raw_data(std::string(12, '\0')); // 3 floats for 4 elements
  builder.node("Identity", {"w"}, {"y"});
  builder.output("y", kFloat, {int64_t{2}, int64_t{2}});
  std::string text = errorText(onnx::importModelFromBytes(builder.bytes()));
  CHECK_THAT(text, Catch::Contains("'w'") && Catch::Contains("12 bytes"));

  OnnxModelBuilder unsigned8;
  auto &u8 = unsigned8.initializer("q", HostTensor(DType::I8, {2}),
                                   ::onnx::TensorProto_DataType_UINT8);
  (void)u8;
  unsigned8.node("Identity", {"q"}, {"y"});
  unsigned8.output("y", ::onnx::TensorProto_DataType_UINT8, {int64_t{2}});
  CHECK_THAT(errorText(onnx::importModelFromBytes(unsigned8.bytes())),
             Catch::Contains("UINT8"));
}

TEST_CASE("Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds into one reshape") {
  OnnxModelBuilder builder;
  builder.input("x", kFloat, {int64_t{2}, int64_t{3}, int64_t{4}});
  builder.initializer("zero", int64s({}, {0}), kInt64);
  builder.initializer("axes", int64s({1}, {0}), kInt64);
  builder.initializer("minus_one", int64s({1}, {-1}), kInt64);
  builder.node("Shape", {"x"}, {"shape"});
  builder.node("Gather", {"shape", "zero"}, {"batch"});
  builder.node("Unsqueeze", {"batch", "axes"}, {"batch1"});
  auto &concat = builder.node("Concat", {"batch1", "minus_one"}, {"target"});
  OnnxModelBuilder::attr(concat, "axis", int64_t{0});
  builder.node("Reshape", {"x", "target"}, {"y"});
  builder.output("y", kFloat, {std::string(""), std::string("")});
  auto graph = onnx::importModelFromBytes(builder.bytes());
  REQUIRE(graph);
  const ir::Graph &ir = (*graph)->ir();
  REQUIRE(ir.numNodes() == 1);
  CHECK(ir.nodes()[0]->kind() == ir::OpKind::Reshape);
  CHECK(ir.outputs()[0].value->type().shape == Shape{2, 12});
}

TEST_CASE("Flatten's axis counts from the rank when negative, and may be the rank") {
  for (auto [axis, expected] : {std::pair<int64_t, Shape>{-1, {6, 4}}, {0, {1, 24}}, {3, {24, 1}},
                                {-3, {1, 24}}}) {
    CAPTURE(axis);
    OnnxModelBuilder builder;
    builder.input("x", kFloat, {int64_t{2}, int64_t{3}, int64_t{4}});
    OnnxModelBuilder::attr(builder.node("Flatten", {"x"}, {"y"}), "axis", axis);
    builder.output("y", kFloat, {expected[0], expected[1]});
    auto graph = onnx::importModelFromBytes(builder.bytes());
    REQUIRE(graph);
    CHECK((*graph)->ir().outputs()[0].value->type().shape == expected);
  }
}

TEST_CASE("open input dims without a name need shapes, and every one is listed") {
  OnnxModelBuilder builder;
  builder.input("x", kFloat, {std::string("batch"), int64_t{3}});
  builder.input("y", kFloat, {std::string(""), int64_t{3}});
  builder.input("v", kFloat, {std::string(""), std::string("")});
  builder.node("Add", {"x", "y"}, {"z"});
  builder.output("z", kFloat, {std::string(""), int64_t{3}});
  std::string text = errorText(onnx::importModelFromBytes(builder.bytes()));
  // x's dim is named: a size symbol, not an error.
  CHECK_THAT(text, Catch::Contains("input 'y' [?,3]") && Catch::Contains("input 'v' [?,?]") &&
                       !Catch::Contains("input 'x'") && Catch::Contains("--shape"));
  builder = OnnxModelBuilder();
  builder.input("x", kFloat, {std::string("batch"), int64_t{3}});
  builder.input("y", kFloat, {std::string(""), int64_t{3}});
  builder.node("Add", {"x", "y"}, {"z"});
  builder.output("z", kFloat, {std::string(""), int64_t{3}});

  onnx::ImportOptions options;
  options.inputShapes = {{"x", {5, 3}}, {"y", {5, 3}}};
  auto graph = onnx::importModelFromBytes(builder.bytes(), options);
  REQUIRE(graph);
  CHECK((*graph)->ir().outputs()[0].value->type().shape == Shape{5, 3});

  options.inputShapes = {{"x", {5, 4}}, {"y", {5, 3}}, {"w", {1}}};
  text = errorText(onnx::importModelFromBytes(builder.bytes(), options));
  CHECK_THAT(text, Catch::Contains("dim 1 is 3 in the model, given as 4") &&
                       Catch::Contains("'w', which is not an input"));
}

TEST_CASE("a dim_param becomes a size symbol, and one import runs every size in its range") {
  // docs/dynamic-shapes.md: the batch of a model exported with a dynamic axis.
  OnnxModelBuilder builder;
  builder.input("images", kFloat, {std::string("batch.size"), int64_t{2}, int64_t{3}, int64_t{3}});
  Rng rng(11);
  HostTensor weight = HostTensor::randomNormal(DType::F32, {5, 18}, rng);
  builder.initializer("fc.weight", weight, kFloat);
  OnnxModelBuilder::attr(builder.node("Flatten", {"images"}, {"flat"}), "axis", int64_t{1});
  builder.initializer("rows", int64s({2}, {0, 18}), kInt64);
  builder.node("Reshape", {"flat", "rows"}, {"again"}); // 0 copies the symbolic batch
  OnnxModelBuilder::attr(builder.node("Gemm", {"again", "fc.weight"}, {"h"}), "transB", int64_t{1});
  builder.node("Relu", {"h"}, {"y"});
  builder.output("y", kFloat, {std::string("batch.size"), int64_t{5}});

  auto graph = onnx::importModelFromBytes(builder.bytes());
  REQUIRE(graph);
  const ir::Graph &ir = (*graph)->ir();
  CHECK(ir.symbols() == std::vector<ir::SizeSymbol>{{"batch_size", 1, 64}});
  CHECK(ir.inputs()[0]->type().str() == "f32[batch_size,2,3,3]");
  CHECK(ir.outputs()[0].value->type().str() == "f32[batch_size,5]");
  for (int64_t batch : {1, 7, 64}) {
    CAPTURE(batch);
    HostTensor images = HostTensor::randomNormal(DType::F32, {batch, 2, 3, 3}, rng);
    auto outputs = evaluate(**graph, {{"images", images}});
    REQUIRE(outputs);
    const HostTensor &y = outputs->at("y");
    REQUIRE(y.shape() == std::vector<int64_t>{batch, 5});
    for (int64_t i = 0; i < batch; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double sum = 0;
        for (int64_t k = 0; k < 18; ++k)
          sum += images.getDouble(i * 18 + k) * weight.getDouble(j * 18 + k);
        CHECK(y.getDouble(i * 5 + j) == Approx(std::max(sum, 0.0)).epsilon(1e-6).margin(1e-12));
      }
  }

  // A range by dim_param name; a given shape pins the input instead.
  onnx::ImportOptions options;
  options.dimRanges = {{"batch.size", {2, 9}}};
  auto ranged = onnx::importModelFromBytes(builder.bytes(), options);
  REQUIRE(ranged);
  CHECK((*ranged)->ir().symbols() == std::vector<ir::SizeSymbol>{{"batch_size", 2, 9}});
  options.inputShapes = {{"images", {4, 2, 3, 3}}};
  auto pinned = onnx::importModelFromBytes(builder.bytes(), options);
  REQUIRE(pinned);
  CHECK_FALSE((*pinned)->ir().isSymbolic());
  options = {};
  options.dimRanges = {{"batch.size", {5, 2}}};
  CHECK_THAT(errorText(onnx::importModelFromBytes(builder.bytes(), options)),
             Catch::Contains("dim 'batch.size' has the empty range [5, 2]"));
}

TEST_CASE("a converter that reads a symbolic dim as a number refuses it, naming the symbol") {
  using Dims = std::vector<std::variant<int64_t, std::string>>;
  auto refused = [](const std::string &op, std::vector<std::string> inputs, int32_t type, Dims dims,
                    std::function<void(OnnxModelBuilder &)> extra = {}) {
    OnnxModelBuilder builder;
    builder.input("x", kFloat, {std::string("batch"), int64_t{3}});
    if (extra)
      extra(builder);
    builder.node(op, std::move(inputs), {"y"});
    builder.output("y", type, std::move(dims));
    return errorText(onnx::importModelFromBytes(builder.bytes()));
  };
  std::string expected = "reads dim 0 of f32[batch,3] as a number, and that dim is the size batch";
  CHECK_THAT(refused("Squeeze", {"x"}, kFloat, {std::string(""), std::string("")}),
             Catch::Contains(expected));
  auto shapeInput = [](std::vector<int64_t> values) {
    return [values](OnnxModelBuilder &builder) {
      builder.initializer("shape", int64s({static_cast<int64_t>(values.size())}, values), kInt64);
    };
  };
  CHECK_THAT(
      refused("Expand", {"x", "shape"}, kFloat, {std::string(""), int64_t{3}}, shapeInput({1, 3})),
      Catch::Contains(expected));
  // Reshape copying the symbolic dim beside a -1 cannot infer both.
  CHECK_THAT(refused("Reshape", {"x", "shape"}, kFloat,
                     {std::string(""), std::string(""), int64_t{1}}, shapeInput({0, -1, 1})),
             Catch::Contains(expected));
}

TEST_CASE("shape arithmetic on a symbolic batch folds into symbolic sizes at import") {
  // PyTorch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape, here
  // beside a target computed with Mul, a Slice of static sizes, and a shape as an output.
  OnnxModelBuilder builder;
  builder.input("x", kFloat, {std::string("batch"), int64_t{3}, int64_t{4}});
  builder.initializer("zero", int64s({}, {0}), kInt64);
  builder.initializer("first", int64s({1}, {0}), kInt64);
  builder.initializer("rest", int64s({1}, {-1}), kInt64);
  builder.initializer("three", int64s({}, {3}), kInt64);
  builder.initializer("start", int64s({1}, {2}), kInt64);
  builder.initializer("stop", int64s({1}, {3}), kInt64);
  builder.node("Shape", {"x"}, {"shape"});
  builder.node("Gather", {"shape", "zero"}, {"rows"});
  builder.node("Unsqueeze", {"rows", "first"}, {"rows1"});
  OnnxModelBuilder::attr(builder.node("Concat", {"rows1", "rest"}, {"flat_shape"}), "axis",
                         int64_t{0});
  builder.node("Reshape", {"x", "flat_shape"}, {"flat"});
  builder.node("Mul", {"rows", "three"}, {"tripled"});
  builder.node("Unsqueeze", {"tripled", "first"}, {"tripled1"});
  builder.node("Slice", {"shape", "start", "stop"}, {"last"}); // [4]: static
  OnnxModelBuilder::attr(builder.node("Concat", {"tripled1", "last"}, {"split_shape"}), "axis",
                         int64_t{0});
  builder.node("Reshape", {"x", "split_shape"}, {"split"});
  builder.node("Shape", {"flat"}, {"dims"});
  builder.output("flat", kFloat, {std::string("batch"), int64_t{12}});
  builder.output("split", kFloat, {std::string(""), int64_t{4}});
  builder.output("dims", kInt64, {int64_t{2}});

  auto graph = onnx::importModelFromBytes(builder.bytes());
  INFO((graph ? std::string() : graph.error().str()));
  REQUIRE(graph);
  const ir::Graph &ir = (*graph)->ir();
  CHECK(ir.outputs()[0].value->type().str() == "f32[batch,12]");
  CHECK(ir.outputs()[1].value->type().str() == "f32[batch*3,4]");
  Rng rng(5);
  for (int64_t batch : {1, 6}) {
    CAPTURE(batch);
    HostTensor x = HostTensor::randomNormal(DType::F32, {batch, 3, 4}, rng);
    auto outputs = evaluate(**graph, {{"x", x}});
    REQUIRE(outputs);
    CHECK(outputs->at("flat").shape() == Shape{batch, 12});
    CHECK(outputs->at("split").shape() == Shape{3 * batch, 4});
    CHECK(outputs->at("flat").toDoubles() == x.toDoubles());
    CHECK(outputs->at("dims").toDoubles() == std::vector<double>{static_cast<double>(batch), 12});
  }

  // Sizes meeting a tensor computed at run time become a tensor: constants and symbol_size.
  OnnxModelBuilder mixed;
  mixed.input("x", kFloat, {std::string("batch"), int64_t{3}});
  mixed.input("offset", kInt64, {int64_t{2}});
  mixed.node("Shape", {"x"}, {"shape"});
  mixed.node("Add", {"shape", "offset"}, {"y"});
  mixed.output("y", kInt64, {int64_t{2}});
  auto mixedGraph = onnx::importModelFromBytes(mixed.bytes());
  INFO((mixedGraph ? std::string() : mixedGraph.error().str()));
  REQUIRE(mixedGraph);
  auto sums = evaluate(**mixedGraph,
                       {{"x", HostTensor(DType::F32, {5, 3})}, {"offset", int64s({2}, {10, 20})}});
  REQUIRE(sums);
  CHECK(sums->at("y").toDoubles() == std::vector<double>{15, 23});

  // Sizes are integers: a Cast of them to float does not fold, and says so.
  OnnxModelBuilder floats;
  floats.input("x", kFloat, {std::string("batch"), int64_t{3}});
  floats.node("Shape", {"x"}, {"shape"});
  OnnxModelBuilder::attr(floats.node("Cast", {"shape"}, {"y"}), "to", int64_t{kFloat});
  floats.output("y", kFloat, {int64_t{2}});
  CHECK_THAT(errorText(onnx::importModelFromBytes(floats.bytes())),
             Catch::Contains("a Cast of symbolic sizes to a non-integer type"));
}

TEST_CASE("opsets outside 7..17 are refused by number; an opset 13 model is converted") {
  for (int64_t opset : {5, 18}) {
    OnnxModelBuilder builder(opset);
    builder.input("x", kFloat, {int64_t{2}});
    builder.node("Relu", {"x"}, {"y"});
    builder.output("y", kFloat, {int64_t{2}});
    std::string text = errorText(onnx::importModelFromBytes(builder.bytes()));
    CHECK_THAT(text, Catch::Contains(fmt::format("opset {}", opset)) &&
                         Catch::Contains("opsets 7 to 17"));
  }
  OnnxModelBuilder builder(13);
  builder.input("x", kFloat, {int64_t{2}, int64_t{3}});
  builder.initializer("axes", int64s({1}, {1}), kInt64);
  auto &sum = builder.node("ReduceSum", {"x", "axes"}, {"y"});
  OnnxModelBuilder::attr(sum, "keepdims", int64_t{0});
  builder.output("y", kFloat, {int64_t{2}});
  auto graph = onnx::importModelFromBytes(builder.bytes());
  REQUIRE(graph);
  HostTensor x = HostTensor::fromDoubles(DType::F32, {2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6});
  auto outputs = evaluate(**graph, {{"x", x}});
  REQUIRE(outputs);
  CHECK(outputs->at("y").toDoubles() == std::vector<double>{6, 15});
}

TEST_CASE("every unsupported node and attribute is listed in one error") {
  OnnxModelBuilder builder;
  auto *custom = builder.model().add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  builder.input("x", kFloat, {int64_t{1}, int64_t{1}, int64_t{8}, int64_t{8}});
  auto &frobnicate = builder.node("Frobnicate", {"x"}, {"a"}, "frob");
  frobnicate.set_domain("com.example");
  builder.node("Relu", {"x"}, {"b"}, "relu");
  auto &pool = builder.node("MaxPool", {"b"}, {"c"}, "pool");
  OnnxModelBuilder::attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxModelBuilder::attr(pool, "dilations", std::vector<int64_t>{2, 2});
  OnnxModelBuilder::attr(pool, "storage_order", int64_t{1});
  builder.node("Hardmax", {"c"}, {"d"}, "hardmax");
  const std::vector<test::OnnxDim> unknown4(4, std::string(""));
  builder.output("a", kFloat, unknown4);
  builder.output("d", kFloat, unknown4);
  std::string text = errorText(onnx::importModelFromBytes(builder.bytes()));
  CHECK_THAT(text, Catch::Contains("3 nodes cannot be imported"));
  CHECK_THAT(text, Catch::Contains("Frobnicate 'frob'") && Catch::Contains("com.example"));
  CHECK_THAT(text, Catch::Contains("MaxPool 'pool'") && Catch::Contains("dilations = [2,2]") &&
                       Catch::Contains("storage_order = 1"));
  CHECK_THAT(text, Catch::Contains("Hardmax 'hardmax'"));
}

TEST_CASE("bytes that are not a whole ONNX model are errors, never crashes") {
  OnnxModelBuilder builder;
  builder.input("x", kFloat, {int64_t{2}, int64_t{3}});
  builder.initializer("w", HostTensor(DType::F32, {3, 2}), kFloat);
  builder.node("MatMul", {"x", "w"}, {"y"});
  builder.output("y", kFloat, {int64_t{2}, int64_t{2}});
  std::string bytes = builder.bytes();
  REQUIRE(onnx::importModelFromBytes(bytes));
  CHECK_THAT(errorText(onnx::importModelFromBytes("not a model")),
             Catch::Contains("not an ONNX model"));
  size_t errors = 0;
  for (size_t length = 0; length < bytes.size(); ++length) {
    auto imported = onnx::importModelFromBytes(bytes.substr(0, length));
    if (!imported) {
      ++errors;
      CHECK_THAT(imported.error().message(), Catch::Contains("ONNX model '<memory>'"));
    }
  }
  CHECK(errors > bytes.size() / 2);
}

TEST_CASE("external data is read beside the model, and only from regular files inside its directory") {
  testing::TempDir dir;
  Rng rng(3);
  HostTensor weight = HostTensor::randomNormal(DType::F32, {3, 2}, rng);
  {
    std::ofstream out(dir.file("weights.bin"), std::ios::binary);
    out << "pad!"; // the tensor starts at offset 4
    out.write(reinterpret_cast<const char *>(weight.bytes().data()),
              static_cast<std::streamsize>(weight.byteSize()));
  }
  REQUIRE(::mkfifo(dir.file("fifo.bin").c_str(), 0600) == 0);
  auto modelWithLocation = [&](const std::string &location) {
    OnnxModelBuilder builder;
    builder.input("x", kFloat, {int64_t{2}, int64_t{3}});
    auto &tensor = builder.initializer("w", weight, kFloat);
    tensor.clear_raw_data();
    tensor.set_data_location(::onnx::TensorProto_DataLocation_EXTERNAL);
    for (auto [key, value] : {std::pair<std::string, std::string>{"location", location},
                              {"offset", "4"},
                              {"length", std::to_string(weight.byteSize())}}) {
      auto *entry = tensor.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
    builder.node("MatMul", {"x", "w"}, {"y"});
    builder.output("y", kFloat, {int64_t{2}, int64_t{2}});
    std::string path = dir.file("model.onnx");
    std::ofstream(path, std::ios::binary) << builder.bytes();
    return onnx::importModel(path);
  };
  auto graph = modelWithLocation("weights.bin");
  REQUIRE(graph);
  const HostTensor &loaded = (*graph)->paramValues().at("w");
  CHECK(std::equal(loaded.bytes().begin(), loaded.bytes().end(), weight.bytes().begin()));
  CHECK_THAT(errorText(modelWithLocation("../weights.bin")),
             Catch::Contains("leaves the model's directory"));
  CHECK_THAT(errorText(modelWithLocation(dir.file("weights.bin"))),
             Catch::Contains("relative to the model's directory"));
  CHECK_THAT(errorText(modelWithLocation("fifo.bin")),
             Catch::Contains("it is a FIFO, not a regular file"));
  CHECK_THAT(errorText(modelWithLocation("missing.bin")),
             Catch::Contains("missing.bin': No such file or directory"));
  CHECK_THAT(errorText(onnx::importModel(dir.path().string())),
             Catch::Contains("it is a directory, not a regular file"));
}

TEST_CASE("ONNX names become kiln identifiers") {
  CHECK(onnx::kilnName("conv1.weight") == "conv1.weight");
  CHECK(onnx::kilnName("onnx::Conv_12") == "onnx__Conv_12");
  CHECK(onnx::kilnName("125") == "_125");
  CHECK(onnx::kilnName("/layer1/Relu_output_0") == "_layer1_Relu_output_0");
  CHECK(onnx::kilnName("") == "_");
}

TEST_CASE("the converter registry is sorted and follows the opset-17 schemas") {
  auto rows = onnx::converters();
  REQUIRE(rows.size() > 50);
  for (size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(rows[i].opType);
    if (i > 0)
      CHECK(std::pair(rows[i - 1].domain, rows[i - 1].opType) <
            std::pair(rows[i].domain, rows[i].opType));
    const ::onnx::OpSchema *schema = ::onnx::OpSchemaRegistry::Schema(
        std::string(rows[i].opType), static_cast<int>(onnx::kTargetOpset),
        std::string(rows[i].domain));
    REQUIRE(schema != nullptr);
    CHECK(schema->since_version() == rows[i].sinceVersion);
    CHECK(onnx::findConverter(rows[i].domain, rows[i].opType) == &rows[i]);
  }
  CHECK(onnx::findConverter("", "NoSuchOp") == nullptr);
  CHECK(onnx::findConverter("ai.onnx", "Conv") == onnx::findConverter("", "Conv"));
}

} // namespace
} // namespace kiln
