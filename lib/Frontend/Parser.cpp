//===- Parser.cpp - sketch source to the sketch dialect -------------------===//
//
// A recursive-descent parser over the tokens of Lexer.h. It builds one
// sketch.kernel per kernel with OpBuilder; every op is located at the first
// token of its statement. The parser checks syntax only: names, shapes and
// register tiles are checked by the dialect verifiers, which the driver runs
// after parsing. The first error is reported through mlir::emitError and
// parsing stops.
//
// Line continuation: inside brackets a statement runs on over newlines; a line
// more indented than the statement continues it (the lexer joins it); and an
// incomplete statement continues on a following line at the same indentation
// when that line does not start with a statement keyword (so the seed's
// `Copy A (BM, BK) in coordinate [L = i]` / `from global to shared` parses).
//
//===----------------------------------------------------------------------===//
#include "lib/Frontend/Parser.h"

#include "dialect/SketchDialect.h"
#include "lib/Frontend/Lexer.h"
#include "lib/Frontend/TakenNames.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"

#include <deque>

using namespace mlir;
using namespace sketch;

namespace {

/// Deepest nesting of `for` loops, and of parentheses in one expression.
constexpr unsigned kMaxLoopDepth = 32;
constexpr unsigned kMaxExpressionDepth = 200;
/// Most binary operators in one expression: the printer and the emitters
/// recurse over the expression tree, so a long chain is deep too.
constexpr unsigned kMaxExpressionOperators = 1000;
/// Most statements in one kernel, loop bodies included: the completion passes
/// follow chains of statements, at a cost that grows faster than their length.
constexpr unsigned kMaxStatements = 128;

class Parser {
public:
  Parser(llvm::SourceMgr &sourceMgr, MLIRContext *context);
  OwningOpRef<ModuleOp> parseFile();

private:
  // Tokens.
  const Token &peek(unsigned ahead = 0);
  Token consume();
  bool at(TokenKind kind) { return peek().is(kind); }
  bool atWord(StringRef word) { return peek().isWord(word); }
  bool consumeIf(TokenKind kind);
  bool consumeWordIf(StringRef word);
  void continueIncompleteStatement();

  // Errors.
  Location locationOf(const Token &token);
  Location locationAfterPrevious();
  InFlightDiagnostic errorAt(const Token &token);
  InFlightDiagnostic reportExpected(const Twine &what);
  LogicalResult expected(const Twine &what);
  LogicalResult expect(TokenKind kind, const Twine &what);
  LogicalResult expectWord(StringRef word, const Twine &what);
  LogicalResult expectClosing(TokenKind kind, const Token &open, const Twine &what);
  LogicalResult expectEndOfStatement();
  LogicalResult parseBlockOpening(StringRef header);

  // Small pieces.
  FailureOr<Token> parseName(const Twine &what);
  FailureOr<int64_t> parseInteger(const Twine &what);
  FailureOr<int64_t> parsePositiveInteger(StringRef what);
  FailureOr<MemorySpace> parseSpace(const Twine &what);
  FailureOr<std::string> parseDimExpr(const Twine &what);
  LogicalResult parseDimOperand(std::string &text, const Twine &what);
  FailureOr<SmallVector<std::string>> parseDimList(const Twine &what);
  ArrayAttr stringArray(ArrayRef<std::string> items);

  // Kernels, parameters, directives.
  LogicalResult parseKernel();
  LogicalResult checkKernelName(const Token &name);
  LogicalResult parseParams(Token open);
  LogicalResult parseParam();
  LogicalResult parseTensorParam(const Token &name, const Token &type);
  LogicalResult parseScalarParam(const Token &name, const Token &type);
  FailureOr<SmallVector<std::string>> parseShape(StringRef tensor);
  LogicalResult parseKernelBody(KernelOp kernel, const Token &name);
  static bool isDirective(const Token &token);
  LogicalResult parseDirective(KernelOp kernel);
  LogicalResult parseTileDirective(KernelOp kernel);
  LogicalResult parseAlgorithmDirective(KernelOp kernel);
  LogicalResult parseSplitDirective(KernelOp kernel);
  LogicalResult parseCountDirective(KernelOp kernel);

  // Statements.
  LogicalResult parseStatement(unsigned loopDepth);
  LogicalResult unknownStatement();
  LogicalResult parseAllocate();
  LogicalResult parseCopy();
  LogicalResult parseCoordinate(StringAttr &coordinate);
  LogicalResult parseReshape();
  LogicalResult parseFor(unsigned loopDepth);
  LogicalResult parseCompute();
  LogicalResult parseGemm(Location loc);
  FailureOr<std::pair<Token, bool>> parseGemmOperand(StringRef role);
  FailureOr<bool> parseGetOrAccumulate(StringRef what);
  LogicalResult parseConv2d(Location loc);
  FailureOr<SmallVector<int64_t, 2>> parsePair(StringRef what);
  LogicalResult parseSoftmax(Location loc);
  LogicalResult parseMask(Location loc);
  LogicalResult parseElementwise(Location loc, ElementwiseKind kind, StringRef spelling);
  FailureOr<std::string> parseElementwiseOperand(StringRef what);

  // `Compute Y = EXPR`.
  LogicalResult parseAssign(Location loc);
  FailureOr<Value> parseExpr();
  FailureOr<Value> parseTerm();
  FailureOr<Value> parseUnary();
  FailureOr<Value> parsePrimary();
  FailureOr<Value> parseParenthesized(bool counted = true);
  FailureOr<Value> parseCall();
  /// `lhs op rhs`, or an error where numbers alone divide by 0 or underflow f32.
  FailureOr<Value> createBinary(const Token &op, Value lhs, Value rhs);
  LogicalResult enterNesting(const Token &at);
  LogicalResult countOperator(const Token &op);

  MLIRContext *context;
  StringAttr fileName;
  Lexer lexer;
  std::deque<Token> lookahead;
  Token previous;
  OpBuilder builder;
  Type f32;
  unsigned nesting = 0; // parentheses and unary minus in the current expression
  unsigned operators = 0; // binary operators in the current expression
  unsigned statements = 0; // statements of the current kernel
  llvm::StringMap<Location> kernelNames;
};

} // namespace

