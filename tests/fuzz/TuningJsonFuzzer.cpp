// libFuzzer target for tuning-record imports (`kiln tune-db import`, AOT bundles): any text
// must parse or be refused with a FormatError that names a line, never a crash, an abort or
// a stack overflow; what parses must export and parse back to the same records and sweeps,
// and the export of that must be the same text.
#include "runtime/tuning/TuningRecordJson.h"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using namespace kiln::tuning;

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "tuning json fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Doubles compare bit for bit: the writer promises the shortest text that reads back exactly.
bool sameNumber(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

bool sameRecord(const TuningRecord &x, const TuningRecord &y) {
  return x.key == y.key && x.schedule == y.schedule && x.backend == y.backend &&
         sameNumber(x.bestSeconds, y.bestSeconds) &&
         sameNumber(x.defaultSeconds, y.defaultSeconds) &&
         x.candidatesTimed == y.candidatesTimed && x.summary == y.summary &&
         x.tunedAt == y.tunedAt;
}

bool sameCandidate(const CandidateTiming &x, const CandidateTiming &y) {
  return x.schedule == y.schedule && x.backend == y.backend &&
         sameNumber(x.medianSeconds, y.medianSeconds) && sameNumber(x.minSeconds, y.minSeconds) &&
         x.runs == y.runs && x.valid == y.valid && x.note == y.note;
}

bool sameExport(const TuningExport &a, const TuningExport &b) {
  if (a.records.size() != b.records.size() || a.sweeps.size() != b.sweeps.size())
    return false;
  for (size_t i = 0; i < a.records.size(); ++i)
    if (!sameRecord(a.records[i], b.records[i]))
      return false;
  for (size_t s = 0; s < a.sweeps.size(); ++s) {
    const LabeledSweep &x = a.sweeps[s], &y = b.sweeps[s];
    if (x.label != y.label || x.createdAt != y.createdAt || x.groups.size() != y.groups.size())
      return false;
    for (size_t g = 0; g < x.groups.size(); ++g) {
      const SweepGroup &p = x.groups[g], &q = y.groups[g];
      if (!(p.key == q.key) || p.summary != q.summary ||
          p.candidates.size() != q.candidates.size())
        return false;
      for (size_t c = 0; c < p.candidates.size(); ++c)
        if (!sameCandidate(p.candidates[c], q.candidates[c]))
          return false;
    }
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto parsed = tuningExportFromJson(text, "fuzz.json");
  if (!parsed) {
    const kiln::Error &error = parsed.error();
    if (error.code() != kiln::ErrorCode::FormatError || !error.location() ||
        error.location()->line == 0)
      fail("an error that is not a located FormatError", error.str());
    return 0;
  }
  std::string exported = tuningExportToJson(*parsed);
  auto reparsed = tuningExportFromJson(exported, "exported.json");
  if (!reparsed)
    fail("an export does not parse", reparsed.error().str() + "\n" + exported);
  if (!sameExport(*parsed, *reparsed))
    fail("export then import changed the records or sweeps", exported);
  std::string again = tuningExportToJson(*reparsed);
  if (again != exported)
    fail("the export is not a fixed point", exported + "\n---- again ----\n" + again);
  return 0;
}
