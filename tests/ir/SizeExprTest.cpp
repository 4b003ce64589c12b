// SizeExpr: canonical form, arithmetic, floor division, bounds, evaluation,
// the text form and overflow errors.
#include "ir/graph/SizeExpr.h"
#include "ir/graph/TensorType.h"

#include <catch2/catch.hpp>

using namespace kiln;
using namespace kiln::ir;

namespace {

const SizeSymbol kN{"N", 1, 256};
const SizeSymbol kT{"T", 4, 64};

SizeExpr n() { return SizeExpr::symbol(kN); }
SizeExpr t() { return SizeExpr::symbol(kT); }

SizeExpr sum(const SizeExpr &a, const SizeExpr &b) { return *add(a, b); }
SizeExpr difference(const SizeExpr &a, const SizeExpr &b) { return *subtract(a, b); }
SizeExpr product(const SizeExpr &a, const SizeExpr &b) { return *multiply(a, b); }
SizeExpr quotient(const SizeExpr &a, int64_t d) { return *floorDiv(a, d); }

std::optional<SizeSymbol> lookup(std::string_view name) {
  if (name == "N")
    return kN;
  if (name == "T")
    return kT;
  return std::nullopt;
}

SizeExpr parsed(std::string_view text) {
  auto expr = parseSizeExpr(text, lookup);
  INFO(text);
  REQUIRE(expr.has_value());
  return *expr;
}

std::string parseError(std::string_view text) {
  auto expr = parseSizeExpr(text, lookup);
  REQUIRE_FALSE(expr.has_value());
  return expr.error().str();
}

} // namespace

TEST_CASE("equal sizes compare equal structurally", "[ir][size]") {
  CHECK(product(n(), SizeExpr(784)) == product(SizeExpr(784), n()));
  CHECK(sum(n(), n()) == product(SizeExpr(2), n()));
  CHECK(product(n(), t()) == product(t(), n()));
  CHECK(sum(sum(n(), t()), SizeExpr(3)) == sum(SizeExpr(3), sum(t(), n())));
  CHECK(difference(n(), n()) == SizeExpr(0));
  CHECK(difference(n(), n()).isConstant());
  CHECK(product(sum(n(), SizeExpr(1)), sum(n(), SizeExpr(-1))) ==
        difference(product(n(), n()), SizeExpr(1)));
  CHECK(n() != t());
  CHECK(n() != SizeExpr(256));
  CHECK(product(n(), SizeExpr(2)) != product(n(), SizeExpr(3)));
}

TEST_CASE("floor division reduces to canonical form", "[ir][size]") {
  // Multiples of the divisor move out of the division.
  CHECK(quotient(product(n(), SizeExpr(4)), 2) == product(n(), SizeExpr(2)));
  CHECK(quotient(sum(product(n(), SizeExpr(4)), SizeExpr(1)), 2) == product(n(), SizeExpr(2)));
  // Nested divisions merge; a common factor cancels.
  CHECK(quotient(quotient(t(), 2), 3) == quotient(t(), 6));
  CHECK(quotient(product(t(), SizeExpr(2)), 6) == quotient(t(), 3));
  // (T-3)/2+1 and (T-1)/2 are the same size.
  SizeExpr window = sum(quotient(difference(t(), SizeExpr(3)), 2), SizeExpr(1));
  CHECK(window == quotient(difference(t(), SizeExpr(1)), 2));
  CHECK(quotient(SizeExpr(7), 2) == SizeExpr(3));
  CHECK(quotient(SizeExpr(-7), 2) == SizeExpr(-4));
  CHECK(*ceilDiv(SizeExpr(7), 2) == SizeExpr(4));
  CHECK(*ceilDiv(t(), 4) == quotient(sum(t(), SizeExpr(3)), 4));
  CHECK_FALSE(floorDiv(t(), 0).has_value());
  CHECK_FALSE(floorDiv(t(), -2).has_value());
}

TEST_CASE("evaluate binds every symbol", "[ir][size]") {
  SizeExpr window = sum(quotient(difference(t(), SizeExpr(3)), 2), SizeExpr(1));
  for (int64_t value : {4, 5, 6, 7, 31, 64})
    CHECK(*window.evaluate({{"T", value}}) == (value - 3) / 2 + 1);
  SizeExpr mixed = sum(product(n(), t()), SizeExpr(-2));
  CHECK(*mixed.evaluate({{"N", 7}, {"T", 5}}) == 33);
  auto missing = mixed.evaluate({{"N", 7}});
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message() == "size N*T-2 needs a value for the symbol T");
}

TEST_CASE("bounds over the symbols' ranges", "[ir][size]") {
  CHECK(n().lowerBound() == 1);
  CHECK(n().upperBound() == 256);
  SizeExpr rows = product(n(), SizeExpr(784));
  CHECK(rows.upperBound() == 256 * 784);
  CHECK(rows.lowerBound() == 784);
  SizeExpr window = quotient(difference(t(), SizeExpr(1)), 2);
  CHECK(window.lowerBound() == 1);
  CHECK(window.upperBound() == 31);
  SizeExpr shrink = difference(t(), SizeExpr(5));
  CHECK(shrink.lowerBound() == -1);
  // An expanded product keeps exact bounds: (a-1)^2*3 for a = (T+1)/2 in [2, 32].
  SizeExpr a = difference(quotient(sum(t(), SizeExpr(1)), 2), SizeExpr(1));
  SizeExpr square = product(product(a, a), SizeExpr(3));
  CHECK(square.str() == "3-((T+1)/2)*6+((T+1)/2)*((T+1)/2)*3");
  CHECK(square.lowerBound() == 3);
  CHECK(square.upperBound() == 3 * 31 * 31);
  CHECK(product(n(), t()).upperBound() == 256 * 64);
  CHECK(difference(SizeExpr(300), n()).lowerBound() == 44);
  CHECK(SizeExpr(5).upperBound() == 5);
}

