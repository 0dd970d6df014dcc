# The MLIR, LLVM and standard headers the libraries include, compiled once per
# build into a precompiled header that every library's sources reuse: parsing
# them is most of each file's compile time. Only external headers, so editing
# the project's own headers never rebuilds it.
set(SKETCH_PRECOMPILED_HEADERS
  <algorithm> <cstdint> <deque> <functional> <map> <memory> <optional> <string>
  <utility> <vector>
  "<llvm/ADT/ArrayRef.h>" "<llvm/ADT/STLExtras.h>" "<llvm/ADT/SmallVector.h>"
  "<llvm/ADT/StringExtras.h>" "<llvm/ADT/StringMap.h>" "<llvm/ADT/StringRef.h>"
  "<llvm/ADT/StringSet.h>" "<llvm/ADT/StringSwitch.h>" "<llvm/ADT/Twine.h>"
  "<llvm/Support/FormatVariadic.h>" "<llvm/Support/SourceMgr.h>" "<llvm/Support/raw_ostream.h>"
  "<mlir/Bytecode/BytecodeOpInterface.h>" "<mlir/IR/Builders.h>" "<mlir/IR/BuiltinOps.h>"
  "<mlir/IR/Diagnostics.h>" "<mlir/IR/Dialect.h>" "<mlir/IR/OpDefinition.h>"
  "<mlir/IR/OwningOpRef.h>" "<mlir/IR/SymbolTable.h>"
  "<mlir/Interfaces/SideEffectInterfaces.h>" "<mlir/Pass/Pass.h>" "<mlir/Pass/PassManager.h>")

# sketch_precompiled_headers(TARGET): TARGET's sources include the headers above
# precompiled; the first library builds them, the others reuse its copy (the
# libraries share every compile flag).
function(sketch_precompiled_headers target)
  get_property(owner GLOBAL PROPERTY SKETCH_PRECOMPILED_HEADERS_OWNER)
  if(owner)
    target_precompile_headers(${target} REUSE_FROM ${owner})
  else()
    target_precompile_headers(${target} PRIVATE ${SKETCH_PRECOMPILED_HEADERS})
    set_property(GLOBAL PROPERTY SKETCH_PRECOMPILED_HEADERS_OWNER ${target})
  endif()
endfunction()
