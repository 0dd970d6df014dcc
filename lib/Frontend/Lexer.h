//===- Lexer.h - tokens of the sketch language -----------------*- C++ -*-===//
//
// Splits sketch source into tokens with line and column. Blocks are made by
// indentation, as in Python: the lexer emits Newline at the end of each
// logical line and Indent/Dedent when the indentation changes after a line
// that ends with ':'. A line continues over newlines inside open brackets,
// and onto a following line that is more indented when the line before does
// not end with ':' (that line's first token is marked `continuesLine`; the
// parser rejects it as an unexpected indent when the statement was complete).
//
// The lexer knows nothing about MLIR: on a lexical error it returns an Error
// token whose position is where the problem is and whose message is
// errorMessage(); every later call returns the same Error token.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_FRONTEND_LEXER_H
#define SKETCH_FRONTEND_LEXER_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <deque>
#include <optional>
#include <string>

namespace sketch {

enum class TokenKind {
  Identifier,
  Integer, // 128
  Float,   // 0.5, 1e-3
  Plus,
  Minus,
  Star,
  Slash,
  Equal,
  Colon,
  Comma,
  Caret, // the `^` of `B^T`
  LParen,
  RParen,
  LBracket,
  RBracket,
  Newline, // end of a logical line
  Indent,
  Dedent,
  EndOfFile,
  Error,
};

struct Token {
  TokenKind kind = TokenKind::EndOfFile;
  llvm::StringRef spelling; // the source text; empty for layout tokens
  unsigned line = 1;        // 1-based
  unsigned column = 1;      // 1-based, in bytes
  bool continuesLine = false;

  bool is(TokenKind k) const { return kind == k; }
  bool isWord(llvm::StringRef word) const {
    return kind == TokenKind::Identifier && spelling == word;
  }
};

class Lexer {
public:
  explicit Lexer(llvm::StringRef source);

  /// The next token; EndOfFile (or Error) forever once the input is done.
  Token next();

  /// The message of the Error token, once one was returned.
  llvm::StringRef errorMessage() const { return message; }

private:
  struct OpenBracket {
    char character;
    unsigned line, column;
  };

  Token lexToken();
  Token lexIdentifier();
  Token lexNumber();
  Token lexPunctuation();
  Token lexUnexpected();
  std::optional<Token> endOfLine();
  Token endOfFile();
  Token makeToken(TokenKind kind, size_t start);
  Token layoutToken(TokenKind kind, unsigned line, unsigned column);
  Token error(unsigned line, unsigned column, std::string text);

  /// Skips blank and comment-only lines; measures the next line's indentation.
  /// Returns false (with an Error token in `pending`) on a tab in indentation.
  bool skipToNextLine(unsigned &indent);
  void skipSpacesAndComment();
  bool atComment() const;
  bool atEnd() const { return pos >= source.size(); }
  char peekChar(size_t ahead = 0) const {
    return pos + ahead < source.size() ? source[pos + ahead] : '\0';
  }
  void advanceLine();
  unsigned column() const { return unsigned(pos - lineStart) + 1; }

  llvm::StringRef source;
  size_t pos = 0;
  size_t lineStart = 0;
  unsigned line = 1;
  bool startOfFile = true;
  bool sawToken = false;         // some token was returned
  bool finished = false;         // the final Newline and Dedents are queued
  bool continuation = false;     // the next token starts a continuation line
  TokenKind lastKind = TokenKind::Newline;
  unsigned lastEndLine = 1, lastEndColumn = 1; // just past the last token
  llvm::SmallVector<unsigned, 8> indents{0};
  llvm::SmallVector<OpenBracket, 8> brackets;
  std::deque<Token> pending;
  bool failed = false;
  Token errorToken;
  std::string message;
};

/// A short description of `token` for messages: 'name', end of line, ...
std::string describeToken(const Token &token);

} // namespace sketch

#endif
