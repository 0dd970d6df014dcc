# The MLIR and LLVM libraries the tools link. Every library links the interface
# target SketchMLIR; what it stands for depends on the executable being linked:
# the shared libMLIR and libLLVM, or for the executables with the property
# SKETCH_STATIC (sketchc-static, sketch-opt-static) the static component
# libraries (lib*.a), so that sketchc runs where MLIR is not installed. Both
# link the same object files.
#
# Debian's LLVM is built with LLVM_LINK_LLVM_DYLIB=ON, so each exported static
# MLIR library (MLIRIR, MLIRPass, ...) names the shared libLLVM (target LLVM)
# as its LLVM dependency, and LLVMSupport names the shared Z3 and zstd. This
# file points those dependencies at the static LLVM components instead.

# The MLIR libraries the tools use; their own dependencies follow from the
# exported targets. sketch-opt-static adds SKETCH_STATIC_MLIR_OPT_LIBS.
set(SKETCH_STATIC_MLIR_LIBS MLIRIR MLIRParser MLIRPass MLIRSupport
    MLIRSideEffectInterfaces MLIRBytecodeOpInterface)
set(SKETCH_STATIC_MLIR_OPT_LIBS MLIROptLib)
# What the MLIR libraries above need from LLVM (the libraries' LINK_COMPONENTS).
set(SKETCH_LLVM_STATIC_COMPONENTS LLVMSupport)
# Shared libraries LLVMSupport names that the tools do not use: left out, so
# that a use of them fails the link instead of adding a run-time dependency.
set(SKETCH_LLVM_UNUSED_SHARED "/usr/lib/x86_64-linux-gnu/libz3.so" zstd::libzstd_shared
    ZLIB::ZLIB)

# Replaces the shared libLLVM in the link interface of `target` and of every
# library it depends on.
function(sketch_use_static_llvm target)
  get_property(done GLOBAL PROPERTY SKETCH_STATIC_LLVM_${target})
  if(done OR NOT TARGET ${target})
    return()
  endif()
  set_property(GLOBAL PROPERTY SKETCH_STATIC_LLVM_${target} TRUE)
  get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
  if(NOT deps)
    return()
  endif()
  if(MLIR IN_LIST deps)
    message(FATAL_ERROR "sketchc-static: ${target} links the shared libMLIR")
  endif()
  list(TRANSFORM deps REPLACE "^LLVM$" "${SKETCH_LLVM_STATIC_COMPONENTS}")
  list(REMOVE_ITEM deps ${SKETCH_LLVM_UNUSED_SHARED})
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
  foreach(dep IN LISTS deps)
    sketch_use_static_llvm(${dep})
  endforeach()
endfunction()

foreach(lib IN LISTS SKETCH_STATIC_MLIR_LIBS SKETCH_STATIC_MLIR_OPT_LIBS)
  sketch_use_static_llvm(${lib})
endforeach()

set(sketch_static "$<BOOL:$<TARGET_PROPERTY:SKETCH_STATIC>>")
add_library(SketchMLIR INTERFACE)
foreach(lib IN LISTS SKETCH_STATIC_MLIR_LIBS)
  target_link_libraries(SketchMLIR INTERFACE "$<${sketch_static}:${lib}>")
endforeach()
target_link_libraries(SketchMLIR INTERFACE "$<$<NOT:${sketch_static}>:MLIR>"
                      "$<$<NOT:${sketch_static}>:LLVM>")

# Unused functions and data are dropped at link time, symbols stripped. The C++
# runtime is linked in, so the static tools need only the C library (glibc as
# new as the build machine's) at run time; with SKETCH_STATIC_LIBC nothing at
# all (the linker then warns that getpwnam_r and getpwuid_r, which LLVM uses
# only to expand ~ in paths, would need the build machine's glibc at run time).
add_compile_options(-ffunction-sections -fdata-sections)
set(SKETCH_STATIC_LINK_OPTIONS LINKER:--gc-sections LINKER:--as-needed LINKER:--strip-all)
if(SKETCH_STATIC_LIBC)
  list(APPEND SKETCH_STATIC_LINK_OPTIONS -static)
else()
  list(APPEND SKETCH_STATIC_LINK_OPTIONS -static-libstdc++ -static-libgcc)
endif()

# sketch_static_tool(NAME LIBS...): NAME-static, the tool NAME linked from LIBS
# (its object library first) with the static libraries, written to static/NAME
# in the build tree.
function(sketch_static_tool name)
  add_executable(${name}-static EXCLUDE_FROM_ALL)
  target_link_libraries(${name}-static PRIVATE ${ARGN})
  target_link_options(${name}-static PRIVATE ${SKETCH_STATIC_LINK_OPTIONS})
  set_target_properties(${name}-static PROPERTIES SKETCH_STATIC ON OUTPUT_NAME ${name}
    RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/static)
endfunction()
