# cmake/FindHwloc.cmake — locate hwloc 2.x (header hwloc.h, library libhwloc), used by
# harness/host_topology.cpp for env.json. Looks in HWLOC_ROOT and the usual places.
# Defines Hwloc_FOUND, HWLOC_INCLUDE_DIR, HWLOC_LIBRARY, Hwloc_VERSION and Hwloc::hwloc.
find_path(HWLOC_INCLUDE_DIR hwloc.h HINTS ${HWLOC_ROOT} $ENV{HWLOC_ROOT} PATH_SUFFIXES include)
find_library(HWLOC_LIBRARY NAMES hwloc HINTS ${HWLOC_ROOT} $ENV{HWLOC_ROOT} PATH_SUFFIXES lib lib64)

if(HWLOC_INCLUDE_DIR AND EXISTS "${HWLOC_INCLUDE_DIR}/hwloc.h")
  # HWLOC_API_VERSION 0x00020800 -> 2.8 (the API; the release is in hwloc/autogen/config.h).
  file(STRINGS "${HWLOC_INCLUDE_DIR}/hwloc.h" _hwloc_api REGEX "^#define HWLOC_API_VERSION 0x[0-9a-fA-F]+")
  if(_hwloc_api MATCHES "0x0*([0-9a-fA-F]?[0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])([0-9a-fA-F][0-9a-fA-F])$")
    math(EXPR _hwloc_major "0x${CMAKE_MATCH_1}")
    math(EXPR _hwloc_minor "0x${CMAKE_MATCH_2}")
    set(Hwloc_VERSION "${_hwloc_major}.${_hwloc_minor}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Hwloc REQUIRED_VARS HWLOC_LIBRARY HWLOC_INCLUDE_DIR VERSION_VAR Hwloc_VERSION)

if(Hwloc_FOUND AND NOT TARGET Hwloc::hwloc)
  add_library(Hwloc::hwloc UNKNOWN IMPORTED)
  set_target_properties(Hwloc::hwloc PROPERTIES IMPORTED_LOCATION "${HWLOC_LIBRARY}"
                                                INTERFACE_INCLUDE_DIRECTORIES "${HWLOC_INCLUDE_DIR}")
endif()
mark_as_advanced(HWLOC_INCLUDE_DIR HWLOC_LIBRARY)
