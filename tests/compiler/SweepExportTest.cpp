// Sweep exports: the CSV parses back, the JSON is well formed, the SVG has one
// mark per candidate, writes are atomic, and the progress bar draws its line.
#include "compiler/tuner/SweepExport.h"
#include "runtime/cache/AtomicFile.h"
#include "compiler/tuner/TuneProgressBar.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <unistd.h>

namespace kiln::test {
namespace {

namespace fs = std::filesystem;
using tuning::CandidateTiming;
using tuning::SweepGroup;

CandidateTiming timing(std::string schedule, double median, bool valid = true,
                       std::string note = {}) {
  CandidateTiming c;
  c.schedule = std::move(schedule);
  c.medianSeconds = valid ? median : 0;
  c.minSeconds = valid ? median * 0.9 : 0;
  c.runs = valid ? 5 : 0;
  c.valid = valid;
  c.note = std::move(note);
  return c;
}

/// Two groups: a matmul sweep with an invalid candidate and a note full of
/// CSV's special characters, and a softmax sweep with other fields.
std::vector<SweepGroup> sampleSweep() {
  SweepGroup matmul;
  matmul.key = {"matmul f32 \"sig\"", "37x53 * 53x29", "cpu test, 8 cores", "0.1.0"};
  matmul.summary = "contraction matmul+add+relu 37x53 * 53x29";
  matmul.candidates = {
      timing("matmul mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab", 2.0e-3),
      timing("matmul mc=48 nc=512 kc=128 mr=4 nr=16 vw=8 pack=ab", 1.5e-3),
      timing("matmul mc=96 nc=256 kc=64 mr=6 nr=8 vw=8 pack=b", 3.0e-3),
      timing("matmul mc=96 nc=512 kc=512 mr=8 nr=16 vw=8 pack=ab", 0, false,
             "output differs from the reference: 3 mismatches, \"index 1\", got 2"),
  };
  SweepGroup softmax;
  softmax.key = {"softmax f32", "7x131", "cpu test, 8 cores", "0.1.0"};
  softmax.summary = "rownorm softmax 7x131";
  softmax.candidates = {timing("rownorm vw=16 par=16384", 4e-6),
                        timing("rownorm vw=8 par=4096", 5e-6),
                        timing("rownorm vw=32 par=65536", 3e-6)};
  return {matmul, softmax};
}

/// RFC 4180 rows: quoted fields may hold commas, doubled quotes and newlines.
std::vector<std::vector<std::string>> parseCsv(const std::string &text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  rows.back().clear();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  REQUIRE_FALSE(quoted);
  if (rows.back().empty())
    rows.pop_back();
  return rows;
}

/// A minimal JSON checker: returns the position after one value, counting
/// the objects that have a "schedule" key. Throws on malformed input.
struct JsonChecker {
  const std::string &text;
  size_t pos = 0;
  int schedules = 0;

