// Which operand elements a product kernel really read: the diagnosis a GPU test prints when a
// tensor-core product comes out wrong. A failed comparison says *that* D is wrong; this says
// *how*, in one run: a misread descriptor, swizzle or tensor-map box shows as a pattern of
// moves ("B's k index moves by +-8"), which the next engineer can fix without another GPU run.
//
// Method: D (rows x n) = A (m x k) times B (n x k) transposed. To read B, A is one-hot (row i
// holds a 1 at k index i + shift * m), so D[i][j] is the single element of B that the kernel
// multiplied with it. B holds a code of each element's own position, one base-16 digit per
// run (digit + 1, so 0 means "read nothing"); the digits of D name the element read. Every
// value is a small integer (at most 16), exact in bf16, f16 and e4m3, and a sum of several
// elements shows as a value no single digit gives. A is read the same way with B one-hot.
// The two reads together tell a misread operand from accumulators stored in the wrong place.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace kiln::testing {

/// D (rows x n, row-major) = A (m x k, row-major) times B (n x k, row-major) transposed; rows of
/// D past m (an A box hanging over the tensor's edge) must read as zeros.
struct ProbedProduct {
  int64_t m = 0, n = 0, k = 0, rows = 0;
};

/// Runs the kernel under test on A (m * k values) and B (n * k values); returns D (rows * n).
using ProductRun =
    std::function<std::vector<double>(const std::vector<double> &a, const std::vector<double> &b)>;

/// What one element of D read: a flat operand index (row * k + kk), or one of these.
constexpr int64_t kReadNothing = -1;  ///< D was 0: no element (or nothing was expected)
constexpr int64_t kReadSeveral = -2;  ///< not one element's code: a sum, or a wrong value
constexpr int64_t kReadNotFinite = -3; ///< NaN or infinity: D was never written

/// One element of D under one probe run set (a shift of the one-hot diagonal).
struct ProbeRead {
  int64_t row = 0, col = 0;
  int64_t wanted = kReadNothing, got = kReadNothing;
};

struct ProductReads {
  ProbedProduct shape;
  int runs = 0;
  std::vector<ProbeRead> a, b; ///< every observation of the probe reading A, and B

  static int64_t wrong(const std::vector<ProbeRead> &reads) {
    return std::ranges::count_if(reads, [](const ProbeRead &r) { return r.wanted != r.got; });
  }
};

