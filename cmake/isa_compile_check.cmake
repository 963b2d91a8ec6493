# Compiles every kernels/cpu/*.cpp for each x86-64 instruction-set level (syntax and
# templates only, -fsyntax-only), whatever CPU builds the project: the kernels choose code
# paths by the compiler's __AVX512F__ / __AVX2__ macros, so a build with -march=native
# compiles only this machine's path, and an error in another (AVX-512 on a Zen 3 box, AVX2
# or the portable loops on an AVX-512 one) would surface only on a CPU nobody tested on.
#   x86-64     portable loops (no AVX)
#   x86-64-v3  AVX2 + FMA (Zen 2/3, Haswell .. Alder Lake)
#   x86-64-v4  AVX-512 F/BW/DQ/VL (Skylake-SP .. Sapphire Rapids, Zen 4/5)
# Besides kernels/cpu, every .cpp under tests/, bench/ and harness/ that names one of those
# macros (tests/kernels/test_ceiling_loops_cpu.cpp checks the AVX-512 loop only where it is
# compiled): INCLUDES (directories separated by "|", e.g. GoogleTest's) reach those. Only
# the repository root and INCLUDES are on the include path and no -D flags are passed: a
# file that needs more (Google Benchmark's headers, TB_SOURCE_DIR) must get it here first.
# Usage: cmake -DCXX=<compiler> -DSOURCE_DIR=<repository root> [-DINCLUDES=dir|dir]
#              -P cmake/isa_compile_check.cmake
foreach(_v CXX SOURCE_DIR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "isa_compile_check.cmake: pass -D${_v}=...")
  endif()
endforeach()
file(GLOB _sources ${SOURCE_DIR}/kernels/cpu/*.cpp)
if(NOT _sources)
  message(FATAL_ERROR "isa_compile_check.cmake: no kernels/cpu/*.cpp under ${SOURCE_DIR}")
endif()
file(GLOB_RECURSE _others ${SOURCE_DIR}/tests/*.cpp ${SOURCE_DIR}/bench/*.cpp ${SOURCE_DIR}/harness/*.cpp)
foreach(_src IN LISTS _others)
  file(STRINGS ${_src} _isa_lines REGEX "__AVX512F__|__AVX2__|__FMA__")
  if(_isa_lines)
    list(APPEND _sources ${_src})
  endif()
endforeach()
list(SORT _sources)
set(_includes -I${SOURCE_DIR})
if(DEFINED INCLUDES AND NOT INCLUDES STREQUAL "")
  string(REPLACE "|" ";" _dirs "${INCLUDES}")
  foreach(_dir IN LISTS _dirs)
    list(APPEND _includes -I${_dir})
  endforeach()
endif()
set(_failed "")
foreach(_isa x86-64 x86-64-v3 x86-64-v4)
  foreach(_src IN LISTS _sources)
    execute_process(COMMAND ${CXX} -std=c++20 -fopenmp -fsyntax-only -march=${_isa} ${_includes} ${_src}
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
