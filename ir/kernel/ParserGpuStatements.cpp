// Parsing the GPU statements of kernel IR: atomics, mma, ldmatrix, cp.async, wgmma,
// mbarriers and bulk tensor copies with their tensor maps, each checked before it is built with
// the same rules its checked constructor holds it to (the *Problem functions), as errors.
#include "ir/kernel/MmaLayout.h"
#include "ir/kernel/ParserCore.h"
#include "ir/kernel/Printer.h"
#include "ir/kernel/TensorMap.h"
#include "ir/kernel/VerifierGpuStatements.h"
#include "ir/kernel/WgmmaLayout.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace kiln::kir::text {

namespace {

constexpr MmaKind kMmaKinds[] = {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16,
                                 MmaKind::TF32_M16N8K8, MmaKind::E4M3_M16N8K32};
constexpr WgmmaKind kWgmmaKinds[] = {WgmmaKind::F16_K16, WgmmaKind::BF16_K16, WgmmaKind::TF32_K8,
                                     WgmmaKind::E4M3_K32};
constexpr AtomicOp kAtomicOps[] = {AtomicOp::Add, AtomicOp::Max, AtomicOp::Min};
constexpr MbarrierOp kMbarrierOps[] = {MbarrierOp::Init, MbarrierOp::Arrive,
                                       MbarrierOp::ArriveExpectTx, MbarrierOp::Wait};

/// The largest tensor map dimension or stride the parser takes (the hardware's strides stop
/// below 2^40 bytes).
constexpr int64_t kMaxTensorMapExtent = int64_t{1} << 40;

/// What tensorMapProblem cannot be asked about without overflowing its 64-bit arithmetic: a
/// dimension or stride out of [1, 2^40], or a last element past the tensor's buffer
/// (computed here with overflow checks).
std::optional<std::string> tensorMapRangeProblem(const TensorMap &map) {
  for (const std::vector<int64_t> *list : {&map.dims, &map.strides})
    for (int64_t value : *list)
      if (value < 1 || value > kMaxTensorMapExtent)
        return fmt::format("tensor map {}: dimensions and strides are 1 to 2^40, not {}",
                           map.name, value);
  if (map.dims.empty() || map.strides.size() + 1 != map.dims.size())
    return std::nullopt; // tensorMapProblem names the rank mismatch
  // An overflow is a span past any buffer: no size reaches 2^63.
  int64_t last = map.dims[0] - 1;
  bool overflow = false;
  for (size_t d = 1; d < map.dims.size(); ++d) {
    int64_t term = 0;
    overflow = overflow || __builtin_mul_overflow(map.dims[d] - 1, map.strides[d - 1], &term) ||
               __builtin_add_overflow(last, term, &last);
  }
  if (overflow || last >= map.global->size)
    return fmt::format("tensor map {}: spans more than the {} elements of {}", map.name,
                       map.global->size, map.global->name);
  return std::nullopt;
}

} // namespace

Expected<StmtPtr> KernelTextParser::parseAtomic() {
  const Token &keyword = advance();
  const Token &opToken = peek();
  KILN_TRY(std::string opName, expectName("an atomic operation (add, max, min)"));
  auto op = std::ranges::find(kAtomicOps, opName, atomicOpName);
  if (op == std::end(kAtomicOps))
    return errorAt(opToken, fmt::format("unknown atomic operation '{}'", opName));
  KILN_TRY(Type type, expectType());
  KILN_TRY(BufferPtr buffer, expectBufferName());
  KILN_TRY(ExprPtr index, parseSubscript("an atomic's index"));
  KILN_TRY(const Token *arrow, expect("<"));
  // "<-" is two tokens (so that "a<-1" compares); here they must touch.
  if (!peek().is("-") || peek().line != arrow->line || peek().column != arrow->column + 1)
    return expected("'<-'");
  advance();
  KILN_TRY(ExprPtr value, parseExprOfType(type, "an atomic's value"));
  if (std::optional<std::string> problem = atomicProblem(*op, *buffer, type))
    return errorAt(keyword, *problem);
  return std::make_shared<Atomic>(*op, std::move(buffer), std::move(index), std::move(value));
}

