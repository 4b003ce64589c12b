// SizeExpr arithmetic in canonical form, bounds, evaluation and printing.
#include "ir/graph/SizeExpr.h"

#include <algorithm>
#include <fmt/format.h>
#include <numeric>

namespace kiln::ir {

namespace {

std::unexpected<Error> overflow(std::string_view what) {
  return makeError(ErrorCode::ShapeMismatch,
                   fmt::format("size expression overflows 64 bits in {}", what));
}

Expected<int64_t> checkedAdd(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_add_overflow(a, b, &out))
    return overflow(what);
  return out;
}

Expected<int64_t> checkedMul(int64_t a, int64_t b, std::string_view what) {
  int64_t out;
  if (__builtin_mul_overflow(a, b, &out))
    return overflow(what);
  return out;
}

// Floor division and its non-negative remainder, for a positive divisor.
int64_t floorQuotient(int64_t a, int64_t divisor) {
  int64_t q = a / divisor;
  return (a % divisor != 0 && a < 0) ? q - 1 : q;
}

Expected<SizeInterval> multiplyIntervals(SizeInterval a, SizeInterval b) {
  int64_t corners[4];
  int64_t pairs[4][2] = {{a.low, b.low}, {a.low, b.high}, {a.high, b.low}, {a.high, b.high}};
  for (int i = 0; i < 4; ++i) {
    KILN_TRY(corners[i], checkedMul(pairs[i][0], pairs[i][1], "a bound"));
  }
  return SizeInterval{*std::min_element(corners, corners + 4),
                      *std::max_element(corners, corners + 4)};
}

} // namespace

std::string SizeSymbol::str() const { return fmt::format("{} in [{}, {}]", name, min, max); }

SizeExpr SizeExpr::symbol(const SizeSymbol &symbol) {
  SizeExpr out;
  out.terms_.push_back(Term{{Atom{symbol, nullptr, 1}}, 1});
  return out;
}

int64_t SizeExpr::constant() const {
  KILN_CHECK(isConstant(), "constant() of the symbolic size " + str());
  return constant_;
}

// ---- Ordering -----------------------------------------------------------------------------------

int SizeExpr::compareAtoms(const Atom &a, const Atom &b) {
  bool aDiv = a.numerator != nullptr, bDiv = b.numerator != nullptr;
  if (aDiv != bDiv)
    return aDiv ? 1 : -1; // symbols before divisions
  if (!aDiv)
    return a.symbol.name.compare(b.symbol.name) < 0 ? -1 : (a.symbol.name == b.symbol.name ? 0 : 1);
  if (a.divisor != b.divisor)
    return a.divisor < b.divisor ? -1 : 1;
  return compare(*a.numerator, *b.numerator);
}

