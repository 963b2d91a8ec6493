# Compiles every kernels/cpu/*.cpp for each x86-64 instruction-set level (syntax and
# templates only, -fsyntax-only), whatever CPU builds the project: the kernels choose code
# paths by the compiler's __AVX512F__ / __AVX2__ macros, so a build with -march=native
# compiles only this machine's path, and an error in another (AVX-512 on a Zen 3 box, AVX2
# or the portable loops on an AVX-512 one) would surface only on a CPU nobody tested on.
#   x86-64     portable loops (no AVX)
#   x86-64-v3  AVX2 + FMA (Zen 2/3, Haswell .. Alder Lake)
#   x86-64-v4  AVX-512 F/BW/DQ/VL (Skylake-SP .. Sapphire Rapids, Zen 4/5)
# Usage: cmake -DCXX=<compiler> -DSOURCE_DIR=<repository root> -P cmake/isa_compile_check.cmake
foreach(_v CXX SOURCE_DIR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "isa_compile_check.cmake: pass -D${_v}=...")
  endif()
endforeach()
file(GLOB _sources ${SOURCE_DIR}/kernels/cpu/*.cpp)
list(SORT _sources)
if(NOT _sources)
  message(FATAL_ERROR "isa_compile_check.cmake: no kernels/cpu/*.cpp under ${SOURCE_DIR}")
endif()
set(_failed "")
foreach(_isa x86-64 x86-64-v3 x86-64-v4)
  foreach(_src IN LISTS _sources)
    execute_process(COMMAND ${CXX} -std=c++20 -fopenmp -fsyntax-only -march=${_isa} -I${SOURCE_DIR} ${_src}
                    RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_VARIABLE _out)
    file(RELATIVE_PATH _rel ${SOURCE_DIR} ${_src})
    if(NOT _rc EQUAL 0)
      list(APPEND _failed "${_rel} (-march=${_isa})")
      message("${_rel} does not compile with -march=${_isa}:\n${_err}")
    else()
      message("ok: ${_rel} -march=${_isa}")
    endif()
  endforeach()
endforeach()
if(_failed)
  list(JOIN _failed ", " _list)
  message(FATAL_ERROR "isa_compile_check: failed: ${_list}")
endif()