Expected<Fragment> KernelTextParser::parseFragment() {
  KILN_TRY(BufferPtr buffer, expectBufferName());
  KILN_TRY_VOID(expect("["));
  KILN_TRY(int64_t offset, expectInteger("a fragment offset"));
  KILN_TRY_VOID(expect(":"));
  KILN_TRY_VOID(expect("]"));
  return Fragment{std::move(buffer), offset};
}

Expected<StmtPtr> KernelTextParser::parseMma(const Token &keyword) {
  std::string_view kindName = keyword.spelling.substr(std::string_view("mma.").size());
  auto kind = std::ranges::find(kMmaKinds, kindName, mmaKindName);
  if (kind == std::end(kMmaKinds))
    return errorAt(keyword, fmt::format("unknown mma shape '{}'", kindName));
  KILN_TRY(Fragment d, parseFragment());
  KILN_TRY_VOID(expect("="));
  KILN_TRY(Fragment a, parseFragment());
  KILN_TRY_VOID(expect("*"));
  KILN_TRY(Fragment b, parseFragment());
  KILN_TRY_VOID(expect("+"));
  KILN_TRY(Fragment c, parseFragment());
  if (std::optional<std::string> problem = mmaProblem(*kind, d, a, b, c))
    return errorAt(keyword, *problem);
  return std::make_shared<Mma>(*kind, std::move(d), std::move(a), std::move(b), std::move(c));
}

Expected<StmtPtr> KernelTextParser::parseLdMatrix(const Token &keyword) {
  std::string_view shape = keyword.spelling.substr(std::string_view("ldmatrix.").size());
  bool transpose = shape.ends_with(".trans");
  if (transpose)
    shape.remove_suffix(std::string_view(".trans").size());
  int matrices = shape == "x1" ? 1 : shape == "x2" ? 2 : shape == "x4" ? 4 : 0;
  if (matrices == 0)
    return errorAt(keyword, fmt::format("ldmatrix loads x1, x2 or x4 matrices, not '{}'", shape));
  KILN_TRY(Fragment destination, parseFragment());
  KILN_TRY_VOID(expect("="));
  KILN_TRY(BufferPtr source, expectBufferName());
  KILN_TRY(ExprPtr rowIndex, parseSubscript("an ldmatrix row index"));
  if (auto problem = ldMatrixProblem(destination, matrices, transpose, *source))
    return errorAt(keyword, *problem);
  return std::make_shared<LdMatrix>(std::move(destination), matrices, transpose,
                                    std::move(source), std::move(rowIndex));
}

Expected<StmtPtr> KernelTextParser::parseAsyncCopy() {
  const Token &keyword = advance();
  const Token &typeToken = peek();
  KILN_TRY(Type type, expectType());
  KILN_TRY(BufferPtr destination, expectBufferName());
  KILN_TRY(ExprPtr destinationIndex, parseSubscript("an async copy's destination index"));
  KILN_TRY_VOID(expect("="));
  KILN_TRY(BufferPtr source, expectBufferName());
  KILN_TRY(ExprPtr sourceIndex, parseSubscript("an async copy's source index"));
  KILN_TRY(ExprPtr predicate, parseTrailingPredicate(keyword, "an async copy's predicate"));
  if (auto problem = asyncCopyProblem(*destination, *source, type.lanes))
    return errorAt(keyword, *problem);
  if (type.dtype != source->dtype)
    return errorAt(typeToken, fmt::format("async copy of {} from '{}' of {}", typeName(type),
                                          source->name, dtypeName(source->dtype)));
  return std::make_shared<AsyncCopy>(std::move(destination), std::move(destinationIndex),
                                     std::move(source), std::move(sourceIndex), type.lanes,
                                     std::move(predicate));
}