TEST_CASE("text form round-trips", "[ir][size]") {
  std::vector<SizeExpr> sizes = {
      SizeExpr(12),
      SizeExpr(-3),
      n(),
      product(n(), SizeExpr(784)),
      sum(product(n(), SizeExpr(20)), SizeExpr(3)),
      difference(SizeExpr(5), n()),
      product(n(), t()),
      product(n(), n()),
      quotient(t(), 2),
      sum(quotient(difference(t(), SizeExpr(3)), 2), SizeExpr(1)),
      product(n(), quotient(t(), 2)),
      product(quotient(sum(t(), SizeExpr(1)), 4), SizeExpr(3)),
      difference(SizeExpr(0), product(n(), SizeExpr(2))),
  };
  for (const SizeExpr &size : sizes) {
    INFO(size.str());
    CHECK(parsed(size.str()) == size);
  }
  CHECK(product(n(), SizeExpr(784)).str() == "N*784");
  CHECK(sum(quotient(difference(t(), SizeExpr(3)), 2), SizeExpr(1)).str() == "(T+1)/2-1");
  CHECK(product(n(), quotient(t(), 2)).str() == "N*(T/2)");
  CHECK(difference(SizeExpr(5), n()).str() == "5-N");
  CHECK(parsed("784*N") == parsed("N*784"));
  CHECK(parsed("N - 3") == parsed("N-3"));
  CHECK(parsed("(T-3)/2+1") == parsed("(T-1)/2"));
  CHECK(parsed("-N+N") == SizeExpr(0));
}

TEST_CASE("parse errors name the problem and the column", "[ir][size]") {
  CHECK(parseError("N*M") == "<size>:1:3: undeclared size symbol 'M' (declare it in the graph "
                             "header, e.g. graph @g(M in [1, 64]))");
  CHECK(parseError("T/0") ==
        "<size>:1:3: a size divides only by a positive integer (floor division), got '0'");
  CHECK(parseError("T/N") ==
        "<size>:1:3: a size divides only by a positive integer (floor division), got 'N'");
  CHECK(parseError("(N+1") == "<size>:1:5: expected ')' in a size expression, got end of input");
  CHECK(parseError("N 2") == "<size>:1:3: unexpected '2' after the size N");
}

TEST_CASE("overflow is an error, not a wrapped size", "[ir][size]") {
  SizeExpr big = product(n(), SizeExpr(int64_t{1} << 40));
  CHECK_FALSE(multiply(big, big).has_value()); // the coefficient 2^80
  CHECK_FALSE(multiply(SizeExpr(int64_t{1} << 40), SizeExpr(int64_t{1} << 40)).has_value());
  CHECK_FALSE(add(SizeExpr(INT64_MAX), SizeExpr(1)).has_value());
  SizeSymbol huge{"H", 1, int64_t{1} << 40};
  SizeExpr h = SizeExpr::symbol(huge);
  SizeExpr hh = product(h, h);
  auto bounds = hh.bounds();
  REQUIRE_FALSE(bounds.has_value());
  CHECK(bounds.error().message().find("overflows 64 bits") != std::string::npos);
  CHECK_FALSE(hh.evaluate({{"H", int64_t{1} << 40}}).has_value());
  CHECK(*hh.evaluate({{"H", 3}}) == 9);
}

TEST_CASE("symbols, bare symbols and types built from sizes", "[ir][size]") {
  SizeExpr mixed = sum(product(t(), n()), quotient(t(), 2));
  std::vector<SizeSymbol> symbols = mixed.symbols();
  REQUIRE(symbols.size() == 2);
  CHECK(symbols[0] == kN);
  CHECK(symbols[1] == kT);
  CHECK(n().asSymbol() == kN);
  CHECK_FALSE(product(n(), SizeExpr(2)).asSymbol().has_value());
  CHECK_FALSE(SizeExpr(3).asSymbol().has_value());

  auto type = makeTensorType(DType::F32, {n(), SizeExpr(784)});
  REQUIRE(type.has_value());
  CHECK(type->shape == Shape{256, 784});
  CHECK(type->str() == "f32[N,784]");
  CHECK(type->size(0) == n());
  auto staticType = makeTensorType(DType::F32, {SizeExpr(2), SizeExpr(3)});
  REQUIRE(staticType.has_value());
  CHECK_FALSE(staticType->isSymbolic());
  CHECK(*staticType == (TensorType{DType::F32, {2, 3}}));
  auto negative = makeTensorType(DType::F32, {difference(n(), SizeExpr(2))});
  REQUIRE_FALSE(negative.has_value());
  CHECK(negative.error().message() ==
        "size N-2 can be negative: its least value over the symbols' ranges is -1");
}
