// The kernel IR parser's token helpers, its errors and the names in scope (one name is one
// object, as the printer names them).
#include "ir/kernel/ParserCore.h"
#include "ir/kernel/Printer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

namespace kiln::kir::text {

std::string describeBuffer(const Buffer &buffer) {
  return fmt::format("{}[{}] {}", dtypeName(buffer.dtype), buffer.size, memScopeName(buffer.scope));
}

// ---- Tokens and errors -------------------------------------------------------------------------

const Token &KernelTextParser::peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

const Token &KernelTextParser::advance() {
  const Token &token = tokens_[pos_];
  if (pos_ + 1 < tokens_.size())
    ++pos_;
  return token;
}

bool KernelTextParser::accept(std::string_view text) {
  if (!peek().is(text))
    return false;
  advance();
  return true;
}

Expected<const Token *> KernelTextParser::expect(std::string_view text) {
  if (!peek().is(text))
    return expected(fmt::format("'{}'", text));
  return &advance();
}

std::unexpected<Error> KernelTextParser::errorAt(const Token &token, std::string message) const {
  return makeError(ErrorCode::ParseError, std::move(message),
                   Location{fileName_, token.line, token.column});
}

std::unexpected<Error> KernelTextParser::expected(std::string_view what) const {
  return errorAt(peek(), fmt::format("expected {}, found {}", what, describeToken(peek())));
}

Expected<std::string> KernelTextParser::expectName(std::string_view what) {
  if (peek().kind != TokenKind::Identifier)
    return expected(what);
  return std::string(advance().spelling);
}

Expected<int64_t> KernelTextParser::expectInteger(std::string_view what) {
  bool negative = peek().is("-") && peek(1).kind == TokenKind::Number;
  const Token &token = peek(negative ? 1 : 0);
  if (token.kind != TokenKind::Number || !token.suffix.empty() ||
      token.number.find_first_of(".eE") != std::string_view::npos)
    return expected(what);
  uint64_t magnitude = 0;
  auto [end, error] =
      std::from_chars(token.number.data(), token.number.data() + token.number.size(), magnitude);
  if (error != std::errc() || magnitude > (uint64_t{1} << 62))
    return errorAt(token, fmt::format("{} {} is out of range", what, token.spelling));
  if (negative)
    advance();
  advance();
  return negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
}

std::optional<Type> KernelTextParser::typeNamed(std::string_view text) {
  if (std::optional<DType> dtype = parseDType(text))
    return Type::scalar(*dtype);
  size_t x = text.rfind('x');
  if (x == std::string_view::npos || x + 1 == text.size())
    return std::nullopt;
  std::string_view lanesText = text.substr(x + 1);
  int lanes = 0;
  auto [end, error] = std::from_chars(lanesText.data(), lanesText.data() + lanesText.size(), lanes);
  std::optional<DType> dtype = parseDType(text.substr(0, x));
  if (!dtype || error != std::errc() || end != lanesText.data() + lanesText.size() ||
      lanesText.front() == '0' || lanes < 2 || lanes > kMaxLanes)
    return std::nullopt;
  return Type{*dtype, lanes};
}

Expected<DType> KernelTextParser::expectDType() {
  std::optional<DType> dtype;
  if (peek().kind == TokenKind::Identifier)
    dtype = parseDType(peek().spelling);
  if (!dtype)
    return expected("a dtype (f32, i64, bf16, ...)");
  advance();
  return *dtype;
}

Expected<Type> KernelTextParser::expectType() {
  std::optional<Type> type;
  if (peek().kind == TokenKind::Identifier)
    type = typeNamed(peek().spelling);
  if (!type)
    return expected(fmt::format("a type (f32, i64, f32x8, boolx4, at most {} lanes)", kMaxLanes));
  advance();
  return *type;
}

// ---- Names in scope ----------------------------------------------------------------------------

Expected<VarPtr> KernelTextParser::lookUpVar(const Token &name) const {
  auto it = vars_.find(std::string(name.spelling));
  if (it == vars_.end() || !it->second.inScope)
    return errorAt(name, fmt::format("undefined variable '{}'", name.spelling));
  return it->second.var;
}

Expected<BufferPtr> KernelTextParser::lookUpBuffer(const Token &name) const {
  auto it = buffers_.find(std::string(name.spelling));
  if (it == buffers_.end() || !it->second.inScope)
    return errorAt(name, fmt::format("undefined buffer '{}'", name.spelling));
  return it->second.buffer;
}

Expected<BufferPtr> KernelTextParser::expectBufferName() {
  if (peek().kind != TokenKind::Identifier)
    return expected("a buffer name");
  KILN_TRY(BufferPtr buffer, lookUpBuffer(peek()));
  advance();
  return buffer;
}

Expected<VarPtr> KernelTextParser::bindVar(const Token &name, Type type) {
  std::string key(name.spelling);
  auto [it, fresh] = vars_.try_emplace(key, VarBinding{std::make_shared<Var>(Var{key, type}), true});
  VarBinding &binding = it->second;
  if (!fresh) {
    if (binding.inScope)
      return errorAt(name, fmt::format("variable '{}' is already bound here", key));
    if (binding.var->type != type)
      return errorAt(name, fmt::format("variable '{}' was bound before as {}, here as {} (one "
                                       "name is one variable)",
                                       key, typeName(binding.var->type), typeName(type)));
    binding.inScope = true;
  }
  return binding.var;
}

void KernelTextParser::unbindVar(const std::string &name) { vars_[name].inScope = false; }

Expected<BufferPtr> KernelTextParser::bindBuffer(const Token &name, DType dtype, int64_t size,
                                                 MemScope scope) {
  std::string key(name.spelling);
  auto buffer = std::make_shared<Buffer>(Buffer{key, dtype, size, scope});
  auto [it, fresh] = buffers_.try_emplace(key, BufferBinding{buffer, true});
  BufferBinding &binding = it->second;
  if (!fresh) {
    if (binding.inScope)
      return errorAt(name, fmt::format("buffer '{}' is already defined here", key));
    if (describeBuffer(*binding.buffer) != describeBuffer(*buffer))
      return errorAt(name, fmt::format("buffer '{}' was allocated before as {}, here as {} (one "
                                       "name is one buffer)",
                                       key, describeBuffer(*binding.buffer), describeBuffer(*buffer)));
    binding.inScope = true;
  }
  return binding.buffer;
}

void KernelTextParser::unbindBuffer(const std::string &name) { buffers_[name].inScope = false; }

} // namespace kiln::kir::text
