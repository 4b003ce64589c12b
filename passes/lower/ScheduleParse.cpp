// parseSchedule: scheduleStr's text back into a schedule, so tuning records
// (which store schedules as text) can be applied. Strict: every field the form
// requires, no unknown or repeated field, integers only.
#include "passes/lower/Schedule.h"

#include <fmt/format.h>

#include <charconv>
#include <map>

namespace kiln::lower {

namespace {

/// The key=value fields after a schedule's kind words, taken one by one; what
/// is left at the end is an unknown field.
class Fields {
public:
  explicit Fields(std::string_view text) : text_(text) {}

  /// Splits `words` into fields; a word that is not name=value, or a repeated name, is an error.
  Expected<void> load(const std::vector<std::string_view> &words) {
    for (std::string_view word : words) {
      size_t equals = word.find('=');
      if (equals == std::string_view::npos || equals == 0 || equals + 1 == word.size())
        return fail(fmt::format("'{}' is not a field=value pair", word));
      std::string name(word.substr(0, equals));
      if (!values_.emplace(name, word.substr(equals + 1)).second)
        return fail(fmt::format("field '{}' appears twice", name));
    }
    return {};
  }

  bool has(std::string_view name) const { return values_.contains(std::string(name)); }

  /// A field holding an integer of at least `minimum` (sizes are positive: a
  /// zero would reach lowering as a division by zero, not an error).
  template <typename Int> Expected<void> integer(std::string_view name, Int &out, Int minimum = 1) {
    auto it = values_.find(std::string(name));
    if (it == values_.end())
      return fail(fmt::format("field '{}' is missing", name));
    std::string_view value = it->second;
    Int parsed{};
    auto [end, status] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (status != std::errc() || end != value.data() + value.size())
      return fail(fmt::format("field '{}' = '{}' is not an integer", name, value));
    if (parsed < minimum)
      return fail(fmt::format("field '{}' = {} must be at least {}", name, parsed, minimum));
    out = parsed;
    values_.erase(it);
    return {};
  }
  Expected<std::string_view> word(std::string_view name) {
    auto it = values_.find(std::string(name));
    if (it == values_.end())
      return fail(fmt::format("field '{}' is missing", name));
    std::string_view value = it->second;
    values_.erase(it);
    return value;
  }

  Expected<void> noneLeft() const {
    if (!values_.empty())
      return fail(fmt::format("unknown field '{}'", values_.begin()->first));
    return {};
  }

