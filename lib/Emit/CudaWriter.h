//===- CudaWriter.h - indentation-aware text builder for CUDA --*- C++ -*-===//
//
// Every kernel emitter writes through a CudaWriter: `line()` writes one line at
// the current indentation, `open()`/`close()` write a brace and indent, and
// `Block` closes a brace on scope exit. Text is built with llvm::formatv or
// plain concatenation; the writer only handles layout.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_EMIT_CUDAWRITER_H
#define SKETCH_EMIT_CUDAWRITER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace sketch {

/// Pieces of generated text: a number, and strings joined by a separator.
inline std::string str(int64_t value) { return std::to_string(value); }

inline std::string joined(llvm::ArrayRef<std::string> items, llvm::StringRef separator = ", ") {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : separator.str()) + item;
  return text;
}

class CudaWriter {
public:
  explicit CudaWriter(llvm::raw_ostream &os) : os(os) {}

  /// One line at the current indentation (an empty Twine gives an empty line).
  CudaWriter &line(const llvm::Twine &text = "") {
    std::string s = text.str();
    if (!s.empty())
      os.indent(indent * 2) << s;
    os << "\n";
    return *this;
  }

  /// Several lines (split at '\n'), each at the current indentation.
  CudaWriter &lines(llvm::StringRef text) {
    while (!text.empty()) {
      auto [head, tail] = text.split('\n');
      line(head);
      text = tail;
    }
    return *this;
  }

  /// `text {` and indent.
  CudaWriter &open(const llvm::Twine &text) {
    line(text + " {");
    ++indent;
    return *this;
  }

  /// Dedent and `}` followed by `suffix` (";" for a struct, "" otherwise).
  CudaWriter &close(llvm::StringRef suffix = "") {
    --indent;
    line("}" + suffix.str());
    return *this;
  }

  /// A comment line `// text`.
  CudaWriter &comment(const llvm::Twine &text) { return line("// " + text); }

  void indentMore() { ++indent; }
  void indentLess() { --indent; }
  llvm::raw_ostream &stream() { return os; }

  /// Opens `text {` now and closes it when the object goes out of scope.
  class Block {
  public:
    Block(CudaWriter &w, const llvm::Twine &text, llvm::StringRef suffix = "")
        : w(w), suffix(suffix.str()) {
      w.open(text);
    }
    ~Block() { w.close(suffix); }

  private:
    CudaWriter &w;
    std::string suffix;
  };

private:
  llvm::raw_ostream &os;
  int indent = 0;
};

namespace detail {
struct NullStream {
  llvm::raw_null_ostream nullStream;
};
} // namespace detail

/// A writer whose text goes nowhere: for asking a kernel writer about its plan
/// (`--emit=sketch`'s descriptions) without emitting.
class DiscardingCudaWriter : private detail::NullStream, public CudaWriter {
public:
  DiscardingCudaWriter() : CudaWriter(nullStream) {}
};

} // namespace sketch

#endif // SKETCH_EMIT_CUDAWRITER_H