int SizeExpr::compareAtomLists(const std::vector<Atom> &a, const std::vector<Atom> &b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (int c = compareAtoms(a[i], b[i]))
      return c;
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

int SizeExpr::compare(const SizeExpr &a, const SizeExpr &b) {
  for (size_t i = 0; i < std::min(a.terms_.size(), b.terms_.size()); ++i) {
    if (int c = compareAtomLists(a.terms_[i].atoms, b.terms_[i].atoms))
      return c;
    if (a.terms_[i].coefficient != b.terms_[i].coefficient)
      return a.terms_[i].coefficient < b.terms_[i].coefficient ? -1 : 1;
  }
  if (a.terms_.size() != b.terms_.size())
    return a.terms_.size() < b.terms_.size() ? -1 : 1;
  return a.constant_ == b.constant_ ? 0 : (a.constant_ < b.constant_ ? -1 : 1);
}

// ---- Arithmetic ---------------------------------------------------------------------------------

Expected<void> SizeExpr::addTerm(Term term) {
  auto it = std::lower_bound(terms_.begin(), terms_.end(), term, [](const Term &x, const Term &y) {
    return compareAtomLists(x.atoms, y.atoms) < 0;
  });
  if (it != terms_.end() && compareAtomLists(it->atoms, term.atoms) == 0) {
    KILN_TRY(it->coefficient, checkedAdd(it->coefficient, term.coefficient, "a sum"));
    if (it->coefficient == 0)
      terms_.erase(it);
  } else if (term.coefficient != 0) {
    terms_.insert(it, std::move(term));
  }
  return {};
}

Expected<SizeExpr> add(const SizeExpr &a, const SizeExpr &b) {
  SizeExpr out = a;
  KILN_TRY(out.constant_, checkedAdd(a.constant_, b.constant_, "a sum"));
  for (const SizeExpr::Term &term : b.terms_)
    KILN_TRY_VOID(out.addTerm(term));
  return out;
}

Expected<SizeExpr> subtract(const SizeExpr &a, const SizeExpr &b) {
  KILN_TRY(SizeExpr negated, multiply(b, SizeExpr(-1)));
  return add(a, negated);
}

Expected<SizeExpr> multiply(const SizeExpr &a, const SizeExpr &b) {
  using Term = SizeExpr::Term;
  // Each side as terms, its constant included as a term with no atoms.
  auto withConstant = [](const SizeExpr &e) {
    std::vector<Term> terms = e.terms_;
    if (e.constant_ != 0)
      terms.push_back(Term{{}, e.constant_});
    return terms;
  };
  SizeExpr out;
  for (const Term &x : withConstant(a)) {
    for (const Term &y : withConstant(b)) {
      KILN_TRY(int64_t coefficient, checkedMul(x.coefficient, y.coefficient, "a product"));
      if (x.atoms.empty() && y.atoms.empty()) {
        KILN_TRY(out.constant_, checkedAdd(out.constant_, coefficient, "a product"));
        continue;
      }
      Term term{x.atoms, coefficient};
      term.atoms.insert(term.atoms.end(), y.atoms.begin(), y.atoms.end());
      std::stable_sort(term.atoms.begin(), term.atoms.end(),
                       [](const SizeExpr::Atom &p, const SizeExpr::Atom &q) {
                         return SizeExpr::compareAtoms(p, q) < 0;
                       });
      KILN_TRY_VOID(out.addTerm(std::move(term)));
    }
  }
  return out;
}

Expected<SizeExpr> floorDiv(const SizeExpr &a, int64_t divisor) {
  if (divisor < 1)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("a size divides only by a positive constant, got {} / {}",
                                 a.str(), divisor));
  if (divisor == 1)
    return a;
  // a = divisor * quotient + rest, every coefficient of rest in [0, divisor):
  // floor(a / divisor) = quotient + floor(rest / divisor) exactly.
  SizeExpr quotient, rest;
  quotient.constant_ = floorQuotient(a.constant_, divisor);
  rest.constant_ = a.constant_ - quotient.constant_ * divisor;
  for (const SizeExpr::Term &term : a.terms_) {
    int64_t q = floorQuotient(term.coefficient, divisor);
    int64_t r = term.coefficient - q * divisor;
    if (q != 0)
      quotient.terms_.push_back(SizeExpr::Term{term.atoms, q});
    if (r != 0)
      rest.terms_.push_back(SizeExpr::Term{term.atoms, r});
  }
  if (rest.isConstant()) // 0 <= rest < divisor
    return quotient;
  // floor(floor(x / d) / divisor) = floor(x / (d * divisor)) for positive d.
  if (rest.constant_ == 0 && rest.terms_.size() == 1 && rest.terms_[0].coefficient == 1 &&
      rest.terms_[0].atoms.size() == 1 && rest.terms_[0].atoms[0].numerator) {
    const SizeExpr::Atom &inner = rest.terms_[0].atoms[0];
    int64_t merged;
    if (!__builtin_mul_overflow(inner.divisor, divisor, &merged)) {
      KILN_TRY(SizeExpr divided, floorDiv(*inner.numerator, merged));
      return add(quotient, divided);
    }
  }
  // A common factor of rest and divisor cancels: floor(g*x / (g*d)) = floor(x / d).
  int64_t common = divisor;
  for (const SizeExpr::Term &term : rest.terms_)
    common = std::gcd(common, term.coefficient);
  common = std::gcd(common, rest.constant_);
  if (common > 1) {
    for (SizeExpr::Term &term : rest.terms_)
      term.coefficient /= common;
    rest.constant_ /= common;
    divisor /= common;
  }
  SizeExpr::Atom atom;
  atom.numerator = std::make_shared<const SizeExpr>(std::move(rest));
  atom.divisor = divisor;
  SizeExpr divided;
  divided.terms_.push_back(SizeExpr::Term{{std::move(atom)}, 1});
  return add(quotient, divided);
}

Expected<SizeExpr> ceilDiv(const SizeExpr &a, int64_t divisor) {
  if (divisor < 1)
    return floorDiv(a, divisor); // the same error
  KILN_TRY(SizeExpr shifted, add(a, SizeExpr(divisor - 1)));
  return floorDiv(shifted, divisor);
}

// ---- Values -------------------------------------------------------------------------------------

Expected<int64_t> SizeExpr::evaluate(const SymbolBindings &bindings) const {
  int64_t total = constant_;
  for (const Term &term : terms_) {
    int64_t product = term.coefficient;
    for (const Atom &atom : term.atoms) {
      int64_t value;
      if (atom.numerator) {
        KILN_TRY(int64_t numerator, atom.numerator->evaluate(bindings));
        value = floorQuotient(numerator, atom.divisor);
      } else {
        auto it = bindings.find(atom.symbol.name);
        if (it == bindings.end())
          return makeError(ErrorCode::InvalidArgument,
                           fmt::format("size {} needs a value for the symbol {}", str(),
                                       atom.symbol.name));
        value = it->second;
      }
      KILN_TRY(product, checkedMul(product, value, str()));
    }
    KILN_TRY(total, checkedAdd(total, product, str()));
  }
  return total;
}