namespace detail {

/// Base-16 digits needed for codes 0 .. count - 1.
inline int codeDigits(int64_t count) {
  int digits = 1;
  for (int64_t reach = 16; reach < count; reach *= 16)
    ++digits;
  return digits;
}

/// One probe of the operand `codedIsA` names (A, else B): it holds position codes, the other
/// operand is one-hot (its row r at k = r + shift * its rows), so each element of D reads one
/// element of the coded operand. Returns every observation, rows and columns named as D's.
inline std::vector<ProbeRead> probeOperand(const ProbedProduct &shape, bool codedIsA,
                                           const ProductRun &run, int &runs) {
  const int64_t k = shape.k;
  const int64_t codedRows = codedIsA ? shape.m : shape.n, hotRows = codedIsA ? shape.n : shape.m;
  const int digits = codeDigits(codedRows * k);
  const int64_t shifts = (k + hotRows - 1) / hotRows;
  std::vector<ProbeRead> reads;
  for (int64_t shift = 0; shift < shifts; ++shift) {
    std::vector<double> hot(size_t(hotRows * k), 0.0);
    for (int64_t r = 0; r < hotRows; ++r)
      if (r + shift * hotRows < k)
        hot[size_t(r * k + r + shift * hotRows)] = 1.0;
    std::vector<std::vector<double>> outputs;
    for (int digit = 0; digit < digits; ++digit) {
      std::vector<double> coded(size_t(codedRows * k));
      for (int64_t e = 0; e < codedRows * k; ++e)
        coded[size_t(e)] = double(((e >> (4 * digit)) & 15) + 1);
      outputs.push_back(codedIsA ? run(coded, hot) : run(hot, coded));
      ++runs;
    }
    for (int64_t i = 0; i < shape.rows; ++i)
      for (int64_t j = 0; j < shape.n; ++j) {
        const int64_t codedRow = codedIsA ? i : j, hotRow = codedIsA ? j : i;
        const bool rowExists = i < shape.m; // D rows past m read nothing in either probe
        const int64_t kk = hotRow + shift * hotRows;
        ProbeRead read{i, j, kReadNothing, 0};
        if (rowExists && kk < k)
          read.wanted = codedRow * k + kk;
        bool nothing = true, several = false, finite = true;
        for (int digit = 0; digit < digits; ++digit) {
          const double v = outputs[size_t(digit)][size_t(i * shape.n + j)];
          if (!std::isfinite(v)) {
            finite = false;
            continue;
          }
          if (v != 0)
            nothing = false;
          if (v != std::floor(v) || v < 1 || v > 16)
            several = true;
          else
            read.got += int64_t(v - 1) << (4 * digit);
        }
        if (!finite)
          read.got = kReadNotFinite;
        else if (nothing)
          read.got = kReadNothing;
        else if (several || read.got >= codedRows * k)
          read.got = kReadSeveral;
        reads.push_back(read);
      }
  }
  return reads;
}

inline std::string readName(char operand, int64_t flat, int64_t k) {
  switch (flat) {
  case kReadNothing: return "nothing";
  case kReadSeveral: return "several elements (or a wrong value)";
  case kReadNotFinite: return "NaN (never written)";
  default: return fmt::format("{}[{}][{}]", operand, flat / k, flat % k);
  }
}

/// "(row move, k move)" of a wrong read, or what it read instead of one element.
inline std::string moveName(const ProbeRead &r, int64_t k) {
  if (r.got < 0 || r.wanted < 0)
    return fmt::format("{} where {} was wanted", readName('?', r.got, k),
                       readName('?', r.wanted, k));
  return fmt::format("row {:+d}, k {:+d}", r.got / k - r.wanted / k, r.got % k - r.wanted % k);
}

inline void describeOperand(std::string &out, char operand, const std::vector<ProbeRead> &reads,
                            int64_t k, const std::function<std::string(char, int64_t)> &where) {
  const int64_t wrong = ProductReads::wrong(reads);
  if (wrong == 0) {
    out += fmt::format("  {}: all {} reads right\n", operand, reads.size());
    return;
  }
  std::map<std::string, int64_t> moves;
  for (const ProbeRead &r : reads)
    if (r.wanted != r.got)
      ++moves[moveName(r, k)];
  std::vector<std::pair<std::string, int64_t>> common(moves.begin(), moves.end());
  std::ranges::stable_sort(common, [](auto &x, auto &y) { return x.second > y.second; });
  out += fmt::format("  {}: {} of {} reads wrong; the commonest moves:", operand, wrong,
                     reads.size());
  for (size_t i = 0; i < std::min<size_t>(common.size(), 4); ++i)
    out += fmt::format("{} ({}) x{}", i ? "," : "", common[i].first, common[i].second);
  out += "\n";
  int shown = 0;
  for (const ProbeRead &r : reads) {
    if (r.wanted == r.got)
      continue;
    out += fmt::format("    D[{}][{}] read {}, wanted {}", r.row, r.col,
                       readName(operand, r.got, k), readName(operand, r.wanted, k));
    if (where && r.got >= 0 && r.wanted >= 0)
      out += fmt::format(" ({} against {})", where(operand, r.got), where(operand, r.wanted));
    out += "\n";
    if (++shown == 6)
      break;
  }
}

} // namespace detail

/// Probes which elements of A and B each element of D reads (see the file's comment).
inline ProductReads probeProductReads(const ProbedProduct &shape, const ProductRun &run) {
  ProductReads reads;
  reads.shape = shape;
  reads.a = detail::probeOperand(shape, /*codedIsA=*/true, run, reads.runs);
  reads.b = detail::probeOperand(shape, /*codedIsA=*/false, run, reads.runs);
  return reads;
}

/// Where the accumulators went, when both probes are wrong in the same elements: D[i][j] then
/// holds the product's (i2, j2), which the B probe names through its one-hot row (k index i2
/// in the first shift) and the A probe through its one-hot column (k index j2). Returns
/// (i, j, i2, j2) for each element of D both first-shift probes place consistently elsewhere.
inline std::vector<std::array<int64_t, 4>> movedAccumulators(const ProductReads &reads) {
  const ProbedProduct &s = reads.shape;
  std::vector<std::array<int64_t, 4>> moved;
  // The first shift's observations come first in each probe, rows x n of them.
  const size_t firstShift = size_t(s.rows * s.n);
  for (size_t e = 0; e < firstShift && e < reads.a.size() && e < reads.b.size(); ++e) {
    const ProbeRead &ra = reads.a[e], &rb = reads.b[e];
    if (ra.got < 0 || rb.got < 0 || (ra.got == ra.wanted && rb.got == rb.wanted))
      continue;
    const int64_t i2 = ra.got / s.k, j2 = rb.got / s.k;
    if (rb.got % s.k == i2 && ra.got % s.k == j2 && (i2 != ra.row || j2 != ra.col))
      moved.push_back({ra.row, ra.col, i2, j2});
  }
  return moved;
}

