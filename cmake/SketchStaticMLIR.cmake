# The MLIR and LLVM libraries the tools link: the static component libraries
# (lib*.a), never the shared libMLIR and libLLVM. A tool linked this way starts
# in milliseconds (loading and relocating libLLVM takes seconds on a slow
# machine, once per sketchc call, which a build or the test suite makes
# hundreds of times) and runs where MLIR is not installed (the GPU machine).
# Every library links the interface target SketchMLIR.
#
# Debian's LLVM is built with LLVM_LINK_LLVM_DYLIB=ON, so each exported static
# MLIR library (MLIRIR, MLIRPass, ...) names the shared libLLVM (target LLVM)
# as its LLVM dependency, and LLVMSupport names the shared Z3 and zstd. This
# file points those dependencies at the static LLVM components instead.

# The MLIR libraries the tools use; their own dependencies follow from the
# exported targets. sketch-opt adds SKETCH_STATIC_MLIR_OPT_LIBS.
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
    message(FATAL_ERROR "sketchc: ${target} links the shared libMLIR")
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

add_library(SketchMLIR INTERFACE)
target_link_libraries(SketchMLIR INTERFACE ${SKETCH_STATIC_MLIR_LIBS})

# Unused functions and data are dropped at link time, symbols stripped. The C++
# runtime is linked in, so the tools need only the C library (glibc as new as
# the build machine's) at run time; with SKETCH_STATIC_LIBC nothing at all (the
# linker then warns that getpwnam_r and getpwuid_r, which LLVM uses only to
# expand ~ in paths, would need the build machine's glibc at run time). A
# sanitized build keeps its symbols and the shared C++ runtime, whose operator
# new and delete the sanitizers replace.
add_compile_options(-ffunction-sections -fdata-sections)
set(SKETCH_TOOL_LINK_OPTIONS LINKER:--gc-sections LINKER:--as-needed)
if(SKETCH_SANITIZE OR SKETCH_FUZZ)
  if(SKETCH_STATIC_LIBC)
    message(FATAL_ERROR "SKETCH_STATIC_LIBC does not go with the sanitizers")
  endif()
elseif(SKETCH_STATIC_LIBC)
  list(APPEND SKETCH_TOOL_LINK_OPTIONS LINKER:--strip-all -static)
else()
  list(APPEND SKETCH_TOOL_LINK_OPTIONS LINKER:--strip-all -static-libstdc++ -static-libgcc)
endif()