Expected<SharedMatrix> KernelTextParser::parseSharedMatrix() {
  SharedMatrix matrix;
  KILN_TRY(matrix.buffer, expectBufferName());
  KILN_TRY(matrix.start, parseSubscript("a wgmma operand's start"));
  if (accept("mn"))
    matrix.mnMajor = true;
  else if (!accept("k"))
    return expected("'k' or 'mn' (the operand's major dimension)");
  if (!accept("lbo"))
    return expected("'lbo='");
  KILN_TRY_VOID(expect("="));
  KILN_TRY(matrix.leadingBytes, expectInteger("a leading byte offset"));
  if (!accept("sbo"))
    return expected("'sbo='");
  KILN_TRY_VOID(expect("="));
  KILN_TRY(matrix.strideBytes, expectInteger("a stride byte offset"));
  return matrix;
}

Expected<StmtPtr> KernelTextParser::parseWgmma(const Token &keyword) {
  // wgmma.<kind>.n<N>, the kind itself dotted ("bf16.k16").
  std::string_view shape = keyword.spelling.substr(std::string_view("wgmma.").size());
  size_t dot = shape.rfind(".n");
  std::string_view kindName = shape.substr(0, dot);
  auto kind = std::ranges::find(kWgmmaKinds, kindName, wgmmaKindName);
  int n = 0;
  if (dot != std::string_view::npos) {
    std::string_view nText = shape.substr(dot + 2);
    auto [end, error] = std::from_chars(nText.data(), nText.data() + nText.size(), n);
    if (error != std::errc() || end != nText.data() + nText.size())
      n = 0;
  }
  if (dot == std::string_view::npos || kind == std::end(kWgmmaKinds) || n <= 0)
    return errorAt(keyword, fmt::format("expected wgmma.<kind>.n<N> (wgmma.bf16.k16.n128), found "
                                        "'{}'",
                                        keyword.spelling));
  const Token &dToken = peek();
  KILN_TRY(Fragment d, parseFragment());
  bool accumulate = false;
  if (accept("+="))
    accumulate = true;
  else if (!accept("="))
    return expected("'=' or '+='");
  KILN_TRY(SharedMatrix a, parseSharedMatrix());
  KILN_TRY_VOID(expect("*"));
  KILN_TRY(SharedMatrix b, parseSharedMatrix());
  if (std::optional<std::string> problem = wgmmaProblem(*kind, n, d, a, b))
    return errorAt(dToken, *problem);
  return std::make_shared<Wgmma>(*kind, n, std::move(d), std::move(a), std::move(b), accumulate);
}

Expected<StmtPtr> KernelTextParser::parseMbarrier(const Token &keyword) {
  std::string_view opName = keyword.spelling.substr(std::string_view("mbarrier_").size());
  auto op = std::ranges::find(kMbarrierOps, opName, mbarrierOpName);
  if (op == std::end(kMbarrierOps))
    return errorAt(keyword, fmt::format("unknown mbarrier operation '{}'", opName));
  KILN_TRY(BufferPtr barriers, expectBufferName());
  KILN_TRY(ExprPtr index, parseSubscript("an mbarrier index"));
  int64_t count = 0;
  if (*op == MbarrierOp::Init || *op == MbarrierOp::ArriveExpectTx) {
    KILN_TRY(count, expectInteger(*op == MbarrierOp::Init ? "an arrival count" : "a byte count"));
  }
  ExprPtr parity;
  if (*op == MbarrierOp::Wait) {
    if (!accept("parity"))
      return expected("'parity' (an mbarrier wait names the phase parity it waits for)");
    KILN_TRY(parity, parseIndex("an mbarrier parity"));
  }
  if (auto problem = mbarrierProblem(*op, *barriers, count, parity != nullptr))
    return errorAt(keyword, *problem);
  return std::make_shared<Mbarrier>(*op, std::move(barriers), std::move(index), count,
                                    std::move(parity));
}

