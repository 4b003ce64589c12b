#include "runtime/bundle/SizeCodec.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::runtime::bundle {
namespace {

enum class SizeOp : uint8_t { Constant, Symbol, Add, Multiply, FloorDiv };
constexpr uint8_t kNumSizeOps = static_cast<uint8_t>(SizeOp::FloorDiv) + 1;

/// One operation of the postfix program; `value` is the constant, the symbol's index or the
/// divisor.
struct SizeToken {
  SizeOp op;
  int64_t value = 0;
};
using SizeProgram = std::vector<SizeToken>;

/// Longer programs are corrupt: the sizes kiln's shapes produce take a few dozen operations.
constexpr uint32_t kMaxSizeTokens = 4096;
/// Nor is a size longer than this as text: products of sums expand term by term, so a short
/// program could otherwise ask for exponentially many terms.
constexpr size_t kMaxSizeText = 1024;

SizeProgram concat(SizeProgram a, const SizeProgram &b, SizeToken last) {
  a.insert(a.end(), b.begin(), b.end());
  a.push_back(last);
  return a;
}

} // namespace

void writeSymbols(ByteWriter &out, std::span<const ir::SizeSymbol> symbols) {
  out.u32(static_cast<uint32_t>(symbols.size()));
  for (const ir::SizeSymbol &symbol : symbols) {
    out.bytes(symbol.name);
    out.i64(symbol.min);
    out.i64(symbol.max);
  }
}

std::vector<ir::SizeSymbol> readSymbols(ByteReader &in) {
  std::vector<ir::SizeSymbol> symbols(in.count("the size symbol count", 24));
  for (ir::SizeSymbol &symbol : symbols) {
    symbol.name = std::string(in.bytes("a size symbol's name"));
    symbol.min = in.i64("a size symbol's least value");
    symbol.max = in.i64("a size symbol's largest value");
  }
  return symbols;
}

void writeSizeExpr(ByteWriter &out, const ir::SizeExpr &size,
                   std::span<const ir::SizeSymbol> symbols) {
  ir::SizeExpr::Algebra<SizeProgram> postfix{
      .symbol =
          [&](const ir::SizeSymbol &symbol) {
            auto found = std::ranges::find(symbols, symbol.name, &ir::SizeSymbol::name);
            KILN_CHECK(found != symbols.end(), "a plan's sizes mention only its symbols");
            return SizeProgram{{SizeOp::Symbol, found - symbols.begin()}};
          },
      .constant =
          [](int64_t value) {
            return SizeProgram{{SizeOp::Constant, value}};
          },
      .add = [](SizeProgram a, SizeProgram b) { return concat(std::move(a), b, {SizeOp::Add}); },
      .multiply = [](SizeProgram a,
                     SizeProgram b) { return concat(std::move(a), b, {SizeOp::Multiply}); },
      .floorDiv =
          [](SizeProgram a, int64_t divisor) {
            a.push_back({SizeOp::FloorDiv, divisor});
            return a;
          },
  };
  SizeProgram program = size.rebuild(postfix);
  out.u32(static_cast<uint32_t>(program.size()));
  for (const SizeToken &token : program) {
    out.u8(static_cast<uint8_t>(token.op));
    out.i64(token.value);
  }
}

ir::SizeExpr readSizeExpr(ByteReader &in, std::span<const ir::SizeSymbol> symbols) {
  uint32_t length = in.count("a size's operation count", 9);
  if (length > kMaxSizeTokens) {
    in.fail(fmt::format("a size of {} operations exceeds {}", length, kMaxSizeTokens));
    return {};
  }
  std::vector<ir::SizeExpr> stack;
  auto fail = [&](std::string message) {
    in.fail(fmt::format("malformed size: {}", message));
    return ir::SizeExpr();
  };
  for (uint32_t i = 0; i < length && in.ok(); ++i) {
    uint8_t code = in.u8("a size operation");
    int64_t value = in.i64("a size operand");
    if (!in.ok())
      break;
    if (code >= kNumSizeOps)
      return fail(fmt::format("operation code {} is unknown", code));
    auto op = static_cast<SizeOp>(code);
    Expected<ir::SizeExpr> result;
    if (op == SizeOp::Constant) {
      result = ir::SizeExpr(value);
    } else if (op == SizeOp::Symbol) {
      if (value < 0 || static_cast<uint64_t>(value) >= symbols.size())
        return fail(fmt::format("symbol {} of {}", value, symbols.size()));
      result = ir::SizeExpr::symbol(symbols[static_cast<size_t>(value)]);
    } else if (op == SizeOp::FloorDiv) {
      if (stack.empty())
        return fail("a division without an operand");
      if (value < 1)
        return fail(fmt::format("a division by {}", value));
      result = ir::floorDiv(stack.back(), value);
      stack.pop_back();
    } else {
      if (stack.size() < 2)
        return fail("an operation without two operands");
      ir::SizeExpr right = std::move(stack.back());
      stack.pop_back();
      result = op == SizeOp::Add ? ir::add(stack.back(), right) : ir::multiply(stack.back(), right);
      stack.pop_back();
    }
    if (!result)
      return fail(result.error().message());
    if (op != SizeOp::Constant && op != SizeOp::Symbol && result->str().size() > kMaxSizeText)
      return fail(fmt::format("a size longer than {} characters", kMaxSizeText));
    stack.push_back(std::move(*result));
  }
  if (!in.ok())
    return {};
  if (stack.size() != 1)
    return fail(fmt::format("{} values left, not 1", stack.size()));
  return std::move(stack.back());
}

} // namespace kiln::runtime::bundle
