// The registry of ONNX converters: one row per op of the default domain at opset 17.
#include "frontend/onnx/ConverterRegistry.h"

#include "frontend/onnx/converters/Converters.h"

#include <algorithm>
#include <array>

namespace kiln::onnx {

namespace {

// Sorted by op type (a test checks the order and each since-version against onnx).
constexpr std::array kConverters = {
    Converter{"", "Abs", 13, convertUnaryOp<abs>, ""},
    Converter{"", "Add", 14, convertBinaryOp<add>, ""},
    Converter{"", "And", 7, convertBinaryOp<logicalAnd>, ""},
    Converter{"", "ArgMax", 13, convertArgMax, "select_last_index = 0 only"},
    Converter{"", "ArgMin", 13, convertArgMin, "select_last_index = 0 only"},
    Converter{"", "AveragePool", 11, convertAveragePool,
              "2-D; ceil_mode with count_include_pad only where no window overhangs"},
    Converter{"", "BatchNormalization", 15, convertBatchNormalization,
              "inference (training_mode = 0)"},
    Converter{"", "Cast", 13, convertCast, "to kiln's dtypes"},
    Converter{"", "Clip", 13, convertClip, "min and max known at import"},
    Converter{"", "Concat", 13, convertConcat, ""},
    Converter{"", "Constant", 13, convertConstant, "value, value_float(s), value_int(s)"},
    Converter{"", "ConstantOfShape", 9, convertConstantOfShape, "shape known at import"},
    Converter{"", "Conv", 11, convertConv, "2-D"},
    Converter{"", "Cos", 7, convertUnaryOp<cos>, ""},
    Converter{"", "Div", 14, convertBinaryOp<div>, ""},
    Converter{"", "Dropout", 13, convertDropout, "inference: the identity"},
    Converter{"", "Elu", 6, convertElu, ""},
    Converter{"", "Equal", 13, convertBinaryOp<eq>, ""},
    Converter{"", "Erf", 13, convertUnaryOp<erf>, ""},
    Converter{"", "Exp", 13, convertUnaryOp<exp>, ""},
    Converter{"", "Expand", 13, convertExpand, "shape known at import"},
    Converter{"", "Flatten", 13, convertFlatten, ""},
    Converter{"", "GRU", 14, convertGRU,
              "default activations, no clip; sequence_lens equal to the sequence length"},
    Converter{"", "Gather", 13, convertGather, ""},
    Converter{"", "Gemm", 13, convertGemm, ""},
    Converter{"", "GlobalAveragePool", 1, convertGlobalAveragePool, "4-D (NCHW)"},
    Converter{"", "GlobalMaxPool", 1, convertGlobalMaxPool, ""},
    Converter{"", "Greater", 13, convertBinaryOp<gt>, ""},
    Converter{"", "GreaterOrEqual", 16, convertBinaryOp<ge>, ""},
    Converter{"", "HardSigmoid", 6, convertHardSigmoid, ""},
    Converter{"", "HardSwish", 14, convertUnaryOp<hardSwish>, ""},
    Converter{"", "Identity", 16, convertIdentity, "tensors"},
    Converter{"", "LSTM", 14, convertLSTM,
              "default activations, no clip, peepholes or input_forget; sequence_lens equal to "
              "the sequence length"},
    Converter{"", "LayerNormalization", 17, convertLayerNormalization,
              "the Y output (not Mean and InvStdDev)"},
    Converter{"", "LeakyRelu", 16, convertLeakyRelu, ""},
    Converter{"", "Less", 13, convertBinaryOp<lt>, ""},
    Converter{"", "LessOrEqual", 16, convertBinaryOp<le>, ""},
    Converter{"", "Log", 13, convertUnaryOp<log>, ""},
    Converter{"", "LogSoftmax", 13, convertLogSoftmax, ""},
    Converter{"", "MatMul", 13, convertMatMul, ""},
    Converter{"", "Max", 13, convertVariadicOp<maximum>, ""},
    Converter{"", "MaxPool", 12, convertMaxPool, "2-D; the Y output (not Indices)"},
    Converter{"", "Min", 13, convertVariadicOp<minimum>, ""},
    Converter{"", "Mul", 14, convertBinaryOp<mul>, ""},
    Converter{"", "Neg", 13, convertUnaryOp<neg>, ""},
    Converter{"", "Not", 1, convertUnaryOp<logicalNot>, ""},
    Converter{"", "Or", 7, convertBinaryOp<logicalOr>, ""},
    Converter{"", "Pad", 13, convertPad, "constant mode, pads known at import"},
    Converter{"", "Pow", 15, convertPow, ""},
    Converter{"", "Range", 11, convertRange, "start, limit and delta known at import"},
    Converter{"", "Reciprocal", 13, convertReciprocal, ""},
    Converter{"", "ReduceMax", 13, convertReduceMax, ""},
    Converter{"", "ReduceMean", 13, convertReduceMean, ""},
    Converter{"", "ReduceMin", 13, convertReduceMin, ""},
    Converter{"", "ReduceProd", 13, convertReduceProd, ""},
    Converter{"", "ReduceSum", 13, convertReduceSum, "axes known at import"},
    Converter{"", "Relu", 14, convertUnaryOp<relu>, ""},
    Converter{"", "Reshape", 14, convertReshape, "shape known at import"},
    Converter{"", "Shape", 15, convertShape, ""},
    Converter{"", "Sigmoid", 13, convertUnaryOp<sigmoid>, ""},
    Converter{"", "Sin", 7, convertUnaryOp<sin>, ""},
    Converter{"", "Size", 13, convertSize, ""},
    Converter{"", "Slice", 13, convertSlice, "starts, ends, axes and steps known at import"},
    Converter{"", "Softmax", 13, convertSoftmax, ""},
    Converter{"", "Softplus", 1, convertSoftplus, ""},
    Converter{"", "Split", 13, convertSplit, "split sizes known at import"},
    Converter{"", "Sqrt", 13, convertUnaryOp<sqrt>, ""},
    Converter{"", "Squeeze", 13, convertSqueeze, "axes known at import"},
    Converter{"", "Sub", 14, convertBinaryOp<sub>, ""},
    Converter{"", "Sum", 13, convertVariadicOp<add>, ""},
    Converter{"", "Tanh", 13, convertUnaryOp<tanh>, ""},
    Converter{"", "Transpose", 13, convertTranspose, ""},
    Converter{"", "Trilu", 14, convertTrilu, "k known at import"},
    Converter{"", "Unsqueeze", 13, convertUnsqueeze, "axes known at import"},
    Converter{"", "Where", 16, convertWhere, ""},
};

} // namespace

std::span<const Converter> converters() { return kConverters; }

const Converter *findConverter(std::string_view domain, std::string_view opType) {
  if (domain == "ai.onnx")
    domain = "";
  auto it = std::lower_bound(kConverters.begin(), kConverters.end(), std::pair(domain, opType),
                             [](const Converter &row, const auto &key) {
                               return std::pair(row.domain, row.opType) < key;
                             });
  if (it == kConverters.end() || it->domain != domain || it->opType != opType)
    return nullptr;
  return &*it;
}

} // namespace kiln::onnx
