// Tuning records and sweeps to JSON and back, field by field.
#include "runtime/tuning/TuningRecordJson.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>

namespace kiln::tuning {

namespace {

/// A time as JSON: a non-finite time (never measured sensibly) is written as 0,
/// "not timed", because JSON has no infinities.
std::string seconds(double value) { return json::number(std::isfinite(value) ? value : 0.0); }

/// "an array", "a string", "null": a JSON kind in a sentence.
std::string aKind(json::Value::Kind kind) {
  std::string_view name = json::kindName(kind);
  if (kind == json::Value::Kind::Null)
    return std::string(name);
  bool vowel = name.front() == 'a' || name.front() == 'o';
  return fmt::format("{} {}", vowel ? "an" : "a", name);
}

/// Reads the members of one object, each once, and rejects the ones no field
/// claimed: a typo in a hand-edited file is an error, not a silent default.
class ObjectReader {
public:
  ObjectReader(const json::Value &object, std::string_view source, std::string_view what)
      : object_(object), source_(source), what_(what) {}

  Expected<void> isObject() const {
    if (object_.kind != json::Value::Kind::Object)
      return error(object_,
                   fmt::format("{} must be an object, not {}", what_, aKind(object_.kind)));
    return {};
  }
  Expected<std::string> string(std::string_view name) {
    KILN_TRY(const json::Value *value, field(name, json::Value::Kind::String));
    return value->string;
  }
  Expected<double> number(std::string_view name) {
    KILN_TRY(const json::Value *value, field(name, json::Value::Kind::Number));
    return value->number;
  }
  Expected<int> integer(std::string_view name) {
    KILN_TRY(const json::Value *value, field(name, json::Value::Kind::Number));
    if (!value->integral || value->number < 0 ||
        value->number > std::numeric_limits<int>::max())
      return error(*value, fmt::format("{} field \"{}\" must be a non-negative integer", what_,
                                       name));
    return static_cast<int>(value->number);
  }
  Expected<bool> boolean(std::string_view name) {
    KILN_TRY(const json::Value *value, field(name, json::Value::Kind::Bool));
    return value->boolean;
  }
  Expected<const json::Value *> array(std::string_view name, bool optional = false) {
    if (optional && !object_.member(name)) {
      return static_cast<const json::Value *>(nullptr);
    }
    return field(name, json::Value::Kind::Array);
  }
  /// Errors on the first member no call above asked for.
  Expected<void> noOthers() const {
    for (const json::Member &member : object_.members)
      if (!claimed_.contains(member.key))
        return error(member.value,
                     fmt::format("{} has an unknown field \"{}\"", what_, member.key));
    return {};
  }

  std::unexpected<Error> error(const json::Value &at, std::string message) const {
    return makeError(ErrorCode::FormatError, std::move(message),
                     Location{std::string(source_), at.line, at.column});
  }

private:
  Expected<const json::Value *> field(std::string_view name, json::Value::Kind kind) {
    claimed_.insert(std::string(name));
    const json::Value *value = object_.member(name);
    if (!value)
      return error(object_, fmt::format("{} lacks the field \"{}\"", what_, name));
    if (value->kind != kind)
      return error(*value, fmt::format("{} field \"{}\" must be {}, not {}", what_, name,
                                       aKind(kind), aKind(value->kind)));
    return value;
  }