Parser::Parser(llvm::SourceMgr &sourceMgr, MLIRContext *context)
    : context(context),
      lexer(sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBuffer()),
      builder(context) {
  fileName = StringAttr::get(
      context, sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID())->getBufferIdentifier());
  f32 = builder.getF32Type();
}

//===----------------------------------------------------------------------===//
// Tokens
//===----------------------------------------------------------------------===//

const Token &Parser::peek(unsigned ahead) {
  while (lookahead.size() <= ahead)
    lookahead.push_back(lexer.next());
  return lookahead[ahead];
}

Token Parser::consume() {
  peek();
  previous = lookahead.front();
  lookahead.pop_front();
  return previous;
}

bool Parser::consumeIf(TokenKind kind) {
  if (!at(kind))
    return false;
  consume();
  return true;
}

bool Parser::consumeWordIf(StringRef word) {
  if (!atWord(word))
    return false;
  consume();
  return true;
}

static bool startsStatement(const Token &token) {
  if (!token.is(TokenKind::Identifier))
    return false;
  return llvm::StringSwitch<bool>(token.spelling)
      .Cases("Allocate", "Copy", "Compute", "Reshape", "for", true)
      .Cases("kernel", "tile", "warps", "stages", "algorithm", "split_k", true)
      .Default(false);
}