// Interval arithmetic term by term: a sound enclosure, but loose once a
// product is expanded ((a-1)^2 = a^2-2a+1 takes a's extremes independently).
Expected<SizeInterval> SizeExpr::intervalBounds() const {
  SizeInterval total{constant_, constant_};
  for (const Term &term : terms_) {
    SizeInterval product{term.coefficient, term.coefficient};
    for (const Atom &atom : term.atoms) {
      SizeInterval range{atom.symbol.min, atom.symbol.max};
      if (atom.numerator) {
        KILN_TRY(SizeInterval numerator, atom.numerator->intervalBounds());
        range = {floorQuotient(numerator.low, atom.divisor),
                 floorQuotient(numerator.high, atom.divisor)};
      }
      KILN_TRY(product, multiplyIntervals(product, range));
    }
    KILN_TRY(total.low, checkedAdd(total.low, product.low, "a bound of " + str()));
    KILN_TRY(total.high, checkedAdd(total.high, product.high, "a bound of " + str()));
  }
  return total;
}

// Shape sizes are monotone in each symbol (sums, products and windows of
// sizes), so their extremes lie at the corners of the symbols' box: evaluate
// there, which stays exact where expanded products make intervals loose. The
// interval enclosure first proves that no corner evaluation overflows.
Expected<SizeInterval> SizeExpr::bounds() const {
  KILN_TRY(SizeInterval enclosure, intervalBounds());
  std::vector<SizeSymbol> found = symbols();
  constexpr size_t kMaxCornerSymbols = 12; // 4096 evaluations
  if (found.empty() || found.size() > kMaxCornerSymbols)
    return enclosure;
  SizeInterval range{INT64_MAX, INT64_MIN};
  SymbolBindings corner;
  for (uint64_t mask = 0; mask < (uint64_t{1} << found.size()); ++mask) {
    for (size_t i = 0; i < found.size(); ++i)
      corner[found[i].name] = (mask >> i) & 1 ? found[i].max : found[i].min;
    KILN_TRY(int64_t value, evaluate(corner));
    range.low = std::min(range.low, value);
    range.high = std::max(range.high, value);
  }
  return range;
}

int64_t SizeExpr::upperBound() const {
  auto range = bounds();
  KILN_CHECK(range.has_value(), "bounds of " + str() + " overflow after verification");
  return range->high;
}

int64_t SizeExpr::lowerBound() const {
  auto range = bounds();
  KILN_CHECK(range.has_value(), "bounds of " + str() + " overflow after verification");
  return range->low;
}

std::optional<SizeSymbol> SizeExpr::asSymbol() const {
  if (constant_ != 0 || terms_.size() != 1 || terms_[0].coefficient != 1 ||
      terms_[0].atoms.size() != 1 || terms_[0].atoms[0].numerator)
    return std::nullopt;
  return terms_[0].atoms[0].symbol;
}

void SizeExpr::collectSymbols(const SizeExpr &expr, std::map<std::string, SizeSymbol> &out) {
  for (const Term &term : expr.terms_)
    for (const Atom &atom : term.atoms) {
      if (atom.numerator)
        collectSymbols(*atom.numerator, out);
      else
        out.emplace(atom.symbol.name, atom.symbol);
    }
}

std::vector<SizeSymbol> SizeExpr::symbols() const {
  std::map<std::string, SizeSymbol> found;
  collectSymbols(*this, found);
  std::vector<SizeSymbol> out;
  for (auto &[name, symbol] : found)
    out.push_back(symbol);
  return out;
}

// ---- Text ---------------------------------------------------------------------------------------

// A division prints as "N/2" or "(N+1)/2"; inside a longer product it is
// parenthesized, because "N*T/2" would read back as (N*T)/2.
std::string SizeExpr::atomStr(const Atom &atom, bool standsAlone) {
  if (!atom.numerator)
    return atom.symbol.name;
  const SizeExpr &n = *atom.numerator;
  bool bare = n.constant_ == 0 && n.terms_.size() == 1 && n.terms_[0].coefficient == 1 &&
              n.terms_[0].atoms.size() == 1 && !n.terms_[0].atoms[0].numerator;
  std::string text = (bare ? n.str() : "(" + n.str() + ")") + "/" + std::to_string(atom.divisor);
  return standsAlone ? text : "(" + text + ")";
}

std::string SizeExpr::str() const {
  if (terms_.empty())
    return std::to_string(constant_);
  std::string out;
  // A positive constant leads when the first term is negative: "5-N", not "-N+5".
  bool constantFirst = constant_ > 0 && terms_[0].coefficient < 0;
  if (constantFirst)
    out = std::to_string(constant_);
  for (const Term &term : terms_) {
    int64_t magnitude = term.coefficient < 0 ? -term.coefficient : term.coefficient;
    if (term.coefficient < 0)
      out += "-";
    else if (!out.empty())
      out += "+";
    bool alone = term.atoms.size() == 1 && magnitude == 1;
    for (size_t i = 0; i < term.atoms.size(); ++i)
      out += (i == 0 ? "" : "*") + atomStr(term.atoms[i], alone);
    if (magnitude != 1)
      out += "*" + std::to_string(magnitude);
  }
  if (!constantFirst && constant_ != 0)
    out += (constant_ > 0 ? "+" : "") + std::to_string(constant_);
  return out;
}

} // namespace kiln::ir
