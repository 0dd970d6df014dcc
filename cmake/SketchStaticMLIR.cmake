# SKETCH_STATIC_SKETCHC: link the tools against the static MLIR and LLVM
# component libraries (lib*.a), so sketchc runs where MLIR is not installed.
#
# Debian's LLVM is built with LLVM_LINK_LLVM_DYLIB=ON, so each exported static
# MLIR library (MLIRIR, MLIRPass, ...) names the shared libLLVM (target LLVM)
# as its LLVM dependency, and LLVMSupport names the shared Z3 and zstd. This
# file points those dependencies at the static LLVM components instead.
# SKETCH_STATIC_LIBC links the C library statically too.

# The MLIR libraries the tools use; their own dependencies follow from the
# exported targets.
set(SKETCH_MLIR_LIBS MLIRIR MLIRParser MLIRPass MLIRSupport MLIRSideEffectInterfaces
    MLIRBytecodeOpInterface)
set(SKETCH_MLIR_OPT_LIBS MLIROptLib)
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
    message(FATAL_ERROR "SKETCH_STATIC_SKETCHC: ${target} links the shared libMLIR")
  endif()
  list(TRANSFORM deps REPLACE "^LLVM$" "${SKETCH_LLVM_STATIC_COMPONENTS}")
  list(REMOVE_ITEM deps ${SKETCH_LLVM_UNUSED_SHARED})
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
  foreach(dep IN LISTS deps)
    sketch_use_static_llvm(${dep})
  endforeach()
endfunction()

foreach(lib IN LISTS SKETCH_MLIR_LIBS SKETCH_MLIR_OPT_LIBS)
  sketch_use_static_llvm(${lib})
endforeach()

# Unused functions and data are dropped at link time, symbols stripped. The C++
# runtime is linked in, so the tools need only the C library (glibc as new as
# the build machine's) at run time; with SKETCH_STATIC_LIBC nothing at all
# (the linker then warns that getpwnam_r and getpwuid_r, which LLVM uses only
# to expand ~ in paths, would need the build machine's glibc at run time).
add_compile_options(-ffunction-sections -fdata-sections)
set(SKETCH_STATIC_LINK_OPTIONS LINKER:--gc-sections LINKER:--as-needed LINKER:--strip-all)
if(SKETCH_STATIC_LIBC)
  list(APPEND SKETCH_STATIC_LINK_OPTIONS -static)
else()
  list(APPEND SKETCH_STATIC_LINK_OPTIONS -static-libstdc++ -static-libgcc)
endif()