Expected<std::vector<int64_t>> KernelTextParser::parseIntegerList() {
  KILN_TRY_VOID(expect("["));
  std::vector<int64_t> values;
  while (!accept("]")) {
    if (!values.empty())
      KILN_TRY_VOID(expect(","));
    if (values.size() >= kTensorMapMaxRank)
      return errorAt(peek(), fmt::format("a tensor map has at most {} dimensions",
                                         kTensorMapMaxRank));
    KILN_TRY(int64_t value, expectInteger("an integer"));
    values.push_back(value);
  }
  return values;
}

Expected<TensorMapPtr> KernelTextParser::parseTensorMap() {
  const Token &nameToken = peek();
  KILN_TRY(std::string name, expectName("a tensor map name"));
  KILN_TRY_VOID(expect("("));
  auto map = std::make_shared<TensorMap>();
  map->name = name;
  KILN_TRY(map->global, expectBufferName());
  for (auto [keyword, list] : {std::pair{"dims", &map->dims}, std::pair{"strides", &map->strides},
                               std::pair{"box", &map->box}}) {
    if (!accept(keyword))
      return expected(fmt::format("'{}'", keyword));
    KILN_TRY(*list, parseIntegerList());
  }
  if (!accept("swizzle"))
    return expected("'swizzle'");
  if (accept("none"))
    map->swizzle = TmaSwizzle::None;
  else if (peek().kind == TokenKind::Number &&
           peek().spelling == tmaSwizzleName(TmaSwizzle::Bytes128)) {
    advance();
    map->swizzle = TmaSwizzle::Bytes128;
  } else {
    return expected("a swizzle (none, 128B)");
  }
  KILN_TRY_VOID(expect(")"));
  std::optional<std::string> problem = tensorMapRangeProblem(*map);
  if (!problem)
    problem = tensorMapProblem(*map);
  if (problem)
    return errorAt(nameToken, *problem);
  // One name is one map: a later use repeats its description.
  auto [it, fresh] = maps_.try_emplace(name, MapBinding{map, &nameToken});
  if (!fresh) {
    const TensorMap &first = *it->second.map;
    if (first.global != map->global || first.dims != map->dims ||
        first.strides != map->strides || first.box != map->box || first.swizzle != map->swizzle)
      return errorAt(nameToken,
                     fmt::format("tensor map '{}' differs from its first description at {}:{}",
                                 name, it->second.first->line, it->second.first->column));
  }
  return it->second.map;
}

Expected<StmtPtr> KernelTextParser::parseTmaLoad() {
  const Token &keyword = advance();
  KILN_TRY(BufferPtr destination, expectBufferName());
  KILN_TRY(ExprPtr destinationIndex, parseSubscript("a bulk copy's destination index"));
  KILN_TRY_VOID(expect("="));
  KILN_TRY(TensorMapPtr map, parseTensorMap());
  KILN_TRY_VOID(expect("["));
  std::vector<ExprPtr> coords;
  while (!accept("]")) {
    if (!coords.empty())
      KILN_TRY_VOID(expect(","));
    if (coords.size() >= kTensorMapMaxRank)
      return errorAt(peek(), fmt::format("a bulk copy has at most {} coordinates",
                                         kTensorMapMaxRank));
    KILN_TRY(ExprPtr coord, parseIndex("a bulk copy coordinate"));
    coords.push_back(std::move(coord));
  }
  if (!accept("on"))
    return expected("'on' (the mbarrier the copy completes on)");
  KILN_TRY(BufferPtr barriers, expectBufferName());
  KILN_TRY(ExprPtr barrierIndex, parseSubscript("an mbarrier index"));
  if (std::optional<std::string> problem =
          tmaLoadProblem(destination, destinationIndex, map, coords, barriers, barrierIndex))
    return errorAt(keyword, *problem);
  return std::make_shared<TmaLoad>(std::move(destination), std::move(destinationIndex),
                                   std::move(map), std::move(coords), std::move(barriers),
                                   std::move(barrierIndex));
}

} // namespace kiln::kir::text
