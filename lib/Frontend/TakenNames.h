//===- TakenNames.h - names the generated .cu's headers declare -----------===//
//
// The C functions, types, namespaces and macros that the headers a generated .cu
// includes (CUDA, the C library, sketch's runtime) declare at file scope:
// TakenNames.def, written by scripts/taken_names.py from what nvcc rejects.
//
//===----------------------------------------------------------------------===//
#ifndef SKETCH_FRONTEND_TAKENNAMES_H
#define SKETCH_FRONTEND_TAKENNAMES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

namespace sketch {

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
