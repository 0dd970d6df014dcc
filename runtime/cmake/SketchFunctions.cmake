# sketch_add_kernels(<target> <file.sketch>... [ARCH <sketchc --arch>] [DEFINES SYM=VALUE...]
#                    [OPTIONS <more sketchc flags>...])
#
# Runs sketchc on each sketch at build time (rerun when the sketch or sketchc
# changes), adds the generated .cu to <target>, and puts the generated headers
# and the sketch runtime on its include path. <target> must be a CUDA target
# (enable the CUDA language in your project). DEFINES and OPTIONS apply to
# every sketch of the call. ARCH is one architecture or a comma-separated list
# (default sm_80,sm_90a: every kernel once per architecture, the host function
# picks the variant for its device). When the target's CUDA_ARCHITECTURES cannot
# run ARCH's kernels (CMake's default is older than sm_80) or, for a list, lacks
# one of its architectures, it is set to ARCH.
function(sketch_add_kernels target)
  cmake_parse_arguments(SKETCH "" "ARCH" "DEFINES;OPTIONS" ${ARGN})
  if(NOT SKETCH_ARCH)
    set(SKETCH_ARCH sm_80,sm_90a)
  endif()
  if(NOT SKETCH_ARCH MATCHES "^sm_(80|90|90a)(,sm_(80|90|90a))*$")
    message(FATAL_ERROR "sketch_add_kernels: ARCH must be sm_80, sm_90, sm_90a or a "
                        "comma-separated list of them, got ${SKETCH_ARCH}")
  endif()
  set(defines "")
  foreach(binding IN LISTS SKETCH_DEFINES)
    list(APPEND defines -D ${binding})
  endforeach()
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/sketch_kernels)
  file(MAKE_DIRECTORY ${out_dir})
  foreach(sketch_file IN LISTS SKETCH_UNPARSED_ARGUMENTS)
    get_filename_component(source ${sketch_file} ABSOLUTE)
    get_filename_component(stem ${sketch_file} NAME_WE)
    set(cu ${out_dir}/${stem}.cu)
    set(header ${out_dir}/${stem}.h)
    add_custom_command(
      OUTPUT ${cu} ${header}
      COMMAND Sketch::sketchc ${source} -o ${cu} --arch ${SKETCH_ARCH} ${defines} ${SKETCH_OPTIONS}
      DEPENDS ${source} Sketch::sketchc
      COMMENT "sketchc ${sketch_file}"
      VERBATIM)
    target_sources(${target} PRIVATE ${cu} ${header})
  endforeach()
  target_include_directories(${target} PRIVATE ${out_dir} ${SKETCH_RUNTIME_INCLUDE_DIR})
  # CUDA_ARCHITECTURES starts as CMAKE_CUDA_ARCHITECTURES, which CMake fills
  # with the compiler's default (sm_75 or older) when the project sets none.
  get_target_property(archs ${target} CUDA_ARCHITECTURES)
  _sketch_archs_fit("${archs}" ${SKETCH_ARCH} fit)
  if(NOT fit)
    string(REPLACE "sm_" "" arch_number ${SKETCH_ARCH})
    string(REPLACE "," ";" arch_number "${arch_number}")
    message(STATUS "sketch_add_kernels(${target}): CUDA_ARCHITECTURES '${archs}' cannot run "
                   "${SKETCH_ARCH} kernels; using ${arch_number}")
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES ${arch_number})
  endif()
endfunction()

# Sets <out> to TRUE when every architecture of <archs> runs kernels generated
# for <sketch_arch>: sm_80 kernels need 80 or newer, sm_90a kernels need 90a;
# a list of several needs each of its architectures among <archs>.
function(_sketch_archs_fit archs sketch_arch out)
  if(sketch_arch MATCHES ",")
    string(REPLACE "sm_" "" wanted ${sketch_arch})
    string(REPLACE "," ";" wanted "${wanted}")
    set(fit TRUE)
    foreach(number IN LISTS wanted)
      if(NOT "${number}" IN_LIST archs AND NOT "${number}-real" IN_LIST archs)
        set(fit FALSE)
      endif()
    endforeach()
    set(${out} ${fit} PARENT_SCOPE)
    return()
  endif()
  set(fit TRUE)
  if(NOT archs OR archs MATCHES "NOTFOUND|^all|native")
    set(fit FALSE)
  endif()
  foreach(arch IN LISTS archs)
    string(REGEX REPLACE "-(real|virtual)$" "" arch "${arch}")
    string(REGEX MATCH "^[0-9]+" number "${arch}")
    if(sketch_arch STREQUAL "sm_90a" AND NOT arch STREQUAL "90a")
      set(fit FALSE)
    elseif(NOT number OR number LESS 80)
      set(fit FALSE)
    endif()
  endforeach()
  set(${out} ${fit} PARENT_SCOPE)
endfunction()
