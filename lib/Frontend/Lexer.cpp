//===- Lexer.cpp - tokens of the sketch language --------------------------===//
#include "lib/Frontend/Lexer.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <cstdint>

using namespace sketch;

static bool isIdentifierStart(char c) { return llvm::isAlpha(c) || c == '_'; }
static bool isIdentifierChar(char c) { return llvm::isAlnum(c) || c == '_'; }

Lexer::Lexer(llvm::StringRef source) : source(source) {}

Token Lexer::next() {
  if (failed)
    return errorToken;
  Token token;
  if (pending.empty()) {
    token = lexToken(); // may queue the tokens that follow it
  } else {
    token = pending.front();
    pending.pop_front();
  }
  if (token.is(TokenKind::Error)) {
    failed = true;
    errorToken = token;
  }
  return token;
}

//===----------------------------------------------------------------------===//
// Lines, indentation, comments
//===----------------------------------------------------------------------===//

void Lexer::advanceLine() {
  ++pos; // the '\n'
  ++line;
  lineStart = pos;
}

bool Lexer::atComment() const {
  char c = peekChar();
  return c == '#' || (c == '/' && peekChar(1) == '/');
}

void Lexer::skipSpacesAndComment() {
  while (!atEnd() && (peekChar() == ' ' || peekChar() == '\t' || peekChar() == '\r'))
    ++pos;
  if (atComment())
    while (!atEnd() && peekChar() != '\n')
      ++pos;
}

bool Lexer::skipToNextLine(unsigned &indent) {
  while (true) {
    indent = 0;
    std::optional<unsigned> tabColumn;
    while (!atEnd() && (peekChar() == ' ' || peekChar() == '\t' || peekChar() == '\r')) {
      if (peekChar() == ' ')
        ++indent;
      else if (peekChar() == '\t' && !tabColumn)
        tabColumn = column();
      ++pos;
    }
    skipSpacesAndComment();
    if (atEnd())
      return true;
    if (peekChar() == '\n') {
      advanceLine();
      continue;
    }
    if (tabColumn) {
      pending.push_back(error(line, *tabColumn, "tab in indentation (indent with spaces only)"));
      return false;
    }
    return true;
  }
}

std::optional<Token> Lexer::endOfLine() {
  advanceLine();
  unsigned indent;
  if (!skipToNextLine(indent))
    return pending.back();
  if (atEnd())
    return endOfFile();
  bool opensBlock = lastKind == TokenKind::Colon;
  if (indent > indents.back() && !opensBlock) {
    continuation = true; // the statement goes on on this line
    return std::nullopt;
  }
  Token newline = layoutToken(TokenKind::Newline, lastEndLine, lastEndColumn);
  if (indent > indents.back()) {
    indents.push_back(indent);
    pending.push_back(layoutToken(TokenKind::Indent, line, column()));
    return newline;
  }
  while (indent < indents.back()) {
    indents.pop_back();
    pending.push_back(layoutToken(TokenKind::Dedent, line, column()));
  }
  if (indent != indents.back())
    pending.push_back(
        error(line, column(), "unindent does not match any outer indentation level"));
  return newline;
}

Token Lexer::endOfFile() {
  if (!brackets.empty()) {
    OpenBracket open = brackets.back();
    return error(open.line, open.column,
                 std::string("'") + open.character + "' is never closed");
  }
  Token eof = layoutToken(TokenKind::EndOfFile, lastEndLine, lastEndColumn);
  if (finished)
    return eof;
  finished = true;
  if (sawToken)
    pending.push_back(layoutToken(TokenKind::Newline, lastEndLine, lastEndColumn));
  for (; indents.size() > 1; indents.pop_back())
    pending.push_back(layoutToken(TokenKind::Dedent, lastEndLine, lastEndColumn));
  pending.push_back(eof);
  Token first = pending.front();
  pending.pop_front();
  return first;
}

//===----------------------------------------------------------------------===//
// Tokens
//===----------------------------------------------------------------------===//

Token Lexer::lexToken() {
  if (startOfFile) {
    startOfFile = false;
    unsigned indent;
    if (!skipToNextLine(indent))
      return pending.back();
    continuation = indent > 0; // an indented first line: the parser rejects it
  }
  while (true) {
    skipSpacesAndComment();
    if (atEnd())
      return endOfFile();
    if (peekChar() != '\n')
      break;
    if (!brackets.empty()) {
      advanceLine(); // inside brackets a statement runs on over newlines
      continue;
    }
    if (std::optional<Token> token = endOfLine())
      return *token;
  }
  char c = peekChar();
  if (isIdentifierStart(c))
    return lexIdentifier();
  if (llvm::isDigit(c))
    return lexNumber();
  return lexPunctuation();
}

Token Lexer::makeToken(TokenKind kind, size_t start) {
  Token token;
  token.kind = kind;
  token.spelling = source.slice(start, pos);
  token.line = line;
  token.column = unsigned(start - lineStart) + 1;
  token.continuesLine = continuation;
  continuation = false;
  sawToken = true;
  lastKind = kind;
  lastEndLine = line;
  lastEndColumn = column();
  return token;
}

