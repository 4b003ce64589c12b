// Shape inference op by op: a table with, for every op in Ops.def, valid rows with their exact
// result type, invalid rows with their exact error text, and a wrong operand count.
#include "ir/graph/OpTable.h"

#include <catch2/catch.hpp>
#include <limits>
#include <source_location>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::ir;
using namespace std::string_literals;

namespace {

using Ints = std::vector<int64_t>;
using Floats = std::vector<double>;

TensorType f64(Shape shape) { return TensorType{DType::F64, std::move(shape)}; }
TensorType f32(Shape shape) { return TensorType{DType::F32, std::move(shape)}; }
TensorType f16(Shape shape) { return TensorType{DType::F16, std::move(shape)}; }
TensorType bf16(Shape shape) { return TensorType{DType::BF16, std::move(shape)}; }
TensorType f8e4m3(Shape shape) { return TensorType{DType::F8E4M3, std::move(shape)}; }
TensorType f8e5m2(Shape shape) { return TensorType{DType::F8E5M2, std::move(shape)}; }
TensorType i64(Shape shape) { return TensorType{DType::I64, std::move(shape)}; }
TensorType i32(Shape shape) { return TensorType{DType::I32, std::move(shape)}; }
TensorType i8(Shape shape) { return TensorType{DType::I8, std::move(shape)}; }
TensorType boolean(Shape shape) { return TensorType{DType::Bool, std::move(shape)}; }

/// Valid: inference must return `type`. Invalid: it must fail with `message` (a semantic or
/// schema error). WrongCount: it must fail on the operand count.
enum class RowKind { Valid, Invalid, WrongCount };

struct Row {
  RowKind kind;
  OpKind op;
  std::vector<TensorType> operands;
  AttrMap attrs;
  TensorType type;     ///< Valid rows.
  std::string message; ///< Invalid and WrongCount rows.
  unsigned line = 0;
};

using Rows = std::vector<Row>;

Row valid(OpKind op, std::vector<TensorType> operands, AttrMap attrs, TensorType type,
          std::source_location where = std::source_location::current()) {
  return Row{RowKind::Valid, op, std::move(operands), std::move(attrs), std::move(type), "",
             where.line()};
}

Row invalid(OpKind op, std::vector<TensorType> operands, AttrMap attrs, std::string message,
            std::source_location where = std::source_location::current()) {
  return Row{RowKind::Invalid, op,    std::move(operands), std::move(attrs), {},
             std::move(message), where.line()};
}


/// `count` operands of f32[3]; the count check runs before attributes are looked at.
Row wrongCount(OpKind op, int count, std::string message,
               std::source_location where = std::source_location::current()) {
  return Row{RowKind::WrongCount, op, std::vector<TensorType>(static_cast<size_t>(count), f32({3})),
             {}, {}, std::move(message), where.line()};
}

// ---- Elementwise, unary -----------------------------------------------------------------------
void addUnaryRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(Neg, {i8({3, 5})}, {}, i8({3, 5})));
  rows.push_back(valid(Neg, {f32({})}, {}, f32({})));
  rows.push_back(invalid(Neg, {boolean({3, 5})}, {}, "neg: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(Neg, 2, "neg: expects 1 operand, got 2"));

  rows.push_back(valid(Abs, {f16({7, 1, 5})}, {}, f16({7, 1, 5})));
  rows.push_back(invalid(Abs, {boolean({7})}, {}, "abs: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(Abs, 0, "abs: expects 1 operand, got 0"));

  rows.push_back(valid(Exp, {f64({3, 5})}, {}, f64({3, 5})));
  rows.push_back(invalid(Exp, {i32({3})}, {}, "exp: operand 0 must be floating point, got i32"));
  rows.push_back(wrongCount(Exp, 2, "exp: expects 1 operand, got 2"));

  rows.push_back(valid(Log, {bf16({5, 7})}, {}, bf16({5, 7})));
  rows.push_back(invalid(Log, {i64({5})}, {}, "log: operand 0 must be floating point, got i64"));
  rows.push_back(wrongCount(Log, 0, "log: expects 1 operand, got 0"));

  rows.push_back(valid(Sqrt, {f8e4m3({3})}, {}, f8e4m3({3})));
  rows.push_back(
      invalid(Sqrt, {boolean({3})}, {}, "sqrt: operand 0 must be floating point, got bool"));
  rows.push_back(wrongCount(Sqrt, 2, "sqrt: expects 1 operand, got 2"));

  rows.push_back(valid(Rsqrt, {f32({3, 5, 7})}, {}, f32({3, 5, 7})));
  rows.push_back(invalid(Rsqrt, {i8({3, 5})}, {}, "rsqrt: operand 0 must be floating point, got i8"));
  rows.push_back(wrongCount(Rsqrt, 2, "rsqrt: expects 1 operand, got 2"));

  rows.push_back(valid(Tanh, {f16({})}, {}, f16({})));
  rows.push_back(invalid(Tanh, {i32({7})}, {}, "tanh: operand 0 must be floating point, got i32"));
  rows.push_back(wrongCount(Tanh, 2, "tanh: expects 1 operand, got 2"));

  rows.push_back(valid(Sigmoid, {f32({0, 5})}, {}, f32({0, 5})));
  rows.push_back(
      invalid(Sigmoid, {i64({3})}, {}, "sigmoid: operand 0 must be floating point, got i64"));
  rows.push_back(wrongCount(Sigmoid, 2, "sigmoid: expects 1 operand, got 2"));

  rows.push_back(valid(Relu, {i32({3, 5, 7})}, {}, i32({3, 5, 7})));
  rows.push_back(invalid(Relu, {boolean({5})}, {}, "relu: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(Relu, 2, "relu: expects 1 operand, got 2"));

  rows.push_back(valid(Gelu, {bf16({3, 7})}, {{"approximate", "tanh"s}}, bf16({3, 7})));
  rows.push_back(valid(Gelu, {f32({5})}, {}, f32({5})));
  rows.push_back(invalid(Gelu, {f32({5})}, {{"approximate", "fast"s}},
                         "gelu: approximate must be \"none\" or \"tanh\", got \"fast\""));
  rows.push_back(invalid(Gelu, {i32({5})}, {}, "gelu: operand 0 must be floating point, got i32"));
  rows.push_back(wrongCount(Gelu, 2, "gelu: expects 1 operand, got 2"));

  rows.push_back(valid(Silu, {f64({7})}, {}, f64({7})));
  rows.push_back(invalid(Silu, {i8({7})}, {}, "silu: operand 0 must be floating point, got i8"));
  rows.push_back(wrongCount(Silu, 2, "silu: expects 1 operand, got 2"));

  rows.push_back(valid(Erf, {f8e5m2({3, 3})}, {}, f8e5m2({3, 3})));
  rows.push_back(invalid(Erf, {i32({3})}, {}, "erf: operand 0 must be floating point, got i32"));
  rows.push_back(wrongCount(Erf, 2, "erf: expects 1 operand, got 2"));

  rows.push_back(valid(Sin, {f32({5, 1, 3})}, {}, f32({5, 1, 3})));
  rows.push_back(invalid(Sin, {boolean({5})}, {}, "sin: operand 0 must be floating point, got bool"));
  rows.push_back(wrongCount(Sin, 2, "sin: expects 1 operand, got 2"));

  rows.push_back(valid(Cos, {f16({7, 3})}, {}, f16({7, 3})));
  rows.push_back(invalid(Cos, {i64({7, 3})}, {}, "cos: operand 0 must be floating point, got i64"));
  rows.push_back(wrongCount(Cos, 2, "cos: expects 1 operand, got 2"));

  rows.push_back(valid(Not, {boolean({3, 5})}, {}, boolean({3, 5})));
  rows.push_back(invalid(Not, {f32({3, 5})}, {}, "not: operand must be bool, got f32"));
  rows.push_back(invalid(Not, {i8({3})}, {}, "not: operand must be bool, got i8"));
  rows.push_back(wrongCount(Not, 2, "not: expects 1 operand, got 2"));

  rows.push_back(valid(Cast, {f32({3, 5})}, {{"dtype", DType::I8}}, i8({3, 5})));
  rows.push_back(valid(Cast, {boolean({7})}, {{"dtype", DType::F16}}, f16({7})));
  // Cast accepts every dtype pair, so its only invalid inputs are schema errors.
  rows.push_back(
      invalid(Cast, {f32({3})}, {}, "cast: missing required attribute 'dtype' (the result dtype)"));
  rows.push_back(invalid(Cast, {f32({3})}, {{"dtype", "f16"s}},
                         "cast: attribute 'dtype' expects dtype, got string"));
  rows.push_back(wrongCount(Cast, 2, "cast: expects 1 operand, got 2"));

  rows.push_back(valid(Clamp, {f32({5, 3})}, {{"min", -1.0}, {"max", 6.0}}, f32({5, 3})));
  // Int bounds are accepted for float attributes; min == max is a legal (constant) clamp.
  rows.push_back(
      valid(Clamp, {i32({7})}, {{"min", int64_t{3}}, {"max", int64_t{3}}}, i32({7})));
  rows.push_back(invalid(Clamp, {f32({5})}, {{"min", 0.5}, {"max", -0.5}},
                         "clamp: min 0.5 is greater than max -0.5"));
  rows.push_back(invalid(Clamp, {boolean({5})}, {{"min", 0.0}, {"max", 1.0}},
                         "clamp: operand 0 must be numeric, got bool"));
  rows.push_back(invalid(Clamp, {f32({5})}, {{"min", 0.0}},
                         "clamp: missing required attribute 'max' (upper bound)"));
  rows.push_back(invalid(Clamp, {f32({5})},
                         {{"min", std::numeric_limits<double>::quiet_NaN()}, {"max", 1.0}},
                         "clamp: bounds must not be NaN, got min nan max 1"));
  rows.push_back(wrongCount(Clamp, 0, "clamp: expects 1 operand, got 0"));
}

// ---- Composite elementwise: the row's infer function, as for every op ---------------------------
void addCompositeElementwiseRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(Relu6, {i32({3, 5})}, {}, i32({3, 5})));
  rows.push_back(invalid(Relu6, {boolean({5})}, {}, "relu6: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(Relu6, 2, "relu6: expects 1 operand, got 2"));

  rows.push_back(valid(HardSigmoid, {bf16({7})}, {{"alpha", 0.25}}, bf16({7})));
  rows.push_back(invalid(HardSigmoid, {i32({7})}, {},
                         "hard_sigmoid: operand 0 must be floating point, got i32"));
  rows.push_back(invalid(HardSigmoid, {f32({7})}, {{"gamma", 1.0}},
                         "hard_sigmoid: unknown attribute 'gamma' (known: alpha, beta)"));
  rows.push_back(wrongCount(HardSigmoid, 0, "hard_sigmoid: expects 1 operand, got 0"));

  rows.push_back(valid(HardSwish, {f16({2, 0, 3})}, {}, f16({2, 0, 3})));
  rows.push_back(invalid(HardSwish, {i64({3})}, {},
                         "hard_swish: operand 0 must be floating point, got i64"));
  rows.push_back(wrongCount(HardSwish, 2, "hard_swish: expects 1 operand, got 2"));

  rows.push_back(valid(Softplus, {f64({5})}, {{"beta", 2.0}, {"threshold", 10.0}}, f64({5})));
  rows.push_back(invalid(Softplus, {f32({5})}, {{"beta", "two"s}},
                         "softplus: attribute 'beta' expects float, got string"));
  rows.push_back(wrongCount(Softplus, 2, "softplus: expects 1 operand, got 2"));

  rows.push_back(valid(Mish, {f32({})}, {}, f32({})));
  rows.push_back(invalid(Mish, {i8({3})}, {}, "mish: operand 0 must be floating point, got i8"));
  rows.push_back(wrongCount(Mish, 2, "mish: expects 1 operand, got 2"));

  rows.push_back(valid(LeakyRelu, {f32({3, 1})}, {{"alpha", 0.2}}, f32({3, 1})));
  rows.push_back(invalid(LeakyRelu, {boolean({3})}, {},
                         "leaky_relu: operand 0 must be floating point, got bool"));
  rows.push_back(wrongCount(LeakyRelu, 2, "leaky_relu: expects 1 operand, got 2"));

  rows.push_back(valid(Elu, {f8e5m2({4})}, {}, f8e5m2({4})));
  rows.push_back(invalid(Elu, {i32({4})}, {}, "elu: operand 0 must be floating point, got i32"));
  rows.push_back(wrongCount(Elu, 2, "elu: expects 1 operand, got 2"));
}

// ---- Elementwise, binary and ternary ----------------------------------------------------------
void addBinaryRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(Add, {f32({5, 1, 7}), f32({3, 1})}, {}, f32({5, 3, 7})));
  rows.push_back(valid(Add, {i32({}), i32({3, 5})}, {}, i32({3, 5})));
  rows.push_back(
      invalid(Add, {f32({5, 3}), f32({7})}, {}, "add: cannot broadcast f32[5,3] and f32[7]"));
  rows.push_back(invalid(Add, {f32({3}), f16({3})}, {},
                         "add: operands must have the same dtype, got f32 and f16 (insert a cast)"));
  rows.push_back(wrongCount(Add, 1, "add: expects 2 operands, got 1"));
  rows.push_back(wrongCount(Add, 3, "add: expects 2 operands, got 3"));

  rows.push_back(valid(Sub, {f64({7, 1}), f64({1, 5})}, {}, f64({7, 5})));
  rows.push_back(invalid(Sub, {boolean({3}), boolean({3})}, {},
                         "sub: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(Sub, 1, "sub: expects 2 operands, got 1"));

  rows.push_back(valid(Mul, {i8({3, 1, 5}), i8({7, 1})}, {}, i8({3, 7, 5})));
  rows.push_back(invalid(Mul, {i8({3}), i32({3})}, {},
                         "mul: operands must have the same dtype, got i8 and i32 (insert a cast)"));
  rows.push_back(wrongCount(Mul, 1, "mul: expects 2 operands, got 1"));

  rows.push_back(valid(Div, {f32({3, 5}), f32({})}, {}, f32({3, 5})));
  rows.push_back(
      invalid(Div, {f32({3, 5}), f32({5, 3})}, {}, "div: cannot broadcast f32[3,5] and f32[5,3]"));
  rows.push_back(wrongCount(Div, 3, "div: expects 2 operands, got 3"));

  rows.push_back(valid(Pow, {f32({5, 1}), f32({3})}, {}, f32({5, 3})));
  rows.push_back(
      invalid(Pow, {i32({3}), i32({3})}, {}, "pow: operand 0 must be floating point, got i32"));
  rows.push_back(wrongCount(Pow, 1, "pow: expects 2 operands, got 1"));

  rows.push_back(valid(Max, {i64({1, 7}), i64({5, 1})}, {}, i64({5, 7})));
  rows.push_back(invalid(Max, {boolean({5}), boolean({5})}, {},
                         "max: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(Max, 1, "max: expects 2 operands, got 1"));

  rows.push_back(valid(Min, {f16({3}), f16({3})}, {}, f16({3})));
  rows.push_back(invalid(Min, {f16({3}), bf16({3})}, {},
                         "min: operands must have the same dtype, got f16 and bf16 (insert a cast)"));
  rows.push_back(wrongCount(Min, 1, "min: expects 2 operands, got 1"));

  // Comparisons: same dtype in, bool out, any dtype including bool.
  rows.push_back(valid(Eq, {boolean({3, 1}), boolean({5})}, {}, boolean({3, 5})));
  rows.push_back(valid(Eq, {f32({5, 1}), f32({3})}, {}, boolean({5, 3})));
  rows.push_back(invalid(Eq, {f32({3}), i32({3})}, {},
                         "eq: operands must have the same dtype, got f32 and i32 (insert a cast)"));
  rows.push_back(wrongCount(Eq, 1, "eq: expects 2 operands, got 1"));

  rows.push_back(valid(Ne, {i32({7}), i32({})}, {}, boolean({7})));
  rows.push_back(invalid(Ne, {i32({3}), i32({5})}, {}, "ne: cannot broadcast i32[3] and i32[5]"));
  rows.push_back(wrongCount(Ne, 3, "ne: expects 2 operands, got 3"));

  rows.push_back(valid(Lt, {f32({3, 5, 7}), f32({5, 1})}, {}, boolean({3, 5, 7})));
  rows.push_back(invalid(Lt, {f64({3}), f32({3})}, {},
                         "lt: operands must have the same dtype, got f64 and f32 (insert a cast)"));
  rows.push_back(wrongCount(Lt, 1, "lt: expects 2 operands, got 1"));

  rows.push_back(valid(Le, {f64({1}), f64({7, 3})}, {}, boolean({7, 3})));
  rows.push_back(
      invalid(Le, {f64({7, 3}), f64({7})}, {}, "le: cannot broadcast f64[7,3] and f64[7]"));
  rows.push_back(wrongCount(Le, 1, "le: expects 2 operands, got 1"));

  rows.push_back(valid(Gt, {i8({3, 1, 1}), i8({1, 5, 7})}, {}, boolean({3, 5, 7})));
  rows.push_back(invalid(Gt, {i8({3}), boolean({3})}, {},
                         "gt: operands must have the same dtype, got i8 and bool (insert a cast)"));
  rows.push_back(wrongCount(Gt, 1, "gt: expects 2 operands, got 1"));

  rows.push_back(valid(Ge, {bf16({5}), bf16({3, 5})}, {}, boolean({3, 5})));
  rows.push_back(
      invalid(Ge, {bf16({5}), bf16({3, 7})}, {}, "ge: cannot broadcast bf16[5] and bf16[3,7]"));
  rows.push_back(wrongCount(Ge, 1, "ge: expects 2 operands, got 1"));

  rows.push_back(valid(And, {boolean({3, 1}), boolean({1, 5})}, {}, boolean({3, 5})));
  rows.push_back(
      invalid(And, {f32({3}), f32({3})}, {}, "and: operands must be bool, got f32 and f32"));
  rows.push_back(invalid(And, {boolean({3}), boolean({5})}, {},
                         "and: cannot broadcast bool[3] and bool[5]"));
  rows.push_back(wrongCount(And, 1, "and: expects 2 operands, got 1"));

  rows.push_back(valid(Or, {boolean({}), boolean({7})}, {}, boolean({7})));
  rows.push_back(
      invalid(Or, {boolean({7}), i8({7})}, {}, "or: operands must be bool, got bool and i8"));
  rows.push_back(wrongCount(Or, 3, "or: expects 2 operands, got 3"));

  rows.push_back(valid(Where, {boolean({5, 1}), f32({3}), f32({})}, {}, f32({5, 3})));
  rows.push_back(valid(Where, {boolean({}), i32({3, 5}), i32({7, 1, 5})}, {}, i32({7, 3, 5})));
  rows.push_back(invalid(Where, {f32({3}), f32({3}), f32({3})}, {},
                         "where: condition must be bool, got f32"));
  rows.push_back(invalid(Where, {boolean({3}), f32({3}), f16({3})}, {},
                         "where: both branches must have the same dtype, got f32 and f16"));
  rows.push_back(invalid(Where, {boolean({3}), f32({5}), f32({})}, {},
                         "where: cannot broadcast bool[3] and f32[5] and f32[]"));
  rows.push_back(wrongCount(Where, 2, "where: expects 3 operands, got 2"));
}

// ---- Reductions -------------------------------------------------------------------------------
void addReductionRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(ReduceSum, {f32({3, 5, 7})}, {{"axes", Ints{-1, 0}}}, f32({5})));
  rows.push_back(valid(ReduceSum, {f32({3, 5, 7})}, {{"axes", Ints{-1, 0}}, {"keepdims", true}},
                       f32({1, 5, 1})));
  rows.push_back(valid(ReduceSum, {i32({3, 5})}, {{"axes", Ints{1, 0}}}, i32({})));
  rows.push_back(invalid(ReduceSum, {f32({3, 5, 7})}, {{"axes", Ints{3}}},
                         "reduce_sum: axes entry 3 is out of range for rank 3"));
  rows.push_back(invalid(ReduceSum, {f32({3, 5, 7})}, {{"axes", Ints{0, -4}}},
                         "reduce_sum: axes entry -4 is out of range for rank 3"));
  rows.push_back(invalid(ReduceSum, {f32({3, 5, 7})}, {{"axes", Ints{1, -2}}},
                         "reduce_sum: axes names axis 1 twice"));
  rows.push_back(invalid(
      ReduceSum, {f32({3, 5})}, {{"axes", Ints{}}},
      "reduce_sum: axes is empty; list the axes to reduce (all of them for a full reduction)"));
  rows.push_back(invalid(ReduceSum, {boolean({3})}, {{"axes", Ints{0}}},
                         "reduce_sum: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(ReduceSum, 2, "reduce_sum: expects 1 operand, got 2"));

  rows.push_back(valid(ReduceMean, {f16({3, 5, 7})}, {{"axes", Ints{1}}, {"keepdims", true}},
                       f16({3, 1, 7})));
  rows.push_back(invalid(ReduceMean, {i32({3, 5})}, {{"axes", Ints{1}}},
                         "reduce_mean: operand 0 must be floating point, got i32"));
  rows.push_back(invalid(ReduceMean, {f32({3, 5})}, {{"axes", Ints{-3}}},
                         "reduce_mean: axes entry -3 is out of range for rank 2"));
  rows.push_back(wrongCount(ReduceMean, 0, "reduce_mean: expects 1 operand, got 0"));

  rows.push_back(valid(ReduceMax, {i8({3, 5, 7})}, {{"axes", Ints{-2}}}, i8({3, 7})));
  // Only the reduced axes must be non-empty.
  rows.push_back(valid(ReduceMax, {f32({0, 5})}, {{"axes", Ints{1}}}, f32({0})));
  rows.push_back(invalid(ReduceMax, {f32({3, 0, 5})}, {{"axes", Ints{1}}},
                         "reduce_max: cannot reduce empty axis 1 of f32[3,0,5]"));
  rows.push_back(wrongCount(ReduceMax, 2, "reduce_max: expects 1 operand, got 2"));

  rows.push_back(valid(ReduceMin, {f64({7, 3})}, {{"axes", Ints{0}}}, f64({3})));
  rows.push_back(invalid(ReduceMin, {f32({3, 0})}, {{"axes", Ints{-1}}},
                         "reduce_min: cannot reduce empty axis 1 of f32[3,0]"));
  rows.push_back(wrongCount(ReduceMin, 2, "reduce_min: expects 1 operand, got 2"));

  rows.push_back(valid(ReduceProd, {f32({3, 5, 7})}, {{"axes", Ints{0, 2}}, {"keepdims", true}},
                       f32({1, 5, 1})));
  // An empty product is 1, so an empty axis is fine here (unlike max/min).
  rows.push_back(valid(ReduceProd, {i64({3, 0})}, {{"axes", Ints{1}}}, i64({3})));
  rows.push_back(invalid(ReduceProd, {boolean({3, 5})}, {{"axes", Ints{0}}},
                         "reduce_prod: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(ReduceProd, 2, "reduce_prod: expects 1 operand, got 2"));

  rows.push_back(valid(ArgMax, {f32({3, 5, 7})}, {{"axis", int64_t{-2}}}, i64({3, 7})));
  rows.push_back(valid(ArgMax, {f32({3, 5, 7})}, {{"axis", int64_t{1}}, {"keepdims", true}},
                       i64({3, 1, 7})));
  rows.push_back(invalid(ArgMax, {f32({3, 5, 7})}, {{"axis", int64_t{3}}},
                         "argmax: axis 3 is out of range for rank 3"));
  rows.push_back(invalid(ArgMax, {f32({0, 5})}, {{"axis", int64_t{0}}},
                         "argmax: cannot search empty axis 0 of f32[0,5]"));
  rows.push_back(invalid(ArgMax, {boolean({5})}, {{"axis", int64_t{0}}},
                         "argmax: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(ArgMax, 2, "argmax: expects 1 operand, got 2"));

  rows.push_back(valid(ArgMin, {i32({7})}, {{"axis", int64_t{0}}}, i64({})));
  rows.push_back(invalid(ArgMin, {i32({7})}, {{"axis", int64_t{-2}}},
                         "argmin: axis -2 is out of range for rank 1"));
  rows.push_back(wrongCount(ArgMin, 0, "argmin: expects 1 operand, got 0"));
}

// ---- Contractions and windows -----------------------------------------------------------------
void addContractionRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(MatMul, {f32({7, 1, 3, 5}), f32({4, 5, 9})}, {}, f32({7, 4, 3, 9})));
  rows.push_back(valid(MatMul, {f32({5, 3}), f32({5, 7})}, {{"transpose_a", true}}, f32({3, 7})));
  rows.push_back(valid(MatMul, {f32({3, 5}), f32({7, 5})}, {{"transpose_b", true}}, f32({3, 7})));
  // Integer contractions return the accumulator dtype.
  rows.push_back(valid(MatMul, {i8({3, 5}), i8({5, 7})}, {{"accumulate", DType::I32}}, i32({3, 7})));
  rows.push_back(valid(MatMul, {f64({3, 5}), f64({5, 1})}, {{"accumulate", DType::F64}}, f64({3, 1})));
  rows.push_back(
      valid(MatMul, {f32({3, 5}), f32({5, 7})}, {{"allow_tf32", true}}, f32({3, 7})));
  rows.push_back(invalid(MatMul, {f32({3, 5}), f32({7, 9})}, {},
                         "matmul: contraction dims differ: a f32[3,5] has K = 5, b f32[7,9] has K = 7"));
  rows.push_back(invalid(MatMul, {f32({5, 3}), f32({3, 7})}, {{"transpose_a", true}},
                         "matmul: contraction dims differ: a f32[5,3] has K = 5, b f32[3,7] has K = 3"));
  rows.push_back(
      invalid(MatMul, {f32({5}), f32({5, 3})}, {},
              "matmul: operands need rank >= 2, got f32[5] and f32[5,3] (unsqueeze vectors)"));
  rows.push_back(invalid(MatMul, {f32({2, 3, 5}), f32({3, 5, 7})}, {},
                         "matmul: batch dims of a f32[2,3,5] and b f32[3,5,7] do not broadcast"));
  rows.push_back(
      invalid(MatMul, {i32({3, 5}), i32({5, 7})}, {},
              "matmul: accumulate = f32 cannot hold products of i32 operands (use i32 or i64)"));
  rows.push_back(invalid(MatMul, {f64({3, 5}), f64({5, 7})}, {},
                         "matmul: accumulate = f32 cannot hold products of f64 operands (use f64)"));
  rows.push_back(invalid(MatMul, {f16({3, 5}), f16({5, 7})}, {{"allow_tf32", true}},
                         "matmul: allow_tf32 applies to f32 operands, got f16"));
  rows.push_back(invalid(MatMul, {f32({3, 5}), f16({5, 7})}, {},
                         "matmul: operands must have the same dtype, got f32 and f16 (insert a cast)"));
  rows.push_back(invalid(MatMul, {boolean({3, 5}), boolean({5, 7})}, {},
                         "matmul: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(MatMul, 3, "matmul: expects 2 operands, got 3"));

  // conv2d: out = (in + padBefore + padAfter - ((k - 1) * dilation + 1)) / stride + 1.
  rows.push_back(valid(Conv2D, {f32({1, 3, 7, 9}), f32({5, 3, 3, 1})}, {}, f32({1, 5, 5, 9})));
  // H: (15 + 0 + 1 - 3) / 2 + 1 = 7; W: (17 + 2 + 0 - 5) / 2 + 1 = 8.
  rows.push_back(valid(Conv2D, {f32({3, 3, 15, 17}), f32({5, 3, 3, 3})},
                       {{"stride", Ints{2, 2}}, {"padding", Ints{0, 1, 2, 0}},
                        {"dilation", Ints{1, 2}}},
                       f32({3, 5, 7, 8})));
  rows.push_back(valid(Conv2D, {f32({1, 6, 7, 7}), f32({9, 2, 3, 3})}, {{"groups", int64_t{3}}},
                       f32({1, 9, 5, 5})));
  rows.push_back(valid(Conv2D, {f32({1, 5, 7, 7}), f32({5, 1, 3, 3})}, {{"groups", int64_t{5}}},
                       f32({1, 5, 5, 5})));
  // nhwc: input [N,H,W,C], filter [O,KH,KW,I], result [N,OH,OW,O].
  rows.push_back(valid(Conv2D, {f32({1, 7, 9, 3}), f32({11, 3, 1, 3})}, {{"layout", "nhwc"s}},
                       f32({1, 5, 9, 11})));
  rows.push_back(valid(Conv2D, {i8({1, 1, 5, 5}), i8({1, 1, 3, 3})}, {{"accumulate", DType::I32}},
                       i32({1, 1, 3, 3})));
  rows.push_back(invalid(Conv2D, {f32({1, 6, 5, 5}), f32({4, 2, 3, 3})}, {{"groups", int64_t{3}}},
                         "conv2d: groups = 3 must divide input channels (6) and output channels (4)"));
  rows.push_back(invalid(Conv2D, {f32({1, 5, 5, 5}), f32({6, 2, 3, 3})}, {{"groups", int64_t{2}}},
                         "conv2d: groups = 2 must divide input channels (5) and output channels (6)"));
  rows.push_back(
      invalid(Conv2D, {f32({1, 3, 7, 7}), f32({5, 1, 3, 3})}, {},
              "conv2d: input has 3 channels, filter expects 1 (filter shape [5,1,3,3], groups 1)"));
  rows.push_back(invalid(
      Conv2D, {f32({1, 1, 2, 7}), f32({1, 1, 3, 3})}, {},
      "conv2d: the 3x3 filter (dilation 1x1) does not fit the 2x7 input with padding [0,0,0,0]"));
  rows.push_back(invalid(Conv2D, {f32({1, 3, 7, 7}), f32({5, 3, 3, 3})}, {{"groups", int64_t{0}}},
                         "conv2d: groups must be >= 1, got 0"));
  rows.push_back(invalid(Conv2D, {f32({1, 3, 7, 7}), f32({5, 3, 3, 3})}, {{"layout", "nwhc"s}},
                         "conv2d: layout must be \"nchw\" or \"nhwc\", got \"nwhc\""));
  rows.push_back(invalid(Conv2D, {f32({3, 7, 7}), f32({5, 3, 3, 3})}, {},
                         "conv2d: input [N,C,H,W] must have rank 4, got f32[3,7,7]"));
  rows.push_back(invalid(Conv2D, {f32({1, 7, 7, 3}), f32({5, 3, 3})}, {{"layout", "nhwc"s}},
                         "conv2d: filter [O,KH,KW,I] must have rank 4, got f32[5,3,3]"));
  rows.push_back(invalid(Conv2D, {f32({1, 3, 7, 7}), f32({5, 3, 3, 3})}, {{"stride", Ints{1}}},
                         "conv2d: stride must have 2 entries, got 1"));
  rows.push_back(invalid(Conv2D, {f32({1, 3, 7, 7}), f32({5, 3, 3, 3})}, {{"dilation", Ints{1, 0}}},
                         "conv2d: dilation entries must be >= 1, got 0"));
  rows.push_back(invalid(Conv2D, {f32({1, 3, 7, 7}), f32({5, 3, 3, 3})},
                         {{"padding", Ints{0, 0, -1, 0}}},
                         "conv2d: padding entries must be >= 0, got -1"));
  rows.push_back(invalid(Conv2D, {f64({1, 3, 7, 7}), f64({5, 3, 3, 3})}, {},
                         "conv2d: accumulate = f32 cannot hold products of f64 operands (use f64)"));
  rows.push_back(invalid(Conv2D, {f32({1, 1, 5, 5}), f32({1, 1, 0, 0})}, {},
                         "conv2d: filter [1,1,0,0] has an empty 0x0 window"));
  rows.push_back(invalid(Conv2D, {f32({1, 1, 5, 5}), f32({1, 1, 0, 3})},
                         {{"dilation", Ints{3, 1}}},
                         "conv2d: filter [1,1,0,3] has an empty 0x3 window"));
  rows.push_back(wrongCount(Conv2D, 1, "conv2d: expects 2 operands, got 1"));

  // Pooling: H (7 - 3) / 2 + 1 = 3, W (9 - 3) / 2 + 1 = 4; padded: (9 - 3) / 2 + 1 = 4, 5.
  AttrMap pool3{{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}};
  rows.push_back(valid(MaxPool2D, {f32({1, 3, 7, 9})}, pool3, f32({1, 3, 3, 4})));
  AttrMap padded = pool3;
  padded["padding"] = Ints{1, 1, 1, 1};
  rows.push_back(valid(MaxPool2D, {f32({1, 3, 7, 9})}, padded, f32({1, 3, 4, 5})));
  rows.push_back(valid(MaxPool2D, {f32({1, 7, 9, 5})},
                       {{"kernel", Ints{3, 1}}, {"stride", Ints{2, 1}}, {"layout", "nhwc"s}},
                       f32({1, 3, 9, 5})));
  rows.push_back(valid(MaxPool2D, {i32({1, 1, 5, 5})}, {{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}},
                       i32({1, 1, 2, 2})));
  rows.push_back(invalid(MaxPool2D, {f32({1, 3, 7, 9})},
                         {{"kernel", Ints{3, 3}}, {"stride", Ints{1, 1}}, {"padding", Ints{3, 0, 0, 0}}},
                         "max_pool2d: padding [3,0,0,0] must be smaller than the kernel [3,3] on "
                         "every side"));
  rows.push_back(invalid(MaxPool2D, {f32({1, 3, 7, 9})},
                         {{"kernel", Ints{3, 1}}, {"stride", Ints{1, 1}}, {"padding", Ints{0, 0, 1, 0}}},
                         "max_pool2d: padding [0,0,1,0] must be smaller than the kernel [3,1] on "
                         "every side"));
  rows.push_back(invalid(MaxPool2D, {f32({1, 1, 2, 7})}, {{"kernel", Ints{3, 3}}, {"stride", Ints{1, 1}}},
                         "max_pool2d: the 3x3 window does not fit the 2x7 input with padding [0,0,0,0]"));
  rows.push_back(invalid(MaxPool2D, {f32({1, 1, 1, 1})},
                         {{"kernel", Ints{5, 5}}, {"stride", Ints{1, 1}},
                          {"padding", Ints{1, 1, 1, 1}}},
                         "max_pool2d: the 5x5 window does not fit the 1x1 input with padding "
                         "[1,1,1,1]"));
  rows.push_back(invalid(MaxPool2D, {f32({1, 1, 7, 7})}, {{"kernel", Ints{3}}, {"stride", Ints{1, 1}}},
                         "max_pool2d: kernel must have 2 entries, got 1"));
  rows.push_back(invalid(MaxPool2D, {f32({1, 1, 7, 7})}, {{"kernel", Ints{3, 3}}, {"stride", Ints{0, 1}}},
                         "max_pool2d: stride entries must be >= 1, got 0"));
  rows.push_back(invalid(MaxPool2D, {boolean({1, 1, 7, 7})}, pool3,
                         "max_pool2d: operand 0 must be numeric, got bool"));
  rows.push_back(invalid(MaxPool2D, {f32({1, 1, 7, 7})}, {{"kernel", Ints{3, 3}}},
                         "max_pool2d: missing required attribute 'stride' ([sh, sw])"));
  // Every window must cover input, or max pooling would return padding.
  rows.push_back(invalid(MaxPool2D, {f32({1, 1, 0, 3})},
                         {{"kernel", Ints{2, 2}}, {"stride", Ints{1, 1}},
                          {"padding", Ints{1, 1, 0, 0}}},
                         "max_pool2d: input f32[1,1,0,3] has an empty spatial axis"));
  rows.push_back(wrongCount(MaxPool2D, 2, "max_pool2d: expects 1 operand, got 2"));

  // H and W: (7 + 1 + 0 - 2) / 2 + 1 = 4.
  rows.push_back(valid(AvgPool2D, {f16({3, 5, 7, 7})}, {{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}}},
                       f16({3, 5, 3, 3})));
  rows.push_back(valid(AvgPool2D, {f16({3, 5, 7, 7})},
                       {{"kernel", Ints{2, 2}}, {"stride", Ints{2, 2}},
                        {"padding", Ints{1, 0, 1, 0}}, {"count_include_pad", true}},
                       f16({3, 5, 4, 4})));
  rows.push_back(invalid(AvgPool2D, {i32({1, 1, 7, 7})}, pool3,
                         "avg_pool2d: operand 0 must be floating point, got i32"));
  rows.push_back(invalid(AvgPool2D, {f32({7, 7, 3})},
                         {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}}, {"layout", "nhwc"s}},
                         "avg_pool2d: input [N,H,W,C] must have rank 4, got f32[7,7,3]"));
  rows.push_back(wrongCount(AvgPool2D, 0, "avg_pool2d: expects 1 operand, got 0"));

  rows.push_back(valid(GlobalAvgPool, {f32({3, 5, 7, 9})}, {}, f32({3, 5, 1, 1})));
  rows.push_back(valid(GlobalAvgPool, {f16({3, 7, 9, 5})}, {{"layout", "nhwc"s}}, f16({3, 1, 1, 5})));
  rows.push_back(valid(GlobalAvgPool, {f32({0, 5, 7, 9})}, {}, f32({0, 5, 1, 1})));
  rows.push_back(invalid(GlobalAvgPool, {f32({5, 7, 9})}, {},
                         "global_avg_pool: input [N,C,H,W] must have rank 4, got f32[5,7,9]"));
  rows.push_back(invalid(GlobalAvgPool, {f32({3, 5, 0, 9})}, {},
                         "global_avg_pool: H and W of f32[3,5,0,9] must be non-empty"));
  rows.push_back(invalid(GlobalAvgPool, {i32({3, 5, 7, 9})}, {},
                         "global_avg_pool: operand 0 must be floating point, got i32"));
  rows.push_back(invalid(GlobalAvgPool, {f32({3, 5, 7, 9})}, {{"layout", "hwcn"s}},
                         "global_avg_pool: layout must be \"nchw\" or \"nhwc\", got \"hwcn\""));
  // Zero channels: nothing is averaged and the result is empty.
  rows.push_back(valid(GlobalAvgPool, {f32({3, 0, 7, 9})}, {}, f32({3, 0, 1, 1})));
  rows.push_back(valid(GlobalAvgPool, {f32({3, 7, 9, 0})}, {{"layout", "nhwc"s}},
                       f32({3, 1, 1, 0})));
  rows.push_back(wrongCount(GlobalAvgPool, 2, "global_avg_pool: expects 1 operand, got 2"));
}

// ---- Normalizations and attention -------------------------------------------------------------
void addCompositeRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(Softmax, {f32({3, 5, 7})}, {}, f32({3, 5, 7})));
  rows.push_back(valid(Softmax, {f16({3, 5, 7})}, {{"axis", int64_t{-3}}}, f16({3, 5, 7})));
  rows.push_back(invalid(Softmax, {f32({3, 5, 7})}, {{"axis", int64_t{3}}},
                         "softmax: axis 3 is out of range for rank 3"));
  rows.push_back(invalid(Softmax, {f32({3, 5, 7})}, {{"axis", int64_t{-4}}},
                         "softmax: axis -4 is out of range for rank 3"));
  rows.push_back(invalid(Softmax, {f32({})}, {}, "softmax: axis -1 is out of range for rank 0"));
  rows.push_back(
      invalid(Softmax, {i32({3, 5})}, {}, "softmax: operand 0 must be floating point, got i32"));
  rows.push_back(valid(Softmax, {f32({3, 0})}, {}, f32({3, 0})));
  rows.push_back(wrongCount(Softmax, 2, "softmax: expects 1 operand, got 2"));

  rows.push_back(valid(LogSoftmax, {bf16({5, 7})}, {{"axis", int64_t{0}}}, bf16({5, 7})));
  rows.push_back(invalid(LogSoftmax, {f32({5, 7})}, {{"axis", int64_t{2}}},
                         "log_softmax: axis 2 is out of range for rank 2"));
  rows.push_back(invalid(LogSoftmax, {i64({5, 7})}, {},
                         "log_softmax: operand 0 must be floating point, got i64"));
  rows.push_back(wrongCount(LogSoftmax, 0, "log_softmax: expects 1 operand, got 0"));

  rows.push_back(valid(LayerNorm, {f32({3, 5, 7}), f32({7}), f32({7})}, {}, f32({3, 5, 7})));
  rows.push_back(valid(LayerNorm, {f32({3, 5, 7}), f32({5, 7}), f32({5, 7})},
                       {{"axis", int64_t{-2}}, {"epsilon", 0.0}}, f32({3, 5, 7})));
  rows.push_back(valid(LayerNorm, {f16({3, 5, 7}), f16({3, 5, 7}), f16({3, 5, 7})},
                       {{"axis", int64_t{0}}}, f16({3, 5, 7})));
  rows.push_back(invalid(LayerNorm, {f32({3, 5, 7}), f32({5, 7}), f32({7})}, {},
                         "layer_norm: scale must have shape [7] (x[2:]), got [5,7]"));
  rows.push_back(invalid(LayerNorm, {f32({3, 5, 7}), f32({5, 7}), f32({5})}, {{"axis", int64_t{1}}},
                         "layer_norm: bias must have shape [5,7] (x[1:]), got [5]"));
  rows.push_back(invalid(LayerNorm, {f32({3, 5, 7}), f32({7}), f32({7})}, {{"epsilon", -1.0}},
                         "layer_norm: epsilon must be >= 0, got -1"));
  rows.push_back(invalid(LayerNorm, {f32({3, 5, 7}), f32({7}), f32({7})},
                         {{"epsilon", std::numeric_limits<double>::quiet_NaN()}},
                         "layer_norm: epsilon must be >= 0, got nan"));
  rows.push_back(invalid(LayerNorm, {f32({3, 5, 7}), f32({7}), f32({7})}, {{"axis", int64_t{3}}},
                         "layer_norm: axis 3 is out of range for rank 3"));
  rows.push_back(invalid(LayerNorm, {f32({3, 5, 7}), f16({7}), f32({7})}, {},
                         "layer_norm: operands must have the same dtype, got f32 and f16 (insert a "
                         "cast)"));
  rows.push_back(invalid(LayerNorm, {i32({3, 5}), i32({5}), i32({5})}, {},
                         "layer_norm: operand 0 must be floating point, got i32"));
  rows.push_back(wrongCount(LayerNorm, 1, "layer_norm: expects 3 operands, got 1"));
  rows.push_back(wrongCount(LayerNorm, 4, "layer_norm: expects 3 operands, got 4"));

  rows.push_back(valid(BatchNorm, {f32({3, 5, 7, 9}), f32({5}), f32({5}), f32({5}), f32({5})}, {},
                       f32({3, 5, 7, 9})));
  rows.push_back(valid(BatchNorm, {f32({3, 5, 7, 9}), f32({9}), f32({9}), f32({9}), f32({9})},
                       {{"axis", int64_t{-1}}}, f32({3, 5, 7, 9})));
  rows.push_back(valid(BatchNorm, {f16({7, 5}), f16({5}), f16({5}), f16({5}), f16({5})}, {},
                       f16({7, 5})));
  rows.push_back(invalid(BatchNorm, {f32({3, 5, 7, 9}), f32({5}), f32({5}), f32({5}), f32({7})}, {},
                         "batch_norm: var must have shape [5] (the channel axis 1 of x "
                         "f32[3,5,7,9]), got [7]"));
  rows.push_back(invalid(BatchNorm, {f32({3, 5, 7, 9}), f32({5}), f32({5}), f32({}), f32({5})}, {},
                         "batch_norm: mean must have shape [5] (the channel axis 1 of x "
                         "f32[3,5,7,9]), got []"));
  rows.push_back(invalid(BatchNorm, {f32({3, 5, 7, 9}), f32({5}), f32({5}), f32({5}), f32({5})},
                         {{"axis", int64_t{4}}}, "batch_norm: axis 4 is out of range for rank 4"));
  rows.push_back(invalid(BatchNorm, {f32({7}), f32({7}), f32({7}), f32({7}), f32({7})}, {},
                         "batch_norm: axis 1 is out of range for rank 1"));
  rows.push_back(invalid(BatchNorm, {f32({3, 5}), f32({5}), f32({5}), f32({5}), f32({5})},
                         {{"epsilon", -0.5}}, "batch_norm: epsilon must be >= 0, got -0.5"));
  rows.push_back(invalid(BatchNorm, {f32({3, 5}), f32({5}), f32({5}), f64({5}), f32({5})}, {},
                         "batch_norm: operands must have the same dtype, got f32 and f64 (insert a "
                         "cast)"));
  rows.push_back(wrongCount(BatchNorm, 4, "batch_norm: expects 5 operands, got 4"));

  const OpKind sdpa = ScaledDotProductAttention;
  AttrMap scale{{"scale", 0.5}};
  AttrMap causal{{"scale", 0.5}, {"causal", true}};
  rows.push_back(valid(sdpa, {f32({3, 5, 7}), f32({3, 9, 7}), f32({1, 9, 11})}, scale,
                       f32({3, 5, 11})));
  rows.push_back(valid(sdpa, {f32({5, 7}), f32({9, 7}), f32({9, 3})}, causal, f32({5, 3})));
  rows.push_back(valid(sdpa, {bf16({2, 1, 5, 7}), bf16({1, 3, 9, 7}), bf16({2, 3, 9, 7})}, scale,
                       bf16({2, 3, 5, 7})));
  rows.push_back(invalid(sdpa, {f32({3, 5, 7}), f32({3, 9, 5}), f32({3, 9, 5})}, scale,
                         "scaled_dot_product_attention: q f32[3,5,7] and k f32[3,9,5] have "
                         "different head dims"));
  rows.push_back(invalid(sdpa, {f32({3, 5, 7}), f32({3, 9, 7}), f32({3, 8, 11})}, scale,
                         "scaled_dot_product_attention: k f32[3,9,7] and v f32[3,8,11] have "
                         "different sequence lengths"));
  rows.push_back(invalid(sdpa, {f32({5, 7}), f32({0, 7}), f32({0, 3})}, scale,
                         "scaled_dot_product_attention: no keys to attend to: k is f32[0,7]"));
  rows.push_back(invalid(sdpa, {f32({9, 7}), f32({5, 7}), f32({5, 3})}, causal,
                         "scaled_dot_product_attention: causal attention needs at least as many "
                         "keys as queries, got Lq = 9 > Lk = 5"));
  rows.push_back(invalid(sdpa, {f32({7}), f32({5, 7}), f32({5, 3})}, scale,
                         "scaled_dot_product_attention: q, k and v need rank >= 2, got f32[7], "
                         "f32[5,7], f32[5,3]"));
  rows.push_back(invalid(sdpa, {f32({3, 5, 7}), f32({2, 9, 7}), f32({2, 9, 7})}, scale,
                         "scaled_dot_product_attention: batch dims of q f32[3,5,7], k f32[2,9,7] "
                         "and v f32[2,9,7] do not broadcast"));
  rows.push_back(invalid(sdpa, {f32({3, 1, 5, 7}), f32({4, 9, 7}), f32({5, 9, 7})}, scale,
                         "scaled_dot_product_attention: batch dims of q f32[3,1,5,7], k "
                         "f32[4,9,7] and v f32[5,9,7] do not broadcast"));
  rows.push_back(invalid(sdpa, {f32({5, 7}), f32({5, 7}), f32({5, 3})},
                         {{"scale", std::numeric_limits<double>::infinity()}},
                         "scaled_dot_product_attention: scale must be finite, got inf"));
  rows.push_back(invalid(sdpa, {i32({5, 7}), i32({5, 7}), i32({5, 7})}, scale,
                         "scaled_dot_product_attention: operand 0 must be floating point, got i32"));
  rows.push_back(invalid(sdpa, {f32({5, 7}), f16({5, 7}), f32({5, 7})}, scale,
                         "scaled_dot_product_attention: operands must have the same dtype, got f32 "
                         "and f16 (insert a cast)"));
  rows.push_back(invalid(sdpa, {f32({5, 7}), f32({5, 7}), f32({5, 7})}, {},
                         "scaled_dot_product_attention: missing required attribute 'scale' "
                         "(usually 1 / sqrt(D))"));
  rows.push_back(wrongCount(sdpa, 2,
                            "scaled_dot_product_attention: expects 3 to 4 operands, got 2"));
  rows.push_back(wrongCount(sdpa, 5,
                            "scaled_dot_product_attention: expects 3 to 4 operands, got 5"));
  // The optional mask: bool or q's dtype, broadcast to the scores.
  rows.push_back(valid(sdpa, {f32({2, 5, 7}), f32({2, 6, 7}), f32({2, 6, 3}), boolean({5, 6})},
                       scale, f32({2, 5, 3})));
  rows.push_back(valid(sdpa, {f16({5, 7}), f16({6, 7}), f16({6, 3}), f16({1, 6})}, scale,
                       f16({5, 3})));
  rows.push_back(invalid(sdpa, {f32({5, 7}), f32({6, 7}), f32({6, 3}), f16({5, 6})}, scale,
                         "scaled_dot_product_attention: the mask f16[5,6] must be bool (true "
                         "attends) or f32 (added to the scores)"));
  rows.push_back(invalid(sdpa, {f32({5, 7}), f32({6, 7}), f32({6, 3}), f32({5, 5})}, scale,
                         "scaled_dot_product_attention: the mask f32[5,5] does not broadcast to "
                         "the scores [5,6]"));
}

// ---- Data movement ----------------------------------------------------------------------------
void addMovementRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(Reshape, {f32({3, 5, 7})}, {{"shape", Ints{5, 21}}}, f32({5, 21})));
  rows.push_back(valid(Reshape, {i8({1, 1})}, {{"shape", Ints{}}}, i8({})));
  rows.push_back(valid(Reshape, {f32({0, 3})}, {{"shape", Ints{5, 0}}}, f32({5, 0})));
  rows.push_back(invalid(Reshape, {f32({3, 5})}, {{"shape", Ints{7, 2}}},
                         "reshape: cannot reshape f32[3,5] (15 elements) to [7,2] (14 elements)"));
  rows.push_back(invalid(Reshape, {f32({3, 5})}, {{"shape", Ints{-1, 5}}},
                         "reshape: shape [-1,5] has a negative dimension"));
  rows.push_back(wrongCount(Reshape, 2, "reshape: expects 1 operand, got 2"));

  rows.push_back(valid(Transpose, {f32({3, 5, 7})}, {{"perm", Ints{2, 0, 1}}}, f32({7, 3, 5})));
  rows.push_back(valid(Transpose, {i32({3, 5})}, {{"perm", Ints{1, 0}}}, i32({5, 3})));
  rows.push_back(valid(Transpose, {f32({})}, {{"perm", Ints{}}}, f32({})));
  rows.push_back(invalid(Transpose, {f32({3, 5, 7})}, {{"perm", Ints{0, 0, 1}}},
                         "transpose: perm [0,0,1] is not a permutation of rank 3"));
  rows.push_back(invalid(Transpose, {f32({3, 5, 7})}, {{"perm", Ints{1, 0}}},
                         "transpose: perm [1,0] is not a permutation of rank 3"));
  rows.push_back(invalid(Transpose, {f32({3, 5, 7})}, {{"perm", Ints{0, 1, 3}}},
                         "transpose: perm [0,1,3] is not a permutation of rank 3"));
  rows.push_back(invalid(Transpose, {f32({3, 5, 7})}, {{"perm", Ints{-1, 0, 1}}},
                         "transpose: perm [-1,0,1] is not a permutation of rank 3"));
  rows.push_back(wrongCount(Transpose, 0, "transpose: expects 1 operand, got 0"));

  rows.push_back(valid(BroadcastTo, {f32({5, 1})}, {{"shape", Ints{3, 5, 7}}}, f32({3, 5, 7})));
  rows.push_back(valid(BroadcastTo, {i32({})}, {{"shape", Ints{3}}}, i32({3})));
  rows.push_back(valid(BroadcastTo, {f32({1, 3})}, {{"shape", Ints{0, 3}}}, f32({0, 3})));
  rows.push_back(invalid(BroadcastTo, {f32({3})}, {{"shape", Ints{5}}},
                         "broadcast_to: cannot broadcast f32[3] to [5]"));
  rows.push_back(invalid(BroadcastTo, {f32({1, 3})}, {{"shape", Ints{3}}},
                         "broadcast_to: cannot broadcast f32[1,3] to [3]"));
  rows.push_back(invalid(BroadcastTo, {f32({3})}, {{"shape", Ints{-3}}},
                         "broadcast_to: shape [-3] has a negative dimension"));
  rows.push_back(wrongCount(BroadcastTo, 2, "broadcast_to: expects 1 operand, got 2"));

  // Axis 0: 1, 4, 7, 10; axis 1: 4, 5, 6; axis 2: 0, 2, 4.
  rows.push_back(valid(Slice, {f32({11, 7, 5})},
                       {{"starts", Ints{1, -3, 0}}, {"stops", Ints{100, 7, 5}}, {"steps", Ints{3, 1, 2}}},
                       f32({4, 3, 3})));
  rows.push_back(valid(Slice, {f32({7, 5})},
                       {{"starts", Ints{-100, 4}}, {"stops", Ints{-2, 2}}, {"steps", Ints{2, 1}}},
                       f32({3, 0})));
  rows.push_back(invalid(Slice, {f32({7, 5})},
                         {{"starts", Ints{0, 0}}, {"stops", Ints{7, 5}}, {"steps", Ints{1, 0}}},
                         "slice: steps entries must be >= 1, got 0"));
  rows.push_back(invalid(Slice, {f32({7, 5})},
                         {{"starts", Ints{0, 0}}, {"stops", Ints{7, 5}}, {"steps", Ints{-1, 1}}},
                         "slice: steps entries must be >= 1, got -1"));
  rows.push_back(invalid(Slice, {f32({7, 5})},
                         {{"starts", Ints{0}}, {"stops", Ints{7, 5}}, {"steps", Ints{1, 1}}},
                         "slice: starts must have 2 entries (one per axis), got 1"));
  rows.push_back(wrongCount(Slice, 2, "slice: expects 1 operand, got 2"));

  rows.push_back(valid(Concat, {f32({3, 5}), f32({3, 7}), f32({3, 1})}, {{"axis", int64_t{-1}}},
                       f32({3, 13})));
  rows.push_back(valid(Concat, {i8({1, 5}), i8({3, 5})}, {{"axis", int64_t{0}}}, i8({4, 5})));
  rows.push_back(valid(Concat, {f32({3, 5})}, {{"axis", int64_t{0}}}, f32({3, 5})));
  rows.push_back(invalid(Concat, {f32({3, 5}), f32({5, 5})}, {{"axis", int64_t{1}}},
                         "concat: operand 1 f32[5,5] does not match operand 0 f32[3,5] outside "
                         "axis 1"));
  rows.push_back(invalid(Concat, {f32({3, 5}), f32({3, 5, 1})}, {{"axis", int64_t{0}}},
                         "concat: operand 1 f32[3,5,1] does not match operand 0 f32[3,5] outside "
                         "axis 0"));
  rows.push_back(invalid(Concat, {f32({3, 5}), f32({3, 5})}, {{"axis", int64_t{2}}},
                         "concat: axis 2 is out of range for rank 2"));
  rows.push_back(invalid(Concat, {f32({3, 5}), f32({3, 5})}, {{"axis", int64_t{-3}}},
                         "concat: axis -3 is out of range for rank 2"));
  rows.push_back(invalid(Concat, {f32({}), f32({})}, {{"axis", int64_t{0}}},
                         "concat: axis 0 is out of range for rank 0"));
  rows.push_back(invalid(Concat, {f32({3, 5}), i32({3, 5})}, {{"axis", int64_t{0}}},
                         "concat: operands must have the same dtype, got f32 and i32 (insert a "
                         "cast)"));
  rows.push_back(wrongCount(Concat, 0, "concat: expects at least 1 operand, got 0"));

  rows.push_back(valid(Pad, {f32({3, 5})}, {{"low", Ints{1, 0}}, {"high", Ints{0, 2}}}, f32({4, 7})));
  rows.push_back(valid(Pad, {i32({})}, {{"low", Ints{}}, {"high", Ints{}}, {"value", -1.0}}, i32({})));
  rows.push_back(invalid(Pad, {f32({3, 5})}, {{"low", Ints{-1, 0}}, {"high", Ints{0, 2}}},
                         "pad: low entries must be >= 0, got -1"));
  rows.push_back(invalid(Pad, {f32({3, 5})}, {{"low", Ints{1, 0}}, {"high", Ints{2}}},
                         "pad: high must have 2 entries, got 1"));
  rows.push_back(wrongCount(Pad, 2, "pad: expects 1 operand, got 2"));

  rows.push_back(valid(Gather, {f32({7, 5}), i64({3, 9})}, {}, f32({3, 9, 5})));
  rows.push_back(valid(Gather, {f32({3, 5, 7}), i32({11})}, {{"axis", int64_t{-1}}}, f32({3, 5, 11})));
  rows.push_back(valid(Gather, {f16({3, 5, 7}), i8({})}, {{"axis", int64_t{1}}}, f16({3, 7})));
  rows.push_back(invalid(Gather, {f32({7, 5}), f32({3})}, {},
                         "gather: indices must be an integer dtype, got f32"));
  rows.push_back(invalid(Gather, {f32({7, 5}), boolean({3})}, {},
                         "gather: indices must be an integer dtype, got bool"));
  rows.push_back(invalid(Gather, {f32({7, 5}), i64({3})}, {{"axis", int64_t{2}}},
                         "gather: axis 2 is out of range for rank 2"));
  rows.push_back(invalid(Gather, {f32({}), i64({3})}, {},
                         "gather: data must have rank >= 1, got f32[]"));
  rows.push_back(wrongCount(Gather, 1, "gather: expects 2 operands, got 1"));

  rows.push_back(valid(TakeAlongAxis, {f32({3, 5, 7}), i64({3, 9, 7})}, {{"axis", int64_t{1}}},
                       f32({3, 9, 7})));
  rows.push_back(valid(TakeAlongAxis, {f32({3, 5}), i32({3, 1})}, {{"axis", int64_t{-1}}},
                       f32({3, 1})));
  rows.push_back(invalid(TakeAlongAxis, {f32({3, 5, 7}), i64({3, 9, 5})}, {{"axis", int64_t{1}}},
                         "take_along_axis: indices i64[3,9,5] must match data f32[3,5,7] on every "
                         "axis but 1"));
  rows.push_back(invalid(TakeAlongAxis, {f32({3, 5, 7}), i64({3, 5})}, {{"axis", int64_t{1}}},
                         "take_along_axis: indices i64[3,5] must have the rank of data f32[3,5,7] "
                         "(>= 1)"));
  rows.push_back(invalid(TakeAlongAxis, {f32({3, 5}), f32({3, 5})}, {{"axis", int64_t{1}}},
                         "take_along_axis: indices must be an integer dtype, got f32"));
  rows.push_back(invalid(TakeAlongAxis, {f32({3, 5, 7}), i64({3, 5, 7})}, {{"axis", int64_t{3}}},
                         "take_along_axis: axis 3 is out of range for rank 3"));
  rows.push_back(wrongCount(TakeAlongAxis, 3, "take_along_axis: expects 2 operands, got 3"));

  rows.push_back(valid(Squeeze, {f32({1, 5, 1, 7})}, {{"axes", Ints{0, -2}}}, f32({5, 7})));
  rows.push_back(valid(Squeeze, {i32({1})}, {{"axes", Ints{0}}}, i32({})));
  rows.push_back(valid(Squeeze, {f32({3, 5})}, {{"axes", Ints{}}}, f32({3, 5})));
  rows.push_back(invalid(Squeeze, {f32({3, 5})}, {{"axes", Ints{0}}},
                         "squeeze: axis 0 of f32[3,5] has size 3, not 1"));
  rows.push_back(invalid(Squeeze, {f32({1, 5})}, {{"axes", Ints{2}}},
                         "squeeze: axes entry 2 is out of range for rank 2"));
  rows.push_back(invalid(Squeeze, {f32({1, 5})}, {{"axes", Ints{0, -2}}},
                         "squeeze: axes names axis 0 twice"));
  rows.push_back(wrongCount(Squeeze, 2, "squeeze: expects 1 operand, got 2"));

  rows.push_back(valid(Unsqueeze, {f32({3, 5})}, {{"axes", Ints{0, -1}}}, f32({1, 3, 5, 1})));
  rows.push_back(valid(Unsqueeze, {f32({3, 5})}, {{"axes", Ints{1}}}, f32({3, 1, 5})));
  rows.push_back(valid(Unsqueeze, {i64({})}, {{"axes", Ints{0}}}, i64({1})));
  rows.push_back(invalid(Unsqueeze, {f32({3, 5})}, {{"axes", Ints{1, 1}}},
                         "unsqueeze: axes names axis 1 twice (axes are positions in the result: "
                         "f32[3,5] plus 2 new axes)"));
  rows.push_back(invalid(Unsqueeze, {f32({3, 5})}, {{"axes", Ints{0, 4}}},
                         "unsqueeze: axes entry 4 is out of range for rank 4 (axes are positions in "
                         "the result: f32[3,5] plus 2 new axes)"));
  rows.push_back(wrongCount(Unsqueeze, 0, "unsqueeze: expects 1 operand, got 0"));

  AttrMap iota{{"shape", Ints{3, 5}}, {"axis", int64_t{-1}}, {"dtype", DType::I32}};
  rows.push_back(valid(Iota, {}, iota, i32({3, 5})));
  rows.push_back(valid(Iota, {}, {{"shape", Ints{7}}, {"axis", int64_t{0}}, {"dtype", DType::F16}},
                       f16({7})));
  rows.push_back(invalid(Iota, {}, {{"shape", Ints{3, 5}}, {"axis", int64_t{0}}, {"dtype", DType::Bool}},
                         "iota: dtype must be numeric, got bool"));
  rows.push_back(invalid(Iota, {}, {{"shape", Ints{3, 5}}, {"axis", int64_t{2}}, {"dtype", DType::I32}},
                         "iota: axis 2 is out of range for rank 2"));
  rows.push_back(invalid(Iota, {}, {{"shape", Ints{3, -5}}, {"axis", int64_t{0}}, {"dtype", DType::I32}},
                         "iota: shape [3,-5] has a negative dimension"));
  rows.push_back(wrongCount(Iota, 1, "iota: expects 0 operands, got 1"));

  using Sizes = std::vector<SizeExpr>;
  SizeExpr n = SizeExpr::symbol({"N", 1, 8});
  rows.push_back(valid(SymbolSize, {}, {{"size", Sizes{n}}, {"dtype", DType::F32}}, f32({})));
  // A gather reads along a static axis; its indices' symbolic sizes pass through.
  TensorType ids = makeTensorType(DType::I64, {n, SizeExpr(3)}).value();
  rows.push_back(valid(Gather, {f32({10, 4}), ids}, {{"axis", int64_t{0}}},
                       makeTensorType(DType::F32, {n, SizeExpr(3), SizeExpr(4)}).value()));
  rows.push_back(invalid(Gather, {makeTensorType(DType::F32, {n, SizeExpr(4)}).value(), ids},
                         {{"axis", int64_t{0}}},
                         "gather: axis 0 of data f32[N,4] is the symbolic size N: a gather "
                         "reads along a static axis"));
  // A slice takes a symbolic axis whole, and refuses to cut it.
  TensorType batchRows = makeTensorType(DType::F32, {n, SizeExpr(6)}).value();
  rows.push_back(valid(Slice, {batchRows},
                       {{"starts", Ints{0, 2}}, {"stops", Ints{8, 6}}, {"steps", Ints{1, 2}}},
                       makeTensorType(DType::F32, {n, SizeExpr(2)}).value()));
  rows.push_back(invalid(Slice, {batchRows},
                         {{"starts", Ints{1, 0}}, {"stops", Ints{8, 6}}, {"steps", Ints{1, 1}}},
                         "slice: axis 0 of f32[N,6] is the symbolic size N: a slice takes it "
                         "whole (start 0, step 1, stop >= 8), got start 1, stop 8, step 1"));
  rows.push_back(valid(SymbolSize, {}, {{"size", Sizes{SizeExpr(3)}}, {"dtype", DType::I64}},
                       TensorType{DType::I64, {}}));
  rows.push_back(invalid(SymbolSize, {}, {{"size", Sizes{n, SizeExpr(3)}}, {"dtype", DType::F32}},
                         "symbol_size: size must hold one size, got [N,3]"));
  rows.push_back(invalid(SymbolSize, {}, {{"size", Sizes{n}}, {"dtype", DType::Bool}},
                         "symbol_size: dtype must be numeric, got bool"));
  rows.push_back(wrongCount(SymbolSize, 1, "symbol_size: expects 0 operands, got 1"));

  rows.push_back(valid(Constant, {},
                       {{"shape", Ints{3, 5}}, {"dtype", DType::F32}, {"value", Floats{2.5}}},
                       f32({3, 5})));
  rows.push_back(valid(Constant, {},
                       {{"shape", Ints{3}}, {"dtype", DType::I32}, {"value", Floats{1, 2, 3}}},
                       i32({3})));
  rows.push_back(valid(Constant, {},
                       {{"shape", Ints{}}, {"dtype", DType::Bool}, {"value", Floats{1}}},
                       boolean({})));
  rows.push_back(invalid(Constant, {},
                         {{"shape", Ints{3, 5}}, {"dtype", DType::F32}, {"value", Floats{1, 2, 3}}},
                         "constant: value has 3 entries; shape [3,5] needs 1 (a splat) or 15"));
  rows.push_back(invalid(Constant, {},
                         {{"shape", Ints{3}}, {"dtype", DType::F32}, {"value", Floats{}}},
                         "constant: value has 0 entries; shape [3] needs 1 (a splat) or 3"));
  rows.push_back(invalid(Constant, {},
                         {{"shape", Ints{-3}}, {"dtype", DType::F32}, {"value", Floats{1}}},
                         "constant: shape [-3] has a negative dimension"));
  rows.push_back(wrongCount(Constant, 1, "constant: expects 0 operands, got 1"));
}

// ---- Collective -------------------------------------------------------------------------------
void addCollectiveRows(Rows &rows) {
  using enum OpKind;
  rows.push_back(valid(AllReduce, {f32({3, 5})}, {}, f32({3, 5})));
  rows.push_back(valid(AllReduce, {i32({7})}, {{"op", std::string("sum")}}, i32({7})));
  rows.push_back(valid(AllReduce, {f16({2})}, {{"op", std::string("mean")}}, f16({2})));
  rows.push_back(invalid(AllReduce, {f32({3})}, {{"op", std::string("max")}},
                         "all_reduce: op must be \"sum\" or \"mean\", got \"max\""));
  rows.push_back(invalid(AllReduce, {i32({3})}, {{"op", std::string("mean")}},
                         "all_reduce: op \"mean\" needs a floating-point operand, got i32"));
  rows.push_back(invalid(AllReduce, {boolean({3})}, {}, "all_reduce: operand 0 must be numeric, got bool"));
  rows.push_back(wrongCount(AllReduce, 2, "all_reduce: expects 1 operand, got 2"));
}

const Rows &allRows() {
  static const Rows rows = [] {
    Rows built;
    addUnaryRows(built);
    addCompositeElementwiseRows(built);
    addBinaryRows(built);
    addReductionRows(built);
    addContractionRows(built);
    addCompositeRows(built);
    addMovementRows(built);
    addCollectiveRows(built);
    return built;
  }();
  return rows;
}

std::string describe(const Row &row) {
  std::string operands;
  for (const TensorType &type : row.operands)
    operands += (operands.empty() ? "" : ", ") + type.str();
  return std::string(opName(row.op)) + "(" + operands + ") from line " + std::to_string(row.line);
}

} // namespace

TEST_CASE("every row infers its exact type or fails with its exact message", "[infer-per-op]") {
  for (const Row &row : allRows()) {
    INFO(describe(row));
    AttrMap attrs = row.attrs;
    Expected<TensorType> result = inferResultType(row.op, row.operands, attrs);
    if (row.kind == RowKind::Valid) {
      if (!result) {
        FAIL_CHECK("unexpected error: " << result.error().message());
        continue;
      }
      CHECK(result->str() == row.type.str());
      CHECK(*result == row.type);
      continue;
    }
    if (result) {
      FAIL_CHECK("accepted, inferred " << result->str() << "; expected: " << row.message);
      continue;
    }
    const std::string &message = result.error().message();
    // Every inference error starts with the op's name.
    CHECK_THAT(message, Catch::StartsWith(std::string(opName(row.op)) + ": "));
    CHECK(message == row.message);
  }
}

TEST_CASE("every row's operand count matches what the row tests", "[infer-per-op]") {
  // A semantic row that tripped over the count check would pass for the wrong reason.
  for (const Row &row : allRows()) {
    INFO(describe(row));
    const OpInfo &info = opInfo(row.op);
    int count = static_cast<int>(row.operands.size());
    bool countOk =
        count >= info.minOperands && (info.maxOperands < 0 || count <= info.maxOperands);
    CHECK(countOk == (row.kind != RowKind::WrongCount));
  }
}

TEST_CASE("every op in the table has a valid, an invalid and a wrong-count row",
          "[infer-per-op]") {
  std::string missing;
  for (const OpInfo &info : allOps()) {
    bool hasValid = false, hasInvalid = false, hasWrongCount = false;
    for (const Row &row : allRows()) {
      if (row.op != info.kind)
        continue;
      hasValid = hasValid || row.kind == RowKind::Valid;
      hasInvalid = hasInvalid || row.kind == RowKind::Invalid;
      hasWrongCount = hasWrongCount || row.kind == RowKind::WrongCount;
    }
    if (!hasValid)
      missing += " " + std::string(info.name) + " (no valid row)";
    if (!hasInvalid)
      missing += " " + std::string(info.name) + " (no invalid row)";
    if (!hasWrongCount)
      missing += " " + std::string(info.name) + " (no wrong-count row)";
  }
  INFO("ops missing rows:" << missing);
  CHECK(missing.empty());
}