/// A statement that still needs a token at the end of a line goes on on the
/// next line, unless that line starts a new statement or block.
void Parser::continueIncompleteStatement() {
  if (!at(TokenKind::Newline))
    return;
  const Token &next = peek(1);
  bool layout = next.is(TokenKind::Indent) || next.is(TokenKind::Dedent) ||
                next.is(TokenKind::Newline) || next.is(TokenKind::EndOfFile) ||
                next.is(TokenKind::Error);
  if (!layout && !startsStatement(next))
    consume();
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

Location Parser::locationOf(const Token &token) {
  return FileLineColLoc::get(fileName, token.line, token.column);
}

Location Parser::locationAfterPrevious() {
  return FileLineColLoc::get(fileName, previous.line,
                             previous.column + unsigned(previous.spelling.size()));
}

/// An error at `token`; the lexer's own message when the token is an error.
InFlightDiagnostic Parser::errorAt(const Token &token) {
  InFlightDiagnostic diag = emitError(locationOf(token));
  if (token.is(TokenKind::Error))
    diag << lexer.errorMessage();
  return diag;
}

/// Reports that `what` was expected at the current token. When that token is
/// on a later line, the error points just after the previous token.
InFlightDiagnostic Parser::reportExpected(const Twine &what) {
  const Token &token = peek();
  if (token.is(TokenKind::Error))
    return errorAt(token);
  if (token.line != previous.line && !previous.spelling.empty())
    return std::move(emitError(locationAfterPrevious()) << "expected " << what);
  return std::move(errorAt(token) << "expected " << what << ", found " << describeToken(token));
}

LogicalResult Parser::expected(const Twine &what) { return reportExpected(what); }

/// Expects the bracket that closes `open`; when the error is on another line
/// than `open`, a note points at the opening bracket.
LogicalResult Parser::expectClosing(TokenKind kind, const Token &open, const Twine &what) {
  if (consumeIf(kind))
    return success();
  InFlightDiagnostic diag = reportExpected(what);
  if (!at(TokenKind::Error) && peek().line != open.line)
    diag.attachNote(locationOf(open)) << "to match this '" << open.spelling << "'";
  return diag;
}

LogicalResult Parser::expect(TokenKind kind, const Twine &what) {
  continueIncompleteStatement();
  if (consumeIf(kind))
    return success();
  return expected(what);
}

LogicalResult Parser::expectWord(StringRef word, const Twine &what) {
  continueIncompleteStatement();
  if (consumeWordIf(word))
    return success();
  return expected(what);
}

LogicalResult Parser::expectEndOfStatement() {
  if (consumeIf(TokenKind::Newline) || at(TokenKind::Dedent) || at(TokenKind::EndOfFile))
    return success();
  if (peek().continuesLine)
    return errorAt(peek()) << "unexpected indent (the statement above is complete)";
  return expected("end of line after the statement");
}

/// The end of a line ending in ':' and the indented block after it.
LogicalResult Parser::parseBlockOpening(StringRef header) {
  if (!consumeIf(TokenKind::Newline))
    return expected(Twine("end of line after the ':' of ") + header);
  if (consumeIf(TokenKind::Indent))
    return success();
  if (at(TokenKind::Error))
    return errorAt(peek());
  return errorAt(peek()) << "expected an indented block after " << header;
}

//===----------------------------------------------------------------------===//
// Small pieces
//===----------------------------------------------------------------------===//

FailureOr<Token> Parser::parseName(const Twine &what) {
  continueIncompleteStatement();
  if (!at(TokenKind::Identifier))
    return expected(what);
  return consume();
}

FailureOr<int64_t> Parser::parseInteger(const Twine &what) {
  continueIncompleteStatement();
  if (!at(TokenKind::Integer))
    return expected(what);
  int64_t value = 0;
  if (consume().spelling.getAsInteger(10, value)) // the lexer checked the range
    return emitError(locationOf(previous)) << "integer out of range";
  return value;
}

FailureOr<int64_t> Parser::parsePositiveInteger(StringRef what) {
  FailureOr<int64_t> value = parseInteger(Twine("the value of ") + what + " (an integer)");
  if (failed(value))
    return failure();
  if (*value < 1)
    return errorAt(previous) << "the value of " << what << " must be a positive integer, got "
                             << *value;
  return value;
}

FailureOr<MemorySpace> Parser::parseSpace(const Twine &what) {
  FailureOr<Token> name = parseName(what);
  if (failed(name))
    return failure();
  if (std::optional<MemorySpace> space = symbolizeMemorySpace(name->spelling))
    return *space;
  return errorAt(*name) << "unknown memory space '" << name->spelling
                        << "' (expected global, shared or register)";
}

/// A dimension expression (`BM`, `128`, `C*R*S`, `(M+1)/2`) as its text
/// without spaces.
FailureOr<std::string> Parser::parseDimExpr(const Twine &what) {
  std::string text;
  if (failed(parseDimOperand(text, what)))
    return failure();
  while (at(TokenKind::Plus) || at(TokenKind::Minus) || at(TokenKind::Star) ||
         at(TokenKind::Slash)) {
    text += consume().spelling;
    if (failed(parseDimOperand(text, "a size symbol, an integer or '(' after the operator")))
      return failure();
  }
  return text;
}

LogicalResult Parser::parseDimOperand(std::string &text, const Twine &what) {
  continueIncompleteStatement();
  if (at(TokenKind::Identifier) || at(TokenKind::Integer)) {
    text += consume().spelling;
    return success();
  }
  if (!at(TokenKind::LParen))
    return expected(what);
  if (failed(enterNesting(peek())))
    return failure();
  Token open = consume();
  FailureOr<std::string> inner = parseDimExpr(what);
  --nesting;
  if (failed(inner) || failed(expectClosing(TokenKind::RParen, open, "')' to close the '('")))
    return failure();
  text += "(" + *inner + ")";
  return success();
}

FailureOr<SmallVector<std::string>> Parser::parseDimList(const Twine &what) {
  if (failed(expect(TokenKind::LParen, Twine("'(' and ") + what)))
    return failure();
  Token open = previous;
  SmallVector<std::string> dims;
  do {
    FailureOr<std::string> dim = parseDimExpr("a dimension (a size symbol, an integer or an "
                                              "expression of them)");
    if (failed(dim))
      return failure();
    dims.push_back(*dim);
  } while (consumeIf(TokenKind::Comma));
  if (failed(expectClosing(TokenKind::RParen, open, "',' or ')' in the dimension list")))
    return failure();
  return dims;
}

ArrayAttr Parser::stringArray(ArrayRef<std::string> items) {
  SmallVector<Attribute> attrs;
  for (const std::string &item : items)
    attrs.push_back(builder.getStringAttr(item));
  return builder.getArrayAttr(attrs);
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> Parser::parseFile() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(FileLineColLoc::get(fileName, 1, 1));
  builder.setInsertionPointToEnd(module->getBody());
  if (at(TokenKind::EndOfFile)) {
    emitError(locationOf(peek())) << "expected a kernel ('kernel NAME(PARAM, ...):'), "
                                     "found end of file";
    return nullptr;
  }
  while (!at(TokenKind::EndOfFile))
    if (failed(parseKernel()))
      return nullptr;
  return module;
}

/// Why a kernel name cannot name the generated host function (`extern "C"`, at file scope
/// beside the CUDA headers and sketch's runtime), or "" where it can.
static StringRef takenKernelName(StringRef name) {
  // the generated code's own (the back-to-back GEMM's shared-tile layouts)
  static const llvm::StringSet<> generatedNames = {"Padded", "PaddedKMajor", "is_k_major"};
  if (isCxxKeyword(name))
    return "a C++ keyword";
  if (name == "main")
    return "C++'s entry point";
  if (declaredByCudaHeaders(name))
    return "declared by the headers the generated .cu includes (CUDA, the C library, sketch's "
           "runtime)";
  if (generatedNames.contains(name))
    return "declared by the generated code";
  if (name.starts_with("__") || (name.size() > 1 && name[0] == '_' && llvm::isUpper(name[1])))
    return "reserved in C++ (it starts with '__', or '_' and a capital)";
  if (name.starts_with("sketch_b2b") || name.starts_with("sketch_built_") ||
      name.starts_with("SKETCH_"))
    return "taken by the generated code ('sketch_b2b...', 'sketch_built_...', 'SKETCH_...')";
  if (name.starts_with("cuda") || (name.size() > 2 && name.starts_with("cu") && llvm::isUpper(name[2])))
    return "taken by the CUDA API ('cuda...', 'cu' and a capital)";
  return "";
}

LogicalResult Parser::checkKernelName(const Token &name) {
  if (StringRef taken = takenKernelName(name.spelling); !taken.empty())
    return errorAt(name) << "kernel name '" << name.spelling << "' is " << taken
                         << ": its host function would not compile; choose another name";
  Location loc = locationOf(name);
  auto [it, inserted] = kernelNames.try_emplace(name.spelling, loc);
  if (inserted)
    return success();
  InFlightDiagnostic diag = errorAt(name) << "duplicate kernel '" << name.spelling << "'";
  diag.attachNote(it->second) << "'" << name.spelling << "' is first defined here";
  return failure();
}

LogicalResult Parser::parseKernel() {
  if (peek().continuesLine || at(TokenKind::Indent))
    return errorAt(peek()) << "unexpected indent";
  if (!atWord("kernel"))
    return expected("a kernel ('kernel NAME(PARAM, ...):')");
  Token start = consume();
  FailureOr<Token> name = parseName("a kernel name after 'kernel'");
  if (failed(name) || failed(checkKernelName(*name)))
    return failure();
  statements = 0;
  auto kernel = builder.create<KernelOp>(locationOf(start), name->spelling, IntegerAttr(),
                                         IntegerAttr(), IntegerAttr(), IntegerAttr(),
                                         IntegerAttr(), StringAttr(), StringAttr());
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(&kernel.getBody().emplaceBlock());
  if (failed(expect(TokenKind::LParen, "'(' and the parameter list after the kernel name")) ||
      failed(parseParams(previous)) ||
      failed(expect(TokenKind::Colon, "':' after the parameter list")) ||
      failed(parseBlockOpening("the kernel header")))
    return failure();
  return parseKernelBody(kernel, *name);
}

LogicalResult Parser::parseParams(Token open) {
  if (consumeIf(TokenKind::RParen))
    return success();
  do {
    if (failed(parseParam()))
      return failure();
  } while (consumeIf(TokenKind::Comma));
  return expectClosing(TokenKind::RParen, open, "',' or ')' after a parameter");
}

/// `NAME: DTYPE[DIM, ...] [LAYOUT]` or `NAME: f32|i32`.
LogicalResult Parser::parseParam() {
  FailureOr<Token> name = parseName("a parameter name");
  if (failed(name))
    return failure();
  if (failed(expect(TokenKind::Colon, "':' after parameter '" + name->spelling + "'")))
    return failure();
  FailureOr<Token> type = parseName("a type after '" + name->spelling + ":' (f16, bf16 or f32 "
                                    "with a shape; f32 or i32 for a scalar)");
  if (failed(type))
    return failure();
  if (at(TokenKind::LBracket))
    return parseTensorParam(*name, *type);
  return parseScalarParam(*name, *type);
}

LogicalResult Parser::parseTensorParam(const Token &name, const Token &type) {
  std::optional<ElementType> elementType = symbolizeElementType(type.spelling);
  if (!elementType)
    return errorAt(type) << "unknown dtype '" << type.spelling << "' (expected f16, bf16 or f32)";
  FailureOr<SmallVector<std::string>> dims = parseShape(name.spelling);
  if (failed(dims))
    return failure();
  LayoutAttr layout;
  // A layout is a word after the shape. A word followed by ':' is the next
  // parameter with its ',' missing, and an unknown word on a later line is
  // more likely a statement after a missing ')': parseParams reports those.
  const Token &word = peek();
  bool layoutWord = word.is(TokenKind::Identifier) && symbolizeLayout(word.spelling);
  bool sameLine = word.is(TokenKind::Identifier) && word.line == previous.line &&
                  !peek(1).is(TokenKind::Colon);
  if (layoutWord || sameLine) {
    Token word = consume();
    std::optional<Layout> value = symbolizeLayout(word.spelling);
    if (!value)
      return errorAt(word) << "unknown layout '" << word.spelling
                           << "' (expected nchw, nhwc, kcrs or krsc)";
    layout = LayoutAttr::get(context, *value);
  }
  builder.create<TensorParamOp>(locationOf(name), name.spelling, *elementType,
                                stringArray(*dims), layout);
  return success();
}

/// `[DIM, ...]`: each DIM a size symbol or an integer literal.
FailureOr<SmallVector<std::string>> Parser::parseShape(StringRef tensor) {
  Token open = consume(); // '['
  SmallVector<std::string> dims;
  do {
    if (!at(TokenKind::Identifier) && !at(TokenKind::Integer))
      return expected("a dimension of '" + tensor + "' (a size symbol or an integer)");
    dims.push_back(consume().spelling.str());
  } while (consumeIf(TokenKind::Comma));
  if (failed(expectClosing(TokenKind::RBracket, open,
                           "',' or ']' in the shape of '" + tensor + "'")))
    return failure();
  return dims;
}

LogicalResult Parser::parseScalarParam(const Token &name, const Token &type) {
  if (std::optional<ScalarKind> kind = symbolizeScalarKind(type.spelling)) {
    builder.create<ScalarParamOp>(locationOf(name), name.spelling, *kind);
    return success();
  }
  if (symbolizeElementType(type.spelling))
    return errorAt(type) << "a scalar parameter is f32 or i32; a tensor needs a shape, as in '"
                         << name.spelling << ": " << type.spelling << "[M, N]'";
  return errorAt(type) << "unknown dtype '" << type.spelling
                       << "' (expected f16, bf16 or f32 with a shape, or f32 or i32 for a "
                          "scalar)";
}

bool Parser::isDirective(const Token &token) {
  return token.isWord("tile") || token.isWord("warps") || token.isWord("stages") ||
         token.isWord("algorithm") || token.isWord("split_k");
}

/// Directives, then at least one statement, then the end of the block.
LogicalResult Parser::parseKernelBody(KernelOp kernel, const Token &name) {
  bool sawStatement = false;
  while (!at(TokenKind::Dedent) && !at(TokenKind::EndOfFile)) {
    if (isDirective(peek()) && !sawStatement) {
      if (failed(parseDirective(kernel)))
        return failure();
      continue;
    }
    if (failed(parseStatement(/*loopDepth=*/0)))
      return failure();
    sawStatement = true;
  }
  if (!sawStatement)
    return errorAt(name) << "kernel '" << name.spelling << "' has no statements";
  consumeIf(TokenKind::Dedent);
  return success();
}

LogicalResult Parser::parseDirective(KernelOp kernel) {
  if (atWord("tile"))
    return parseTileDirective(kernel);
  if (atWord("algorithm"))
    return parseAlgorithmDirective(kernel);
  if (atWord("split_k"))
    return parseSplitDirective(kernel);
  return parseCountDirective(kernel);
}

/// `split_k auto` or `split_k N` (an extension: a GEMM's K loop split over N
/// slices, or split as the host function chooses; sketch-choose-defaults checks it).
LogicalResult Parser::parseSplitDirective(KernelOp kernel) {
  Token word = consume();
  if (kernel.getSplitK())
    return errorAt(word) << "directive 'split_k' is given twice";
  if (consumeWordIf("auto")) {
    kernel.setSplitKAttr(builder.getStringAttr("auto"));
    return expectEndOfStatement();
  }
  if (!at(TokenKind::Integer))
    return expected("'auto' or the number of K slices after 'split_k'");
  FailureOr<int64_t> value = parsePositiveInteger("split_k");
  if (failed(value))
    return failure();
  kernel.setSplitKAttr(builder.getStringAttr(std::to_string(*value)));
  return expectEndOfStatement();
}

/// `algorithm winograd`, `winograd_2x2` or `implicit_gemm` (an extension: which
/// convolution kernel to emit; sketch-choose-defaults checks that it applies).
LogicalResult Parser::parseAlgorithmDirective(KernelOp kernel) {
  Token word = consume();
  if (kernel.getAlgorithm())
    return errorAt(word) << "directive 'algorithm' is given twice";
  FailureOr<Token> name = parseName("an algorithm (winograd, winograd_2x2 or implicit_gemm)");
  if (failed(name))
    return failure();
  if (name->spelling != "winograd" && name->spelling != "winograd_2x2" &&
      name->spelling != "implicit_gemm")
    return errorAt(*name) << "unknown algorithm '" << name->spelling
                          << "' (expected winograd, winograd_2x2 or implicit_gemm)";
  kernel.setAlgorithmAttr(builder.getStringAttr(name->spelling));
  return expectEndOfStatement();
}

/// `tile BM = 128, BN = 128, BK = 32`, any subset of BM, BN, BK.
LogicalResult Parser::parseTileDirective(KernelOp kernel) {
  consume(); // tile
  do {
    FailureOr<Token> key = parseName("a tile size (BM, BN or BK)");
    if (failed(key))
      return failure();
    StringRef attrName = llvm::StringSwitch<StringRef>(key->spelling)
                             .Case("BM", "tile_m")
                             .Case("BN", "tile_n")
                             .Case("BK", "tile_k")
                             .Default("");
    if (attrName.empty())
      return errorAt(*key) << "unknown tile size '" << key->spelling
                           << "' (expected BM, BN or BK)";
    if (kernel->hasAttr(attrName))
      return errorAt(*key) << "tile size " << key->spelling << " is given twice";
    if (failed(expect(TokenKind::Equal, "'=' after '" + key->spelling + "'")))
      return failure();
    FailureOr<int64_t> value = parsePositiveInteger(key->spelling);
    if (failed(value))
      return failure();
    kernel->setAttr(attrName, builder.getI64IntegerAttr(*value));
  } while (consumeIf(TokenKind::Comma));
  return expectEndOfStatement();
}

/// `warps N` or `stages N`.
LogicalResult Parser::parseCountDirective(KernelOp kernel) {
  Token word = consume();
  StringRef attrName = word.spelling; // the attributes are named `warps` and `stages`
  if (kernel->hasAttr(attrName))
    return errorAt(word) << "directive '" << word.spelling << "' is given twice";
  FailureOr<int64_t> value = parsePositiveInteger(word.spelling);
  if (failed(value))
    return failure();
  kernel->setAttr(attrName, builder.getI64IntegerAttr(*value));
  return expectEndOfStatement();
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseStatement(unsigned loopDepth) {
  const Token &start = peek();
  if (start.continuesLine || start.is(TokenKind::Indent))
    return errorAt(start) << "unexpected indent";
  if (++statements > kMaxStatements)
    return errorAt(start) << "too many statements in one kernel (the limit is " << kMaxStatements
                          << ")";
  if (start.isWord("Allocate"))
    return parseAllocate();
  if (start.isWord("Copy"))
    return parseCopy();
  if (start.isWord("Compute"))
    return parseCompute();
  if (start.isWord("Reshape"))
    return parseReshape();
  if (start.isWord("for"))
    return parseFor(loopDepth);
  if (isDirective(start))
    return errorAt(start) << "directive '" << start.spelling
                          << "' must come before the statements of the kernel";
  return unknownStatement();
}

/// A lowercase word followed by a number or `NAME =` looks like a directive.
LogicalResult Parser::unknownStatement() {
  const Token &start = peek();
  if (!start.is(TokenKind::Identifier))
    return expected("a statement (Allocate, Copy, Compute, Reshape or for)");
  bool looksLikeDirective =
      llvm::isLower(start.spelling.front()) &&
      (peek(1).is(TokenKind::Integer) ||
       (peek(1).is(TokenKind::Identifier) && peek(2).is(TokenKind::Equal)));
  if (looksLikeDirective)
    return errorAt(start) << "unknown directive '" << start.spelling
                          << "' (expected tile, warps, stages, algorithm or split_k)";
  return errorAt(start) << "unknown statement '" << start.spelling
                        << "' (expected Allocate, Copy, Compute, Reshape or for)";
}

/// `Allocate X in SPACE (D, ...) [with offset EXPR]`.
LogicalResult Parser::parseAllocate() {
  Location loc = locationOf(consume());
  FailureOr<Token> name = parseName("the name of the tensor to allocate");
  if (failed(name) || failed(expectWord("in", "'in' after 'Allocate " + name->spelling + "'")))
    return failure();
  FailureOr<MemorySpace> space = parseSpace("a memory space (global, shared or register)");
  if (failed(space))
    return failure();
  FailureOr<SmallVector<std::string>> dims = parseDimList("the dimensions of the allocation");
  if (failed(dims))
    return failure();
  StringAttr offset;
  if (consumeWordIf("with")) {
    if (failed(expectWord("offset", "'offset' after 'with'")))
      return failure();
    FailureOr<std::string> expr = parseDimExpr("the offset (a size symbol or an expression)");
    if (failed(expr))
      return failure();
    offset = builder.getStringAttr(*expr);
  }
  builder.create<AllocateOp>(loc, name->spelling, *space, stringArray(*dims), offset);
  return expectEndOfStatement();
}

/// `Copy X [(D, D)] [in coordinate [L = EXPR]] from SPACE to SPACE`.
LogicalResult Parser::parseCopy() {
  Location loc = locationOf(consume());
  FailureOr<Token> name = parseName("the name of the tensor to copy");
  if (failed(name))
    return failure();
  ArrayAttr tile;
  if (at(TokenKind::LParen)) {
    FailureOr<SmallVector<std::string>> dims = parseDimList("the tile");
    if (failed(dims))
      return failure();
    tile = stringArray(*dims);
  }
  StringAttr coordinate;
  if (consumeWordIf("in") && failed(parseCoordinate(coordinate)))
    return failure();
  if (failed(expectWord("from", "'from' and the source memory space")))
    return failure();
  FailureOr<MemorySpace> source = parseSpace("the source memory space (global, shared or "
                                             "register)");
  if (failed(source) || failed(expectWord("to", "'to' and the destination memory space")))
    return failure();
  FailureOr<MemorySpace> destination =
      parseSpace("the destination memory space (global, shared or register)");
  if (failed(destination))
    return failure();
  builder.create<CopyOp>(loc, name->spelling, tile, coordinate, *source, *destination);
  return expectEndOfStatement();
}

/// `coordinate [L = EXPR]`, after `in`.
LogicalResult Parser::parseCoordinate(StringAttr &coordinate) {
  if (failed(expectWord("coordinate", "'coordinate' after 'in'")) ||
      failed(expect(TokenKind::LBracket, "'[' after 'coordinate'")))
    return failure();
  Token open = previous;
  if (failed(expectWord("L", "'L' in the coordinate, as in [L = k]")) ||
      failed(expect(TokenKind::Equal, "'=' after 'L'")))
    return failure();
  FailureOr<std::string> expr = parseDimExpr("the tile index (a loop variable or expression)");
  if (failed(expr) ||
      failed(expectClosing(TokenKind::RBracket, open, "']' to close the coordinate")))
    return failure();
  coordinate = builder.getStringAttr(*expr);
  return success();
}

/// `Reshape X from (A, B, C) to (D, E, F)`.
LogicalResult Parser::parseReshape() {
  Location loc = locationOf(consume());
  FailureOr<Token> name = parseName("the name of the tensor to reshape");
  if (failed(name) || failed(expectWord("from", "'from' and the current layout")))
    return failure();
  FailureOr<SmallVector<std::string>> from = parseDimList("the current layout");
  if (failed(from) || failed(expectWord("to", "'to' and the new layout")))
    return failure();
  FailureOr<SmallVector<std::string>> to = parseDimList("the new layout");
  if (failed(to))
    return failure();
  builder.create<ReshapeOp>(loc, name->spelling, stringArray(*from), stringArray(*to));
  return expectEndOfStatement();
}

/// `for VAR in LO:HI:` and its indented block.
LogicalResult Parser::parseFor(unsigned loopDepth) {
  Token start = consume();
  if (loopDepth >= kMaxLoopDepth)
    return errorAt(start) << "loops nested too deeply (the limit is " << kMaxLoopDepth
                          << " levels)";
  FailureOr<Token> var = parseName("the loop variable after 'for'");
  if (failed(var) || failed(expectWord("in", "'in' after the loop variable")))
    return failure();
  FailureOr<std::string> lower = parseDimExpr("the lower bound of the loop, as in 0:K");
  if (failed(lower) || failed(expect(TokenKind::Colon, "':' between the loop bounds")))
    return failure();
  FailureOr<std::string> upper = parseDimExpr("the upper bound of the loop, as in 0:K");
  if (failed(upper) || failed(expect(TokenKind::Colon, "':' at the end of the 'for' line")))
    return failure();
  auto loop = builder.create<ForOp>(locationOf(start), var->spelling, *lower, *upper);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(&loop.getBody().emplaceBlock());
  if (failed(parseBlockOpening("the 'for' line")))
    return failure();
  while (!at(TokenKind::Dedent) && !at(TokenKind::EndOfFile))
    if (failed(parseStatement(loopDepth + 1)))
      return failure();
  consumeIf(TokenKind::Dedent);
  return success();
}

//===----------------------------------------------------------------------===//
// Compute statements
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseCompute() {
  Location loc = locationOf(consume());
  continueIncompleteStatement();
  const Token &what = peek();
  if (what.is(TokenKind::Identifier) && peek(1).is(TokenKind::Equal))
    return parseAssign(loc);
  if (!what.is(TokenKind::Identifier))
    return expected("what to compute (GEMM, Conv2d, Softmax, an elementwise operation, or "
                    "NAME = EXPR)");
  Token word = consume();
  StringRef kind = word.spelling;
  if (kind == "GEMM")
    return parseGemm(loc);
  if (kind == "Conv2d")
    return parseConv2d(loc);
  if (kind == "Softmax")
    return parseSoftmax(loc);
  if (kind == "Mask")
    return parseMask(loc);
  if (std::optional<ElementwiseKind> elementwise = symbolizeElementwiseKind(kind))
    return parseElementwise(loc, *elementwise, kind);
  return errorAt(word) << "unknown Compute '" << kind
                       << "' (expected GEMM, Conv2d, Softmax, Mask, ReLU, GELU, SiLU, Sigmoid, "
                          "Tanh, LeakyReLU, Scale, Bias, Add, or NAME = EXPR)";
}

/// `A, B and get C` or `A, B^T and accumulate C`, after `Compute GEMM`.
LogicalResult Parser::parseGemm(Location loc) {
  auto lhs = parseGemmOperand("the first GEMM operand");
  if (failed(lhs) || failed(expect(TokenKind::Comma, "',' between the GEMM operands")))
    return failure();
  auto rhs = parseGemmOperand("the second GEMM operand");
  if (failed(rhs))
    return failure();
  FailureOr<bool> accumulate = parseGetOrAccumulate("the GEMM operands");
  if (failed(accumulate))
    return failure();
  FailureOr<Token> result = parseName("the name of the GEMM result");
  if (failed(result))
    return failure();
  if (at(TokenKind::Caret))
    return errorAt(peek()) << "the GEMM result cannot be transposed";
  builder.create<GemmOp>(loc, lhs->first.spelling, lhs->second, rhs->first.spelling,
                         rhs->second, result->spelling, *accumulate);
  return expectEndOfStatement();
}

/// `NAME` or `NAME^T`; the bool says transposed.
FailureOr<std::pair<Token, bool>> Parser::parseGemmOperand(StringRef role) {
  FailureOr<Token> name = parseName(role);
  if (failed(name))
    return failure();
  if (!consumeIf(TokenKind::Caret))
    return std::make_pair(*name, false);
  if (failed(expectWord("T", "'T' after '^' (as in B^T)")))
    return failure();
  return std::make_pair(*name, true);
}

/// `and get` (false) or `and accumulate` (true).
FailureOr<bool> Parser::parseGetOrAccumulate(StringRef what) {
  if (failed(expectWord("and", Twine("'and get' or 'and accumulate' after ") + what)))
    return failure();
  continueIncompleteStatement();
  if (consumeWordIf("get"))
    return false;
  if (consumeWordIf("accumulate"))
    return true;
  return expected("'get' or 'accumulate' after 'and'");
}

/// `X, W and get Y with stride (u, v) pad (p, q) [dilation (d, e)]`.
LogicalResult Parser::parseConv2d(Location loc) {
  FailureOr<Token> input = parseName("the convolution input");
  if (failed(input) || failed(expect(TokenKind::Comma, "',' between input and filter")))
    return failure();
  FailureOr<Token> filter = parseName("the convolution filter");
  if (failed(filter))
    return failure();
  FailureOr<bool> accumulate = parseGetOrAccumulate("the convolution operands");
  if (failed(accumulate))
    return failure();
  FailureOr<Token> result = parseName("the name of the convolution result");
  if (failed(result) || failed(expectWord("with", "'with stride (u, v) pad (p, q)'")) ||
      failed(expectWord("stride", "'stride (u, v)' after 'with'")))
    return failure();
  auto stride = parsePair("stride");
  if (failed(stride) || failed(expectWord("pad", "'pad (p, q)' after the stride")))
    return failure();
  auto pad = parsePair("pad");
  if (failed(pad))
    return failure();
  SmallVector<int64_t, 2> dilation{1, 1};
  if (consumeWordIf("dilation")) {
    auto given = parsePair("dilation");
    if (failed(given))
      return failure();
    dilation = *given;
  }
  builder.create<Conv2dOp>(loc, input->spelling, filter->spelling, result->spelling,
                           *accumulate, *stride, *pad, dilation);
  return expectEndOfStatement();
}

/// `(a, b)` of two integers.
FailureOr<SmallVector<int64_t, 2>> Parser::parsePair(StringRef what) {
  if (failed(expect(TokenKind::LParen, Twine("'(' after '") + what + "'")))
    return failure();
  Token open = previous;
  FailureOr<int64_t> first = parseInteger(Twine("an integer in the ") + what);
  if (failed(first) || failed(expect(TokenKind::Comma, Twine("',' in the ") + what)))
    return failure();
  FailureOr<int64_t> second = parseInteger(Twine("an integer in the ") + what);
  if (failed(second) ||
      failed(expectClosing(TokenKind::RParen, open, Twine("')' after the ") + what)))
    return failure();
  return SmallVector<int64_t, 2>{*first, *second};
}

LogicalResult Parser::parseSoftmax(Location loc) {
  FailureOr<Token> name = parseName("the tensor to apply Softmax to");
  if (failed(name))
    return failure();
  builder.create<SoftmaxOp>(loc, name->spelling);
  return expectEndOfStatement();
}

LogicalResult Parser::parseMask(Location loc) {
  FailureOr<Token> name = parseName("the tensor to mask");
  if (failed(name) ||
      failed(expectWord("causal", "'causal' after 'Compute Mask " + name->spelling + "'")))
    return failure();
  builder.create<MaskOp>(loc, name->spelling);
  return expectEndOfStatement();
}

/// What each in-place operation takes after its target.
static std::pair<StringRef, bool> elementwiseOperand(ElementwiseKind kind) {
  switch (kind) {
  case ElementwiseKind::leaky_relu:
    return {"the slope", true};
  case ElementwiseKind::scale:
    return {"the factor", true};
  case ElementwiseKind::bias:
    return {"the bias", true};
  case ElementwiseKind::add:
    return {"the tensor to add", true};
  default:
    return {"", false};
  }
}

/// `C`, `C, slope`, `C, alpha`, `C, bias`, `C, D [, beta]` after the kind.
LogicalResult Parser::parseElementwise(Location loc, ElementwiseKind kind, StringRef spelling) {
  FailureOr<Token> target = parseName("the tensor to apply " + spelling + " to");
  if (failed(target))
    return failure();
  SmallVector<std::string> operands;
  auto [what, needsOperand] = elementwiseOperand(kind);
  if (needsOperand) {
    if (failed(expect(TokenKind::Comma, "',' and " + what + " after 'Compute " + spelling +
                                            " " + target->spelling + "'")))
      return failure();
    FailureOr<std::string> operand = parseElementwiseOperand(what);
    if (failed(operand))
      return failure();
    operands.push_back(*operand);
  }
  if (kind == ElementwiseKind::add && consumeIf(TokenKind::Comma)) {
    FailureOr<std::string> beta = parseElementwiseOperand("the factor beta");
    if (failed(beta))
      return failure();
    operands.push_back(*beta);
  }
  builder.create<ElementwiseOp>(loc, kind, target->spelling, stringArray(operands));
  return expectEndOfStatement();
}

/// A name or a number, possibly negative.
FailureOr<std::string> Parser::parseElementwiseOperand(StringRef what) {
  continueIncompleteStatement();
  std::string sign = consumeIf(TokenKind::Minus) ? "-" : "";
  if (at(TokenKind::Integer) || at(TokenKind::Float))
    return sign + consume().spelling.str();
  if (sign.empty() && at(TokenKind::Identifier))
    return consume().spelling.str();
  return expected(what + (sign.empty() ? " (a name or a number)" : " (a number after '-')"));
}

//===----------------------------------------------------------------------===//
// Expressions: `Compute Y = EXPR`
//===----------------------------------------------------------------------===//

LogicalResult Parser::parseAssign(Location loc) {
  Token target = consume();
  consume(); // '='
  auto assign = builder.create<AssignOp>(loc, target.spelling);
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToEnd(&assign.getExpression().emplaceBlock());
  nesting = 0;
  operators = 0;
  FailureOr<Value> value = parseExpr();
  if (failed(value))
    return failure();
  builder.create<YieldOp>(loc, *value);
  return expectEndOfStatement();
}

static std::optional<BinaryKind> binaryKindOf(TokenKind kind) {
  switch (kind) {
  case TokenKind::Plus: return BinaryKind::add;
  case TokenKind::Minus: return BinaryKind::sub;
  case TokenKind::Star: return BinaryKind::mul;
  case TokenKind::Slash: return BinaryKind::div;
  default: return std::nullopt;
  }
}

/// `lhs kind rhs` in f32, as the C++ compiler folds the generated code's f32 literals.
static float foldF32(BinaryKind kind, float lhs, float rhs) {
  switch (kind) {
  case BinaryKind::add: return lhs + rhs;
  case BinaryKind::sub: return lhs - rhs;
  case BinaryKind::mul: return lhs * rhs;
  case BinaryKind::div: return lhs / rhs;
  }
  llvm_unreachable("unknown binary kind");
}

/// The f32 value of an expression of numbers alone (negations and arithmetic on them);
/// nullopt where it reads a tensor, a scalar or a call.
static std::optional<float> constantValue(Value value) {
  Operation *op = value.getDefiningOp();
  if (auto constant = dyn_cast_or_null<ConstantOp>(op))
    return static_cast<float>(constant.getValue().convertToDouble());
  if (auto negate = dyn_cast_or_null<NegateOp>(op)) {
    std::optional<float> operand = constantValue(negate.getOperand());
    return operand ? std::optional<float>(-*operand) : std::nullopt;
  }
  auto binary = dyn_cast_or_null<BinaryOp>(op);
  if (!binary)
    return std::nullopt;
  std::optional<float> lhs = constantValue(binary.getLhs()), rhs = constantValue(binary.getRhs());
  if (!lhs || !rhs)
    return std::nullopt;
  return foldF32(binary.getKind(), *lhs, *rhs);
}

FailureOr<Value> Parser::createBinary(const Token &op, Value lhs, Value rhs) {
  BinaryKind kind = *binaryKindOf(op.kind);
  std::optional<float> left = constantValue(lhs), right = constantValue(rhs);
  if (kind == BinaryKind::div && right && *right == 0)
    return errorAt(op) << "division by zero: the divisor after '/' is a constant equal to 0";
  // Arithmetic on numbers alone whose result is not 0 but rounds to 0 in f32 (1e-30 * 1e-30):
  // the C++ compiler folds it and warns, and the value is lost.
  if (left && right && *left != 0 && *right != 0 &&
      (kind == BinaryKind::mul || kind == BinaryKind::div) && foldF32(kind, *left, *right) == 0)
    return errorAt(op) << "constant arithmetic underflows f32: the result of '" << op.spelling
                       << "' on these numbers rounds to 0";
  return builder.create<BinaryOp>(locationOf(op), f32, kind, lhs, rhs).getResult();
}

/// term (('+' | '-') term)*
FailureOr<Value> Parser::parseExpr() {
  FailureOr<Value> lhs = parseTerm();
  while (succeeded(lhs) && (at(TokenKind::Plus) || at(TokenKind::Minus))) {
    Token op = consume();
    if (failed(countOperator(op)))
      return failure();
    FailureOr<Value> rhs = parseTerm();
    if (failed(rhs))
      return failure();
    lhs = createBinary(op, *lhs, *rhs);
  }
  return lhs;
}

/// unary (('*' | '/') unary)*
FailureOr<Value> Parser::parseTerm() {
  FailureOr<Value> lhs = parseUnary();
  while (succeeded(lhs) && (at(TokenKind::Star) || at(TokenKind::Slash))) {
    Token op = consume();
    if (failed(countOperator(op)))
      return failure();
    FailureOr<Value> rhs = parseUnary();
    if (failed(rhs))
      return failure();
    lhs = createBinary(op, *lhs, *rhs);
  }
  return lhs;
}

LogicalResult Parser::enterNesting(const Token &at) {
  if (++nesting <= kMaxExpressionDepth)
    return success();
  return errorAt(at) << "expression nested too deeply (the limit is " << kMaxExpressionDepth
                     << " levels)";
}

LogicalResult Parser::countOperator(const Token &op) {
  if (++operators <= kMaxExpressionOperators)
    return success();
  return errorAt(op) << "expression too long (the limit is " << kMaxExpressionOperators
                     << " operators)";
}

/// '-' unary | primary
FailureOr<Value> Parser::parseUnary() {
  continueIncompleteStatement();
  if (!at(TokenKind::Minus))
    return parsePrimary();
  Token minus = consume();
  if (failed(enterNesting(minus)))
    return failure();
  // `-(...)` is one level, as `-x` is: the printer spells a double negation
  // `-(-x)`, and what it prints must parse back under the same limit.
  continueIncompleteStatement();
  FailureOr<Value> operand =
      at(TokenKind::LParen) ? parseParenthesized(/*counted=*/false) : parseUnary();
  --nesting;
  if (failed(operand))
    return failure();
  return builder.create<NegateOp>(locationOf(minus), f32, *operand).getResult();
}

/// NUMBER | NAME | CALL | '(' expr ')'
FailureOr<Value> Parser::parsePrimary() {
  const Token &token = peek();
  if (token.is(TokenKind::Integer) || token.is(TokenKind::Float)) {
    Token number = consume();
    double value = 0;
    (void)number.spelling.getAsDouble(value); // the lexer checked the spelling
    return builder
        .create<ConstantOp>(locationOf(number), f32, builder.getF64FloatAttr(value),
                            builder.getStringAttr(number.spelling))
        .getResult();
  }
  if (token.is(TokenKind::Identifier) && peek(1).is(TokenKind::LParen))
    return parseCall();
  if (token.is(TokenKind::Identifier)) {
    Token name = consume();
    return builder.create<RefOp>(locationOf(name), f32, name.spelling).getResult();
  }
  if (token.is(TokenKind::LParen))
    return parseParenthesized();
  return expected("an operand (a name, a number, a function call or '(')");
}

FailureOr<Value> Parser::parseParenthesized(bool counted) {
  if (counted && failed(enterNesting(peek())))
    return failure();
  Token open = consume();
  FailureOr<Value> inner = parseExpr();
  if (counted)
    --nesting;
  if (failed(inner) || failed(expectClosing(TokenKind::RParen, open, "')' to close the '('")))
    return failure();
  return inner;
}

/// `relu(x)`, `max(a, b)`, `leaky_relu(x, s)`, ...
FailureOr<Value> Parser::parseCall() {
  Token name = consume();
  std::optional<CallKind> callee = symbolizeCallKind(name.spelling);
  if (!callee)
    return errorAt(name) << "unknown function '" << name.spelling
                         << "' (expected relu, gelu, silu, sigmoid, tanh, exp, max, min or "
                            "leaky_relu)";
  if (failed(enterNesting(peek())))
    return failure();
  Token open = consume();
  SmallVector<Value> args;
  if (!at(TokenKind::RParen)) {
    do {
      FailureOr<Value> arg = parseExpr();
      if (failed(arg))
        return failure();
      args.push_back(*arg);
    } while (consumeIf(TokenKind::Comma));
  }
  --nesting;
  if (failed(expectClosing(TokenKind::RParen, open,
                           "',' or ')' in the arguments of " + name.spelling)))
    return failure();
  bool binary = *callee == CallKind::max || *callee == CallKind::min ||
                *callee == CallKind::leaky_relu;
  size_t arity = binary ? 2 : 1;
  if (args.size() != arity)
    return errorAt(name) << name.spelling << " takes " << arity
                         << (arity == 1 ? " argument" : " arguments") << ", got " << args.size();
  return builder.create<CallOp>(locationOf(name), f32, *callee, args).getResult();
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> sketch::parseSketch(llvm::SourceMgr &sourceMgr, MLIRContext *context) {
  context->getOrLoadDialect<SketchDialect>();
  Parser parser(sourceMgr, context);
  return parser.parseFile();
}