Token Lexer::layoutToken(TokenKind kind, unsigned tokenLine, unsigned tokenColumn) {
  Token token;
  token.kind = kind;
  token.line = tokenLine;
  token.column = tokenColumn;
  return token;
}

Token Lexer::error(unsigned errorLine, unsigned errorColumn, std::string text) {
  message = std::move(text);
  return layoutToken(TokenKind::Error, errorLine, errorColumn);
}

Token Lexer::lexIdentifier() {
  size_t start = pos;
  while (!atEnd() && isIdentifierChar(peekChar()))
    ++pos;
  return makeToken(TokenKind::Identifier, start);
}

/// Consumes an exponent `e[+-]digits` if one follows; returns whether it did.
static bool consumeExponent(llvm::StringRef source, size_t &pos) {
  size_t at = pos;
  if (at >= source.size() || (source[at] != 'e' && source[at] != 'E'))
    return false;
  ++at;
  if (at < source.size() && (source[at] == '+' || source[at] == '-'))
    ++at;
  if (at >= source.size() || !llvm::isDigit(source[at]))
    return false;
  while (at < source.size() && llvm::isDigit(source[at]))
    ++at;
  pos = at;
  return true;
}

Token Lexer::lexNumber() {
  size_t start = pos;
  unsigned startColumn = column();
  bool isFloat = false;
  while (!atEnd() && llvm::isDigit(peekChar()))
    ++pos;
  if (peekChar() == '.' && llvm::isDigit(peekChar(1))) {
    isFloat = true;
    for (++pos; !atEnd() && llvm::isDigit(peekChar());)
      ++pos;
  }
  isFloat |= consumeExponent(source, pos);
  if (!atEnd() && (isIdentifierChar(peekChar()) || peekChar() == '.')) {
    while (!atEnd() && (isIdentifierChar(peekChar()) || peekChar() == '.'))
      ++pos;
    return error(line, startColumn, "bad number '" + source.slice(start, pos).str() + "'");
  }
  llvm::StringRef text = source.slice(start, pos);
  if (!isFloat) {
    int64_t value;
    if (text.getAsInteger(10, value))
      return error(line, startColumn,
                   "integer '" + text.str() + "' is too large (the limit is 9223372036854775807)");
    return makeToken(TokenKind::Integer, start);
  }
  double value;
  if (text.getAsDouble(value) || !std::isfinite(value))
    return error(line, startColumn, "number '" + text.str() + "' is out of range");
  return makeToken(TokenKind::Float, start);
}

static std::optional<TokenKind> punctuationKind(char c) {
  switch (c) {
  case '+': return TokenKind::Plus;
  case '-': return TokenKind::Minus;
  case '*': return TokenKind::Star;
  case '/': return TokenKind::Slash;
  case '=': return TokenKind::Equal;
  case ':': return TokenKind::Colon;
  case ',': return TokenKind::Comma;
  case '^': return TokenKind::Caret;
  case '(': return TokenKind::LParen;
  case ')': return TokenKind::RParen;
  case '[': return TokenKind::LBracket;
  case ']': return TokenKind::RBracket;
  default: return std::nullopt;
  }
}

Token Lexer::lexPunctuation() {
  char c = peekChar();
  std::optional<TokenKind> kind = punctuationKind(c);
  if (!kind)
    return lexUnexpected();
  if (c == '(' || c == '[')
    brackets.push_back({c, line, column()});
  if (c == ')' || c == ']') {
    char opener = c == ')' ? '(' : '[';
    if (brackets.empty())
      return error(line, column(), std::string("unmatched '") + c + "'");
    if (brackets.back().character != opener)
      return error(line, column(),
                   std::string("'") + c + "' does not match the '" + brackets.back().character +
                       "' at line " + std::to_string(brackets.back().line) + ", column " +
                       std::to_string(brackets.back().column));
    brackets.pop_back();
  }
  size_t start = pos++;
  return makeToken(*kind, start);
}

Token Lexer::lexUnexpected() {
  unsigned char c = static_cast<unsigned char>(peekChar());
  if (llvm::isPrint(c))
    return error(line, column(), std::string("unexpected character '") + char(c) + "'");
  std::string hex = llvm::utohexstr(c, /*LowerCase=*/true);
  if (hex.size() < 2)
    hex = "0" + hex;
  std::string text = "unexpected byte 0x" + hex;
  if (c >= 0x80)
    text += " (sketch source is ASCII outside comments)";
  return error(line, column(), text);
}

std::string sketch::describeToken(const Token &token) {
  switch (token.kind) {
  case TokenKind::Newline:
    return "end of line";
  case TokenKind::Indent:
    return "an indented line";
  case TokenKind::Dedent:
    return "the end of the block";
  case TokenKind::EndOfFile:
    return "end of file";
  case TokenKind::Error:
    return "an invalid token";
  default:
    break;
  }
  llvm::StringRef text = token.spelling;
  if (text.size() > 40)
    return "'" + text.take_front(37).str() + "...'";
  return "'" + text.str() + "'";
}
