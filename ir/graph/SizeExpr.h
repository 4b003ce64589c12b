// SizeExpr: a tensor dimension's size as an integer expression over symbolic
// sizes (docs/dynamic-shapes.md), in one canonical form so equal sizes compare equal.
#pragma once

#include "support/Error.h"

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::ir {

/// A named size declared on a graph with an inclusive range [min, max], min >= 0.
struct SizeSymbol {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
  bool operator==(const SizeSymbol &) const = default;
  /// "N in [1, 256]", the graph header's spelling.
  std::string str() const;
};

/// An inclusive integer interval.
struct SizeInterval {
  int64_t low = 0;
  int64_t high = 0;
};

/// The value of each symbol, by name.
using SymbolBindings = std::map<std::string, int64_t, std::less<>>;

/// An integer polynomial over atoms, where an atom is a symbol or the floor
/// division of a SizeExpr by a positive constant. Canonical: terms sorted by
/// their atoms, no zero coefficients, and floor divisions reduced (the
/// multiples of the divisor moved out, nested divisions merged), so that
/// N*784 == 784*N and N+N == 2*N structurally. Symbols compare by name: one
/// graph declares each name once, with one range, which each atom carries so
/// that bounds need no symbol table.
class SizeExpr {
public:
  /// The constant 0.
  SizeExpr() = default;
  /// A static size. Implicit: a static dimension is a constant SizeExpr.
  SizeExpr(int64_t constant) : constant_(constant) {}
  static SizeExpr symbol(const SizeSymbol &symbol);

  bool isConstant() const { return terms_.empty(); }
  /// The value of a constant expression (KILN_CHECKs isConstant()).
  int64_t constant() const;

  /// The value with every symbol bound; an error names a missing symbol or an overflow.
  Expected<int64_t> evaluate(const SymbolBindings &bindings) const;
  /// The smallest and largest value over every symbol's declared range: the
  /// extremes over the corners of the symbols' ranges, exact for the sizes
  /// shapes produce (monotone in each symbol); an error if a value can overflow.
  Expected<SizeInterval> bounds() const;
  /// bounds().high and bounds().low, for expressions already known to be in range.
  int64_t upperBound() const;
  int64_t lowerBound() const;

  /// The symbol when the expression is exactly one symbol ("N"), else nullopt.
  std::optional<SizeSymbol> asSymbol() const;

  /// Every symbol the expression mentions, sorted by name, each once.
  std::vector<SizeSymbol> symbols() const;

  /// The text form: "N*784", "(T+1)/2-1", "12". parseSizeExpr reads it back.
  std::string str() const;

  /// The expression rebuilt in another algebra (kernel IR's index arithmetic, which computes
  /// sizes at run time): `symbol` gives a symbol's value, `constant` an integer's, and `add`,
  /// `multiply`, `floorDiv` (by a positive constant) combine them, term by term.
  template <typename T> struct Algebra {
    std::function<T(const SizeSymbol &)> symbol;
    std::function<T(int64_t)> constant;
    std::function<T(T, T)> add, multiply;
    std::function<T(T, int64_t)> floorDiv;
  };
  template <typename T> T rebuild(const Algebra<T> &algebra) const {
    T total = algebra.constant(constant_);
    for (const Term &term : terms_) {
      T product = algebra.constant(term.coefficient);
      for (const Atom &atom : term.atoms)
        product = algebra.multiply(
            product, atom.numerator
                         ? algebra.floorDiv(atom.numerator->rebuild(algebra), atom.divisor)
                         : algebra.symbol(atom.symbol));
      total = algebra.add(total, product);
    }
    return total;
  }

  friend bool operator==(const SizeExpr &a, const SizeExpr &b) { return compare(a, b) == 0; }
  friend bool operator<(const SizeExpr &a, const SizeExpr &b) { return compare(a, b) < 0; }

  friend Expected<SizeExpr> add(const SizeExpr &a, const SizeExpr &b);
  friend Expected<SizeExpr> multiply(const SizeExpr &a, const SizeExpr &b);
  friend Expected<SizeExpr> floorDiv(const SizeExpr &a, int64_t divisor);

private:
  /// A symbol (numerator null) or floor(numerator / divisor).
  struct Atom {
    SizeSymbol symbol;
    std::shared_ptr<const SizeExpr> numerator;
    int64_t divisor = 1;
  };
  /// coefficient * atoms[0] * atoms[1] * ...; atoms sorted, repeated for powers.
  struct Term {
    std::vector<Atom> atoms;
    int64_t coefficient = 0;
  };

  static int compare(const SizeExpr &a, const SizeExpr &b);
  Expected<SizeInterval> intervalBounds() const;
  static int compareAtoms(const Atom &a, const Atom &b);
  static int compareAtomLists(const std::vector<Atom> &a, const std::vector<Atom> &b);
  static std::string atomStr(const Atom &atom, bool standsAlone);
  static void collectSymbols(const SizeExpr &expr, std::map<std::string, SizeSymbol> &out);
  /// Adds `term` to the sorted term list, merging a term with the same atoms.
  Expected<void> addTerm(Term term);

  std::vector<Term> terms_; // sorted by atoms
  int64_t constant_ = 0;
};

Expected<SizeExpr> add(const SizeExpr &a, const SizeExpr &b);
Expected<SizeExpr> subtract(const SizeExpr &a, const SizeExpr &b);
Expected<SizeExpr> multiply(const SizeExpr &a, const SizeExpr &b);
/// floor(a / divisor); divisor must be >= 1.
Expected<SizeExpr> floorDiv(const SizeExpr &a, int64_t divisor);
/// ceil(a / divisor) = floor((a + divisor - 1) / divisor); divisor must be >= 1.
Expected<SizeExpr> ceilDiv(const SizeExpr &a, int64_t divisor);

/// Finds a declared symbol by name; nullopt for an undeclared one.
using SymbolLookup = std::function<std::optional<SizeSymbol>(std::string_view)>;

/// Parses the text form of a size: integers, symbols, + - *, parentheses and
/// '/' by a positive integer (floor division). Errors name the column.
Expected<SizeExpr> parseSizeExpr(std::string_view text, const SymbolLookup &lookup);

} // namespace kiln::ir
