# sketch_add_kernels(<target> <file.sketch>... [ARCH sm_80|sm_90a] [DEFINES SYM=VALUE...]
#                    [OPTIONS <more sketchc flags>...])
#
# Runs sketchc on each sketch at build time (rerun when the sketch or sketchc
# changes), adds the generated .cu to <target>, and puts the generated headers
# and the sketch runtime on its include path. <target> must be a CUDA target
# (enable the CUDA language in your project).
function(sketch_add_kernels target)
  cmake_parse_arguments(SKETCH "" "ARCH" "DEFINES;OPTIONS" ${ARGN})
  if(NOT SKETCH_ARCH)
    set(SKETCH_ARCH sm_80)
  endif()
  if(NOT SKETCH_ARCH MATCHES "^sm_(80|90a)$")
    message(FATAL_ERROR "sketch_add_kernels: ARCH must be sm_80 or sm_90a, got ${SKETCH_ARCH}")
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
  get_target_property(archs ${target} CUDA_ARCHITECTURES)
  if(NOT archs OR archs STREQUAL "archs-NOTFOUND")
    string(REPLACE "sm_" "" arch_number ${SKETCH_ARCH})
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES ${arch_number})
  endif()
endfunction()