namespace detail {

/// Wrong reads that land in another row of the probed operand (not just another k index).
inline int64_t rowMoves(const std::vector<ProbeRead> &reads, int64_t k) {
  return std::ranges::count_if(reads, [k](const ProbeRead &r) {
    return r.got >= 0 && r.wanted >= 0 && r.got / k != r.wanted / k;
  });
}

/// Whether the k index a probe read instead of the wanted one varies with the operand's row
/// for the same wanted k (a row-dependent permutation such as a swizzle belongs to the
/// operand whose rows it follows; a common k permutation of both operands cannot be told
/// apart from the outputs).
inline bool kMovesFollowRows(const std::vector<ProbeRead> &reads, int64_t k) {
  std::map<int64_t, int64_t> moveOfK;
  for (const ProbeRead &r : reads) {
    if (r.got < 0 || r.wanted < 0 || r.got / k != r.wanted / k)
      continue;
    auto [it, fresh] = moveOfK.try_emplace(r.wanted % k, r.got % k - r.wanted % k);
    if (!fresh && it->second != r.got % k - r.wanted % k)
      return true;
  }
  return false;
}

} // namespace detail

/// One line naming what the pattern of wrong reads points at.
inline std::string productVerdict(const ProductReads &reads) {
  const int64_t k = reads.shape.k;
  const int64_t wrongA = ProductReads::wrong(reads.a), wrongB = ProductReads::wrong(reads.b);
  if (wrongA == 0 && wrongB == 0)
    return "every probed read is right (look past the operands: accumulation, conversion or "
           "the epilogue)";
  // A misread of A moves the one-hot in the B probe only along k (B's row is the column of
  // D), so rows moving in one probe alone name that probe's operand.
  const int64_t rowsA = detail::rowMoves(reads.a, k), rowsB = detail::rowMoves(reads.b, k);
  if (rowsA > 0 && rowsB == 0)
    return "A is misread: rows of A move (the A probe's moves are the misreading; D's rows "
           "stored permuted read the same)";
  if (rowsB > 0 && rowsA == 0)
    return "B is misread: rows of B move (the B probe's moves are the misreading; D's columns "
           "stored permuted read the same)";
  if (rowsA > 0 && rowsB > 0) {
    std::vector<std::array<int64_t, 4>> moved = movedAccumulators(reads);
    if (moved.empty())
      return "both operands are misread (rows of each move)";
    std::string out = fmt::format("accumulators stored in the wrong place ({} elements of D "
                                  "checked hold another element's product",
                                  moved.size());
    int shown = 0;
    for (const auto &[i, j, i2, j2] : moved) {
      out += fmt::format("{} D[{}][{}] holds ({}, {})", shown ? "," : ":", i, j, i2, j2);
      if (++shown == 4)
        break;
    }
    return out + ")";
  }
  const bool followA = detail::kMovesFollowRows(reads.a, k),
             followB = detail::kMovesFollowRows(reads.b, k);
  auto misplaced = [](const ProbeRead &r) { return r.got >= 0 && r.got != r.wanted; };
  if (std::ranges::none_of(reads.a, misplaced) && std::ranges::none_of(reads.b, misplaced))
    return "no element read is misplaced, but some elements of D read nothing, several "
           "elements or were never written (see the moves above)";
  if (followA != followB)
    return fmt::format("{} is misread along k: its k moves change with its row (a swizzle or "
                       "panel misreading)",
                       followA ? 'A' : 'B');
  return "A and B disagree on the order of k (a k permutation of one of them; the outputs "
         "cannot tell which)";
}

/// The report a failing test prints: each operand's wrong reads (the commonest moves, the
/// first few examples, `where` naming an element's place, e.g. its shared-memory byte), then
/// the verdict.
inline std::string
describeProductReads(const ProductReads &reads,
                     const std::function<std::string(char, int64_t)> &where = {}) {
  const ProbedProduct &s = reads.shape;
  std::string out = fmt::format("operand reads of the {}x{}x{} product, probed in {} runs:\n", s.m,
                                s.n, s.k, reads.runs);
  detail::describeOperand(out, 'A', reads.a, s.k, where);
  detail::describeOperand(out, 'B', reads.b, s.k, where);
  return out + "  verdict: " + productVerdict(reads);
}

} // namespace kiln::testing
