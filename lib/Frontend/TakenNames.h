//===- TakenNames.h - names the generated .cu's headers declare -----------===//
//
// C++ keywords, and the C functions, types, namespaces and macros that the headers a generated .cu
// includes (CUDA, the C library, sketch's runtime) declare at file scope:
// TakenNames.def, written by scripts/taken_names.py from what nvcc rejects.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_FRONTEND_TAKENNAMES_H
#define SKETCH_FRONTEND_TAKENNAMES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

namespace sketch {

/// Whether `name` is a C++ keyword (C++20, alternative tokens included).
inline bool isCxxKeyword(llvm::StringRef name) {
  static const llvm::StringSet<> keywords = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq"};
  return keywords.contains(name);
}

/// Whether `name` is declared at file scope by the headers a generated .cu includes: a kernel
/// cannot take it, and a parameter or size symbol of that name is renamed in the CUDA (a macro
/// such as NAN would replace it).
inline bool declaredByCudaHeaders(llvm::StringRef name) {
  static const llvm::StringSet<> names = {
#define TAKEN_NAME(name) name,
#include "lib/Frontend/TakenNames.def"
#undef TAKEN_NAME
  };
  return names.contains(name);
}

} // namespace sketch

#endif // SKETCH_FRONTEND_TAKENNAMES_H
