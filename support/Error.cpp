// Formatting of kiln::Error and the failure path of KILN_CHECK.
#include "support/Error.h"

#include <cstdio>
#include <cstdlib>

namespace kiln {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::InvalidArgument: return "invalid argument";
  case ErrorCode::ShapeMismatch: return "shape mismatch";
  case ErrorCode::TypeMismatch: return "type mismatch";
  case ErrorCode::ParseError: return "parse error";
  case ErrorCode::VerifyError: return "verify error";
  case ErrorCode::IOError: return "I/O error";
  case ErrorCode::FormatError: return "format error";
  case ErrorCode::NotFound: return "not found";
  case ErrorCode::Unsupported: return "unsupported";
  case ErrorCode::OutOfMemory: return "out of memory";
  case ErrorCode::CompileError: return "compile error";
  case ErrorCode::Unavailable: return "unavailable";
  }
  return "error";
}

Location Location::fromSource(const std::source_location &loc) {
  return Location{loc.file_name(), static_cast<unsigned>(loc.line()),
                  static_cast<unsigned>(loc.column())};
}

std::string Location::str() const {
  std::string out = file.empty() ? std::string("<input>") : file;
  if (line != 0) {
    out += ":" + std::to_string(line);
    if (column != 0)
      out += ":" + std::to_string(column);
  }
  return out;
}

std::string Error::str() const {
  std::string out;
  if (location_ && location_->known())
    out = location_->str() + ": ";
  out += message_;
  for (const std::string &note : notes_)
    out += "\n  note: " + note;
  return out;
}

std::string Error::diagnosticStr(std::string_view fallbackWhere) const {
  std::string where = location_ && location_->known() ? location_->str() : std::string(fallbackWhere);
  std::string out = where + ": error: " + message_ + "\n";
  for (const std::string &note : notes_)
    out += where + ": note: " + note + "\n";
  return out;
}

void checkFailed(const char *condition, const std::string &message, const char *file, int line) {
  std::fprintf(stderr, "kiln internal error at %s:%d: %s (check `%s` failed)\n", file, line,
               message.c_str(), condition);
  std::abort();
}

} // namespace kiln