  void space() {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }
  void expect(char c) {
    space();
    if (pos >= text.size() || text[pos] != c)
      throw std::runtime_error("expected '" + std::string(1, c) + "' at " + std::to_string(pos));
    ++pos;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (pos < text.size() && text[pos] != '"') {
      if (text[pos] == '\\')
        ++pos;
      out += text[pos++];
    }
    expect('"');
    return out;
  }
  void value() {
    space();
    if (pos >= text.size())
      throw std::runtime_error("truncated");
    char c = text[pos];
    if (c == '{') {
      ++pos;
      space();
      if (text[pos] == '}') {
        ++pos;
        return;
      }
      do {
        if (string() == "schedule")
          ++schedules;
        expect(':');
        value();
        space();
      } while (pos < text.size() && text[pos] == ',' && ++pos);
      expect('}');
    } else if (c == '[') {
      ++pos;
      space();
      if (text[pos] == ']') {
        ++pos;
        return;
      }
      do {
        value();
        space();
      } while (pos < text.size() && text[pos] == ',' && ++pos);
      expect(']');
    } else if (c == '"') {
      string();
    } else {
      size_t start = pos;
      while (pos < text.size() && std::string_view(",]} \n").find(text[pos]) == std::string_view::npos)
        ++pos;
      std::string word = text.substr(start, pos - start);
      if (word != "true" && word != "false" && word != "null") {
        size_t used = 0;
        std::stod(word, &used);
        if (used != word.size())
          throw std::runtime_error("bad number " + word);
      }
    }
  }
};

TEST_CASE("sweep CSV parses back with a column per schedule field", "[compiler][sweep]") {
  std::vector<SweepGroup> sweep = sampleSweep();
  auto rows = parseCsv(tuning::sweepCsv(sweep));
  REQUIRE(rows.size() == 1 + 4 + 3);
  const std::vector<std::string> &header = rows.front();
  auto column = [&](const std::string &name) {
    auto it = std::find(header.begin(), header.end(), name);
    REQUIRE(it != header.end());
    return size_t(it - header.begin());
  };
  for (size_t r = 1; r < rows.size(); ++r)
    CHECK(rows[r].size() == header.size());
  // Row 2 is the matmul's second candidate.
  CHECK(rows[2][column("schedule")] == sweep[0].candidates[1].schedule);
  CHECK(rows[2][column("mc")] == "48");
  CHECK(rows[2][column("kc")] == "128");
  CHECK(rows[2][column("pack")] == "ab");
  CHECK(rows[2][column("par")].empty());
  CHECK(std::stod(rows[2][column("median_s")]) == Approx(1.5e-3));
  CHECK(rows[2][column("runs")] == "5");
  CHECK(rows[2][column("signature")] == "matmul f32 \"sig\"");
  CHECK(rows[2][column("target")] == "cpu test, 8 cores");
  CHECK(rows[4][column("valid")] == "false");
  CHECK(rows[4][column("note")] == sweep[0].candidates[3].note);
  // The softmax rows have its fields and none of the matmul's.
  CHECK(rows[7][column("vw")] == "32");
  CHECK(rows[7][column("par")] == "65536");
  CHECK(rows[7][column("mc")].empty());
  CHECK(rows[7][column("group")] == "1");
  CHECK(rows[7][column("candidate")] == "2");
}

TEST_CASE("sweep JSON is well formed with one object per candidate", "[compiler][sweep]") {
  std::string json = tuning::sweepJson(sampleSweep());
  JsonChecker checker{json};
  REQUIRE_NOTHROW(checker.value());
  checker.space();
  CHECK(checker.pos == json.size());
  CHECK(checker.schedules == 7);
  CHECK(json.find("\"mc\": \"48\"") != std::string::npos);
  CHECK(json.find("\\\"index 1\\\"") != std::string::npos);
}

TEST_CASE("sweep SVG: balanced tags, one mark per candidate, default and winner marked",
          "[compiler][sweep]") {
  std::vector<SweepGroup> sweep = sampleSweep();
  std::string svg = tuning::sweepSvg(sweep);
  // Every element closes in order.
  std::vector<std::string> open;
  std::regex tag(R"(<(/?)([a-zA-Z][a-zA-Z0-9]*)[^>]*?(/?)>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tag); it != std::sregex_iterator();
       ++it) {
    const std::smatch &m = *it;
    if (m[1] == "/") {
      REQUIRE(!open.empty());
      CHECK(open.back() == m[2].str());
      open.pop_back();
    } else if (m[3] != "/") {
      open.push_back(m[2]);
    }
  }
  CHECK(open.empty());
  CHECK(svg.rfind("<?xml", 0) == 0);
  auto count = [&](const std::string &needle) {
    size_t n = 0;
    for (size_t pos = svg.find(needle); pos != std::string::npos; pos = svg.find(needle, pos + 1))
      ++n;
    return n;
  };
  CHECK(count("class=\"candidate") == 7);
  CHECK(count("class=\"candidate invalid\"") == 1);
  CHECK(count("class=\"default-mark\"") == 2);
  CHECK(count("class=\"winner-mark\"") == 2);
  CHECK(count("median time (ms, log scale)") == 1);
  CHECK(count("median time (us, log scale)") == 1);

  // Sorted by a field, the marks follow its values.
  tuning::SweepPlotOptions byKc;
  byKc.sortBy = "kc";
  std::string sorted = tuning::sweepSvg(std::span(sweep).first(1), byKc);
  std::regex kcOfMark(R"(class="candidate[^>]*><title>[^<]* kc=(\d+))");
  std::vector<int> kcs;
  for (auto it = std::sregex_iterator(sorted.begin(), sorted.end(), kcOfMark);
       it != std::sregex_iterator(); ++it)
    kcs.push_back(std::stoi((*it)[1]));
  CHECK(kcs == std::vector<int>{64, 128, 256, 512});
  CHECK(sorted.find("sorted by kc") != std::string::npos);
}

TEST_CASE("exports are written atomically", "[compiler][sweep]") {
  fs::path dir = fs::temp_directory_path() / ("kiln-sweep-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string csv = tuning::sweepCsv(sampleSweep());
  fs::path file = dir / "sweep.csv";
  REQUIRE(runtime::replaceFile(file.string(), "old"));
  REQUIRE(runtime::replaceFile(file.string(), csv));
  std::ifstream in(file);
  std::stringstream read;
  read << in.rdbuf();
  CHECK(read.str() == csv);
  int entries = 0;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir)) {
    ++entries;
    CHECK(entry.path().filename() == "sweep.csv");
  }
  CHECK(entries == 1);

  fs::path missing = dir / "no-such-dir" / "sweep.svg";
  auto failed = runtime::replaceFile(missing.string(), csv);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message().find(missing.string()) != std::string::npos);
  CHECK_FALSE(fs::exists(missing));
  fs::remove_all(dir);
}

TEST_CASE("the tuner's progress bar", "[compiler][sweep]") {
  tuning::TuneProgress event;
  event.kind = tuning::TuneProgress::Kind::CandidateDone;
  event.groupIndex = 2;
  event.groupCount = 7;
  event.groupSummary = "contraction conv2d 1x3x9x9";
  event.candidatesDone = 12;
  event.candidatesPlanned = 40;
  event.bestSeconds = 1.23e-3;

  std::ostringstream log;
  tuning::TuneProgressBar bar(log, /*terminal=*/false, 10);
  CHECK(bar.line(event) == "group 3/7 contraction conv2d 1x3x9x9 [###-------] 12/40 best 1.23 ms");
  bar(event);
  CHECK(log.str().empty()); // a log gets one line per finished group
  event.kind = tuning::TuneProgress::Kind::GroupFinished;
  event.candidatesDone = 40;
  bar(event);
  CHECK(log.str() ==
        "group 3/7 contraction conv2d 1x3x9x9 [##########] 40/40 best 1.23 ms\n");

  std::ostringstream terminal;
  tuning::TuneProgressBar live(terminal, /*terminal=*/true, 10);
  event.kind = tuning::TuneProgress::Kind::CandidateDone;
  event.candidatesDone = 1;
  event.bestSeconds = 0;
  live(event);
  CHECK(terminal.str() == "\rgroup 3/7 contraction conv2d 1x3x9x9 [----------] 1/40");
  event.kind = tuning::TuneProgress::Kind::GroupFinished;
  live(event);
  std::string drawn = terminal.str();
  CHECK(drawn.back() == '\n');
  CHECK(std::count(drawn.begin(), drawn.end(), '\r') == 2);
}

} // namespace
} // namespace kiln::test
