// The kernel IR parser's state, shared by its parts: tokens, errors and names
// (ParserCore.cpp), expressions (ParserExpressions.cpp), statements and kernels
// (ParserStatements.cpp) and the GPU statements (ParserGpuStatements.cpp).
// Internal to ir/kernel/Parser*.cpp; the interface is ir/kernel/Parser.h.
#pragma once

#include "ir/kernel/KernelIR.h"
#include "ir/kernel/ParserLexer.h"

#include "support/Error.h"

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::kir::text {

/// Deeper nesting (parentheses, blocks, lets and allocs, which nest what follows them) than
/// this is an error, not a stack overflow in the parser or in the recursive walks (printer,
/// passes) after it. Lowered kernels nest far less.
inline constexpr int kMaxNesting = 600;
/// Vector types are at most this wide (a 512-bit register of bytes).
inline constexpr int kMaxLanes = 64;

class KernelTextParser {
public:
  KernelTextParser(std::vector<Token> tokens, std::string fileName)
      : tokens_(std::move(tokens)), fileName_(std::move(fileName)) {}

  /// Whether only the end of input is left.
  bool atEnd() const { return peek().kind == TokenKind::EndOfInput; }
  /// One `kernel name(...) { ... }`.
  Expected<Kernel> parseKernel();

private:
  // ---- Tokens and errors (ParserCore.cpp)
  const Token &peek(size_t ahead = 0) const;
  const Token &advance();
  /// Consumes the next token when it is the keyword or punctuation `text`.
  bool accept(std::string_view text);
  Expected<const Token *> expect(std::string_view text);
  std::unexpected<Error> errorAt(const Token &token, std::string message) const;
  /// "expected WHAT, found 'x'" at the next token.
  std::unexpected<Error> expected(std::string_view what) const;
  Expected<std::string> expectName(std::string_view what);
  /// An integer literal without suffix, optionally negative.
  Expected<int64_t> expectInteger(std::string_view what);
  /// A dtype name ("f32").
  Expected<DType> expectDType();
  /// A type name ("f32", "f32x8", "boolx4").
  Expected<Type> expectType();
  /// The type `text` names, or nullopt.
  static std::optional<Type> typeNamed(std::string_view text);

  // ---- Names in scope (ParserCore.cpp)
  Expected<VarPtr> lookUpVar(const Token &name) const;
  Expected<BufferPtr> lookUpBuffer(const Token &name) const;
  Expected<BufferPtr> expectBufferName();
  /// Binds `name` for a loop or let: the same name bound again after its scope ended is the
  /// same variable (the printer names each object once), so it must have the same type.
  Expected<VarPtr> bindVar(const Token &name, Type type);
  void unbindVar(const std::string &name);
  Expected<BufferPtr> bindBuffer(const Token &name, DType dtype, int64_t size, MemScope scope);
  void unbindBuffer(const std::string &name);

  // ---- Expressions (ParserExpressions.cpp)
  /// An expression whose operators bind at least as tightly as `minPrecedence`.
  Expected<ExprPtr> parseExpr(int minPrecedence = 0);
  Expected<ExprPtr> parseUnary();
  Expected<ExprPtr> parsePrimary();
  Expected<ExprPtr> parseNumber(bool negative);
  Expected<ExprPtr> parseNamedConstant(const Token &token, bool negative);
  Expected<ExprPtr> parseLoad();
  Expected<ExprPtr> parseCall(const Token &name);
  Expected<std::vector<ExprPtr>> parseArguments(size_t count, std::string_view what);
  Expected<ExprPtr> makeBinary(BinaryOp op, const Token &opToken, ExprPtr lhs, ExprPtr rhs);
  /// An expression of exactly `type`, for `what` ("the store index").
  Expected<ExprPtr> parseExprOfType(Type type, std::string_view what);
  Expected<ExprPtr> parseIndex(std::string_view what) { return parseExprOfType(Type::index(), what); }
  /// `[index]` after a buffer name.
  Expected<ExprPtr> parseSubscript(std::string_view what);

  // ---- Statements (ParserStatements.cpp; the GPU ones in ParserGpuStatements.cpp)
  /// Statements up to the closing '}' (not consumed). A let or alloc without braces of its
  /// own scopes over the rest of the list.
  Expected<std::vector<StmtPtr>> parseStatementList();
  /// `{ statements }` as one Block (a nested block statement).
  Expected<StmtPtr> parseBracedBlock();
  /// `{ statements }` as the body of a loop, if, braced let or kernel (see makeBody).
  Expected<StmtPtr> parseBody();
  Expected<StmtPtr> parseStatement();
  Expected<StmtPtr> parseFor();
  Expected<StmtPtr> parseIf();
  Expected<StmtPtr> parseStore();
  Expected<StmtPtr> parseAtomic();
  /// `keyword role=value, ...` as the op's signature lists its roles.
  Expected<StmtPtr> parseTargetInstr(TargetOp op);
  Expected<TargetOperand> parseOperand(OperandKind kind, std::string_view what);
  /// `buffer[offset:]`; the statement checks its scope, dtype and extent.
  Expected<Fragment> parseFragment();
  Expected<SharedMatrix> parseSharedMatrix();
  Expected<TensorMapPtr> parseTensorMap();
  Expected<std::vector<int64_t>> parseIntegerList();
  /// An optional ` if predicate` on the line of `statement` (a bool scalar).
  Expected<ExprPtr> parseTrailingPredicate(const Token &statement, std::string_view what);

  struct VarBinding {
    VarPtr var;
    bool inScope = false;
  };
  struct BufferBinding {
    BufferPtr buffer;
    bool inScope = false;
  };
  struct MapBinding {
    TensorMapPtr map;
    const Token *first = nullptr;
  };

  std::vector<Token> tokens_;
  std::string fileName_;
  size_t pos_ = 0;
  int depth_ = 0; ///< current nesting, checked against kMaxNesting
  std::unordered_map<std::string, VarBinding> vars_;
  std::unordered_map<std::string, BufferBinding> buffers_;
  std::unordered_map<std::string, MapBinding> maps_;
};

/// "f32[16] shared": a buffer as errors describe it.
std::string describeBuffer(const Buffer &buffer);

/// The error text for nesting past kMaxNesting.
inline std::string tooDeepMessage() {
  return "nested deeper than " + std::to_string(kMaxNesting) +
         " levels (parentheses, blocks, and lets and allocs without braces, which nest the "
         "statements after them)";
}

/// Counts one level of nesting for as long as it lives.
class NestingGuard {
public:
  explicit NestingGuard(int &depth) : depth_(depth) { ++depth_; }
  ~NestingGuard() { --depth_; }
  NestingGuard(const NestingGuard &) = delete;
  NestingGuard &operator=(const NestingGuard &) = delete;
  bool tooDeep() const { return depth_ > kMaxNesting; }

private:
  int &depth_;
};

} // namespace kiln::kir::text