  const json::Value &object_;
  std::string_view source_;
  std::string_view what_;
  std::set<std::string, std::less<>> claimed_;
};

std::string keyMembers(const TuningKey &key) {
  return fmt::format("\"signature\": {}, \"shapes\": {}, \"target\": {}, \"kilnVersion\": {}",
                     json::quote(key.signature), json::quote(key.shapes), json::quote(key.target),
                     json::quote(key.kilnVersion));
}

Expected<TuningKey> readKey(ObjectReader &reader) {
  TuningKey key;
  KILN_TRY(key.signature, reader.string("signature"));
  KILN_TRY(key.shapes, reader.string("shapes"));
  KILN_TRY(key.target, reader.string("target"));
  KILN_TRY(key.kilnVersion, reader.string("kilnVersion"));
  return key;
}

std::string candidateToJson(const CandidateTiming &c) {
  return fmt::format("{{\"schedule\": {}, \"backend\": {}, \"medianSeconds\": {}, "
                     "\"minSeconds\": {}, \"runs\": {}, \"valid\": {}, \"note\": {}}}",
                     json::quote(c.schedule), json::quote(c.backend), seconds(c.medianSeconds),
                     seconds(c.minSeconds), c.runs, c.valid ? "true" : "false",
                     json::quote(c.note));
}

Expected<CandidateTiming> candidateFromJson(const json::Value &object, std::string_view source) {
  ObjectReader reader(object, source, "a sweep candidate");
  KILN_TRY_VOID(reader.isObject());
  CandidateTiming c;
  KILN_TRY(c.schedule, reader.string("schedule"));
  KILN_TRY(c.backend, reader.string("backend"));
  KILN_TRY(c.medianSeconds, reader.number("medianSeconds"));
  KILN_TRY(c.minSeconds, reader.number("minSeconds"));
  KILN_TRY(c.runs, reader.integer("runs"));
  KILN_TRY(c.valid, reader.boolean("valid"));
  KILN_TRY(c.note, reader.string("note"));
  KILN_TRY_VOID(reader.noOthers());
  return c;
}

std::string sweepToJson(const LabeledSweep &sweep) {
  std::string out = fmt::format("    {{\"label\": {}, \"createdAt\": {}, \"groups\": [",
                                json::quote(sweep.label), json::quote(sweep.createdAt));
  for (size_t g = 0; g < sweep.groups.size(); ++g) {
    const SweepGroup &group = sweep.groups[g];
    out += fmt::format("{}\n      {{{}, \"summary\": {}, \"candidates\": [", g ? "," : "",
                       keyMembers(group.key), json::quote(group.summary));
    for (size_t c = 0; c < group.candidates.size(); ++c)
      out += fmt::format("{}\n        {}", c ? "," : "", candidateToJson(group.candidates[c]));
    out += group.candidates.empty() ? "]}" : "\n      ]}";
  }
  out += sweep.groups.empty() ? "]}" : "\n    ]}";
  return out;
}

Expected<LabeledSweep> sweepFromJson(const json::Value &object, std::string_view source) {
  ObjectReader reader(object, source, "a sweep");
  KILN_TRY_VOID(reader.isObject());
  LabeledSweep sweep;
  KILN_TRY(sweep.label, reader.string("label"));
  KILN_TRY(sweep.createdAt, reader.string("createdAt"));
  KILN_TRY(const json::Value *groups, reader.array("groups"));
  KILN_TRY_VOID(reader.noOthers());
  for (const json::Value &groupObject : groups->elements) {
    ObjectReader groupReader(groupObject, source, "a sweep group");
    KILN_TRY_VOID(groupReader.isObject());
    SweepGroup group;
    KILN_TRY(group.key, readKey(groupReader));
    KILN_TRY(group.summary, groupReader.string("summary"));
    KILN_TRY(const json::Value *candidates, groupReader.array("candidates"));
    KILN_TRY_VOID(groupReader.noOthers());
    for (const json::Value &candidate : candidates->elements) {
      KILN_TRY(CandidateTiming timing, candidateFromJson(candidate, source));
      group.candidates.push_back(std::move(timing));
    }
    sweep.groups.push_back(std::move(group));
  }
  return sweep;
}

} // namespace

std::string recordToJson(const TuningRecord &r) {
  return fmt::format("{{{}, \"schedule\": {}, \"backend\": {}, \"bestSeconds\": {}, "
                     "\"defaultSeconds\": {}, \"candidatesTimed\": {}, \"summary\": {}, "
                     "\"tunedAt\": {}}}",
                     keyMembers(r.key), json::quote(r.schedule), json::quote(r.backend),
                     seconds(r.bestSeconds), seconds(r.defaultSeconds), r.candidatesTimed,
                     json::quote(r.summary), json::quote(r.tunedAt));
}

Expected<TuningRecord> recordFromJson(const json::Value &object, std::string_view source) {
  ObjectReader reader(object, source, "a tuning record");
  KILN_TRY_VOID(reader.isObject());
  TuningRecord r;
  KILN_TRY(r.key, readKey(reader));
  KILN_TRY(r.schedule, reader.string("schedule"));
  KILN_TRY(r.backend, reader.string("backend"));
  KILN_TRY(r.bestSeconds, reader.number("bestSeconds"));
  KILN_TRY(r.defaultSeconds, reader.number("defaultSeconds"));
  KILN_TRY(r.candidatesTimed, reader.integer("candidatesTimed"));
  KILN_TRY(r.summary, reader.string("summary"));
  KILN_TRY(r.tunedAt, reader.string("tunedAt"));
  KILN_TRY_VOID(reader.noOthers());
  if (r.schedule.empty())
    return reader.error(object, "a tuning record has an empty \"schedule\"");
  return r;
}

std::string tuningExportToJson(const TuningExport &data) {
  std::string out = fmt::format("{{\n  \"format\": {},\n  \"version\": {},\n  \"records\": [",
                                json::quote(kTuningJsonFormat), kTuningJsonVersion);
  for (size_t i = 0; i < data.records.size(); ++i)
    out += fmt::format("{}\n    {}", i ? "," : "", recordToJson(data.records[i]));
  out += data.records.empty() ? "],\n" : "\n  ],\n";
  out += "  \"sweeps\": [";
  for (size_t i = 0; i < data.sweeps.size(); ++i)
    out += fmt::format("{}\n{}", i ? "," : "", sweepToJson(data.sweeps[i]));
  out += data.sweeps.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

Expected<TuningExport> tuningExportFromJson(std::string_view text, std::string_view source) {
  KILN_TRY(json::Value document, json::parse(text, source));
  ObjectReader reader(document, source, "a tuning export");
  KILN_TRY_VOID(reader.isObject());
  KILN_TRY(std::string format, reader.string("format"));
  if (format != kTuningJsonFormat)
    return reader.error(*document.member("format"),
                        fmt::format("\"format\" is \"{}\", expected \"{}\"", format,
                                    kTuningJsonFormat));
  KILN_TRY(int version, reader.integer("version"));
  if (version > kTuningJsonVersion || version < 1)
    return reader.error(*document.member("version"),
                        fmt::format("tuning export version {} is not one this kiln reads ({})",
                                    version, kTuningJsonVersion));
  KILN_TRY(const json::Value *records, reader.array("records"));
  KILN_TRY(const json::Value *sweeps, reader.array("sweeps", /*optional=*/true));
  KILN_TRY_VOID(reader.noOthers());
  TuningExport data;
  for (const json::Value &record : records->elements) {
    KILN_TRY(TuningRecord parsed, recordFromJson(record, source));
    data.records.push_back(std::move(parsed));
  }
  if (sweeps)
    for (const json::Value &sweep : sweeps->elements) {
      KILN_TRY(LabeledSweep parsed, sweepFromJson(sweep, source));
      data.sweeps.push_back(std::move(parsed));
    }
  return data;
}

} // namespace kiln::tuning
