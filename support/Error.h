// kiln's error type, Expected<T>, and the two macros every layer uses:
// KILN_TRY to propagate user/environment errors, KILN_CHECK for compiler bugs.
#pragma once

#include <expected>
#include <optional>
#include <source_location>
#include <string_view>
#include <string>
#include <vector>

namespace kiln {

/// What kind of thing went wrong; callers branch on this, users read the message.
enum class ErrorCode {
  InvalidArgument, ///< A bad value passed by the user (an attribute, an option).
  ShapeMismatch,   ///< Operand shapes that an op cannot combine.
  TypeMismatch,    ///< Operand dtypes that an op cannot combine.
  ParseError,      ///< Malformed IR text.
  VerifyError,     ///< A graph that breaks an IR invariant.
  IOError,         ///< A file that cannot be read or written.
  FormatError,     ///< A file whose contents are malformed or truncated.
  NotFound,        ///< A name that does not exist.
  Unsupported,     ///< Valid input that kiln does not handle (yet).
  OutOfMemory,     ///< An allocation the machine or device could not satisfy.
  CompileError,    ///< A backend (LLVM, NVRTC, ptxas) rejected generated code.
  Unavailable,     ///< A driver, library or tool kiln needs is missing (libcuda, NVRTC, ptxas, a GPU).
};

const char *errorCodeName(ErrorCode code);

/// Where an error points: a user's C++ line (from std::source_location), or a
/// line:column in IR text, or a file name with no position.
struct Location {
  std::string file;
  unsigned line = 0;
  unsigned column = 0;

  static Location fromSource(const std::source_location &loc);
  std::string str() const; ///< "file:line:column", omitting unknown parts.
  bool known() const { return !file.empty() || line != 0; }
};

/// An error a user can read: what went wrong, where, and supporting notes
/// (a shape, a compiler log).
class Error {
public:
  Error(ErrorCode code, std::string message, std::optional<Location> location = std::nullopt)
      : code_(code), message_(std::move(message)), location_(std::move(location)) {}

  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }
  const std::optional<Location> &location() const { return location_; }
  const std::vector<std::string> &notes() const { return notes_; }

  Error &withNote(std::string note) & {
    notes_.push_back(std::move(note));
    return *this;
  }
  Error &&withNote(std::string note) && {
    notes_.push_back(std::move(note));
    return std::move(*this);
  }
  Error &at(Location location) & {
    location_ = std::move(location);
    return *this;
  }
  Error &&at(Location location) && {
    location_ = std::move(location);
    return std::move(*this);
  }

  /// "file:line: message" followed by one "  note: ..." line per note.
  std::string str() const;
  /// Compiler-style lines, each ending in a newline: "where: error: message",
  /// then "where: note: ..." per note. `where` is the location, or
  /// `fallbackWhere` (a tool name) when the error has none.
  std::string diagnosticStr(std::string_view fallbackWhere) const;

private:
  ErrorCode code_;
  std::string message_;
  std::optional<Location> location_;
  std::vector<std::string> notes_;
};

template <typename T> using Expected = std::expected<T, Error>;

/// Shorthand for returning an error from a function that returns Expected<T>.
inline std::unexpected<Error> makeError(ErrorCode code, std::string message,
                                        std::optional<Location> location = std::nullopt) {
  return std::unexpected<Error>(Error(code, std::move(message), std::move(location)));
}

/// Aborts with a message: for broken compiler invariants only, never for bad input.
[[noreturn]] void checkFailed(const char *condition, const std::string &message, const char *file,
                              int line);

} // namespace kiln

#define KILN_CONCAT_INNER(a, b) a##b
#define KILN_CONCAT(a, b) KILN_CONCAT_INNER(a, b)

#define KILN_TRY_IMPL(tmp, decl, expr)                                                             \
  auto tmp = (expr);                                                                               \
  if (!tmp)                                                                                        \
    return std::unexpected(std::move(tmp).error());                                                \
  decl = std::move(*tmp)

/// `KILN_TRY(auto x, f());` assigns f()'s value to x or returns its error.
#define KILN_TRY(decl, expr) KILN_TRY_IMPL(KILN_CONCAT(kilnTry_, __LINE__), decl, expr)

/// `KILN_TRY_VOID(f());` for an Expected<void>: returns its error, if any.
#define KILN_TRY_VOID(expr)                                                                        \
  do {                                                                                             \
    auto kilnTryVoid_ = (expr);                                                                    \
    if (!kilnTryVoid_)                                                                             \
      return std::unexpected(std::move(kilnTryVoid_).error());                                     \
  } while (0)

/// Marks a path the op table makes unreachable (a compiler bug if taken).
#define KILN_UNREACHABLE(message) ::kiln::checkFailed("unreachable", (message), __FILE__, __LINE__)

/// Asserts a compiler invariant, in every build type.
#define KILN_CHECK(cond, message)                                                                  \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::kiln::checkFailed(#cond, (message), __FILE__, __LINE__);                                   \
  } while (0)