  std::unexpected<Error> fail(std::string why) const {
    return makeError(ErrorCode::ParseError, fmt::format("schedule '{}': {}", text_, why));
  }

private:
  std::string_view text_;
  std::map<std::string, std::string_view> values_;
};

Expected<void> parseGemmFields(Fields &fields, MatMulSchedule &s) {
  KILN_TRY_VOID(fields.integer("mc", s.mc));
  KILN_TRY_VOID(fields.integer("nc", s.nc));
  KILN_TRY_VOID(fields.integer("kc", s.kc));
  KILN_TRY_VOID(fields.integer("mr", s.mr));
  KILN_TRY_VOID(fields.integer("nr", s.nr));
  KILN_TRY_VOID(fields.integer("vw", s.vectorWidth));
  KILN_TRY(std::string_view pack, fields.word("pack"));
  if (pack == "ab" || pack == "a" || pack == "b" || pack == "none") {
    s.packA = pack == "ab" || pack == "a";
    s.packB = pack == "ab" || pack == "b";
  } else {
    return fields.fail(fmt::format("field 'pack' = '{}' is not ab, a, b or none", pack));
  }
  KILN_TRY(std::string_view parallel, fields.word("par"));
  for (auto mode : {MatMulSchedule::Parallel::Serial, MatMulSchedule::Parallel::Outer,
                    MatMulSchedule::Parallel::Inner})
    if (gemmParallelName(mode) == parallel) {
      s.parallel = mode;
      return {};
    }
  return fields.fail(fmt::format("field 'par' = '{}' is not serial, outer or inner", parallel));
}

/// The GPU GEMM fields; the form ("mma" or not) decides which tile is
/// required and what the other defaults to (scheduleStr's rule).
Expected<void> parseGpuGemmFields(Fields &fields, bool mma, GpuMatMulSchedule &s) {
  KILN_TRY_VOID(fields.integer("bm", s.blockM));
  KILN_TRY_VOID(fields.integer("bn", s.blockN));
  KILN_TRY_VOID(fields.integer("bk", s.blockK));
  KILN_TRY_VOID(fields.integer("stages", s.stages));
  KILN_TRY_VOID(fields.integer("vw", s.vectorWidth));
  KILN_TRY_VOID(fields.integer("splitk", s.splitK));
  if (mma) {
    KILN_TRY_VOID(fields.integer("wm", s.warpM));
    KILN_TRY_VOID(fields.integer("wn", s.warpN));
    if (fields.has("group"))
      KILN_TRY_VOID(fields.integer("group", s.groupM));
    s.threadM = s.threadN = 0;
    if (fields.has("tm") || fields.has("tn")) {
      KILN_TRY_VOID(fields.integer("tm", s.threadM, 0));
      KILN_TRY_VOID(fields.integer("tn", s.threadN, 0));
    }
  } else {
    KILN_TRY_VOID(fields.integer("tm", s.threadM));
    KILN_TRY_VOID(fields.integer("tn", s.threadN));
    s.warpM = s.warpN = 0;
    if (fields.has("wm") || fields.has("wn")) {
      KILN_TRY_VOID(fields.integer("wm", s.warpM, 0));
      KILN_TRY_VOID(fields.integer("wn", s.warpN, 0));
      if (s.warpM > 0)
        return fields.fail("a warp tile (wm > 0) needs the mma form");
    }
  }
  return {};
}

std::vector<std::string_view> splitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(' ', at);
    if (end == std::string_view::npos)
      end = text.size();
    words.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return words;
}

} // namespace

Expected<Schedule> parseSchedule(std::string_view text) {
  Fields fields(text);
  // scheduleStr separates by single spaces; anything else is not its text.
  if (text.empty() || text.front() == ' ' || text.back() == ' ' ||
      text.find("  ") != std::string_view::npos)
    return fields.fail("expected a kind and fields separated by single spaces");
  std::vector<std::string_view> words = splitWords(text);
  std::string_view kind = words.front();
  size_t firstField = 1;
  std::string_view form;
  if (kind == "conv2d" || kind == "gpu.matmul" || kind == "gpu.conv2d") {
    if (words.size() > 1 && words[1].find('=') == std::string_view::npos) {
      form = words[1];
      firstField = 2;
    }
  }
  // A wgmma schedule fed by bulk tensor copies ends in the word "tma", a persistent one in
  // "tma persistent".
  const bool wgmmaForm = (kind == "gpu.matmul" || kind == "gpu.conv2d") && form == "wgmma";
  size_t lastField = words.size();
  const bool persistent =
      wgmmaForm && lastField > firstField && words[lastField - 1] == "persistent";
  if (persistent)
    --lastField;
  const bool tma = wgmmaForm && lastField > firstField && words[lastField - 1] == "tma";
  if (tma)
    --lastField;
  if (persistent && !tma)
    return fields.fail("'persistent' follows 'tma': only a producer warpgroup's bulk copies run "
                       "a persistent grid");
  KILN_TRY_VOID(fields.load({words.begin() + static_cast<std::ptrdiff_t>(firstField),
                             words.begin() + static_cast<std::ptrdiff_t>(lastField)}));

  Schedule result;
  if (kind == "none") {
    result = NoSchedule{};
  } else if (kind == "pointwise" || kind == "reduction" || kind == "rownorm" ||
             kind == "pooling") {
    int vectorWidth = 0;
    int64_t minParallelWork = 0;
    KILN_TRY_VOID(fields.integer("vw", vectorWidth));
    KILN_TRY_VOID(fields.integer("par", minParallelWork, int64_t{0}));
    if (kind == "pointwise")
      result = PointwiseSchedule{vectorWidth, minParallelWork};
    else if (kind == "reduction")
      result = ReductionSchedule{vectorWidth, minParallelWork};
    else if (kind == "rownorm")
      result = RowNormSchedule{vectorWidth, minParallelWork};
    else
      result = PoolingSchedule{vectorWidth, minParallelWork};
  } else if (kind == "transpose") {
    TransposeSchedule s;
    KILN_TRY_VOID(fields.integer("tile", s.tile));
    KILN_TRY_VOID(fields.integer("par", s.minParallelWork, int64_t{0}));
    result = s;
  } else if (kind == "matmul") {
    MatMulSchedule s;
    KILN_TRY_VOID(parseGemmFields(fields, s));
    result = s;
  } else if (kind == "conv2d") {
    Conv2DSchedule s;
    if (form == "direct") {
      s.algorithm = Conv2DSchedule::Algorithm::Direct;
      KILN_TRY_VOID(fields.integer("ocb", s.ocBlock));
      KILN_TRY_VOID(parseGemmFields(fields, s.gemm));
    } else if (form == "im2col") {
      s.algorithm = Conv2DSchedule::Algorithm::Im2col;
      KILN_TRY_VOID(parseGemmFields(fields, s.gemm));
      s.ocBlock = s.gemm.nr;
      if (fields.has("ocb"))
        KILN_TRY_VOID(fields.integer("ocb", s.ocBlock));
    } else {
      return fields.fail(fmt::format("conv2d needs 'im2col' or 'direct' after it, found '{}'",
                                     form.empty() ? std::string_view("nothing") : form));
    }
    result = s;
  } else if (kind == "gpu.pointwise") {
    GpuPointwiseSchedule s;
    KILN_TRY_VOID(fields.integer("threads", s.threadsPerBlock));
    KILN_TRY_VOID(fields.integer("vw", s.vectorWidth));
    KILN_TRY_VOID(fields.integer("ept", s.elementsPerThread));
    KILN_TRY_VOID(fields.integer("bpsm", s.maxBlocksPerSm));
    result = s;
  } else if (kind == "gpu.transpose") {
    GpuTransposeSchedule s;
    KILN_TRY_VOID(fields.integer("tile", s.tile));
    KILN_TRY_VOID(fields.integer("rows", s.rowsPerPass));
    result = s;
  } else if (kind == "gpu.reduction" || kind == "gpu.rownorm") {
    int threads = 0, rows = 0, vectorWidth = 0;
    KILN_TRY_VOID(fields.integer("threads", threads));
    KILN_TRY_VOID(fields.integer("rows", rows));
    KILN_TRY_VOID(fields.integer("vw", vectorWidth));
    if (kind == "gpu.reduction")
      result = GpuReductionSchedule{threads, rows, vectorWidth};
    else
      result = GpuRowNormSchedule{threads, rows, vectorWidth};
  } else if (kind == "gpu.pooling") {
    GpuPoolingSchedule s;
    KILN_TRY_VOID(fields.integer("threads", s.threadsPerBlock));
    result = s;
  } else if (kind == "gpu.matmul" || kind == "gpu.conv2d") {
    if (!form.empty() && form != "mma" && form != "wgmma")
      return fields.fail(
          fmt::format("{} takes 'mma', 'wgmma' or fields after it, found '{}'", kind, form));
    GpuMatMulSchedule gemm;
    gemm.wgmma = form == "wgmma";
    gemm.tma = tma;
    gemm.persistent = persistent;
    KILN_TRY_VOID(parseGpuGemmFields(fields, !form.empty(), gemm));
    if (kind == "gpu.matmul")
      result = gemm;
    else
      result = GpuConv2DSchedule{gemm};
  } else {
    return fields.fail(fmt::format("unknown schedule kind '{}'", kind));
  }
  KILN_TRY_VOID(fields.noneLeft());
  return result;
}

} // namespace kiln::lower
