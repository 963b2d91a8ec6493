# cmake/TbMpi.cmake — which MPI library, and how to launch it on one machine.
# TB_MPI picks the library (openmpi, the default, or mpich; Debian/Ubuntu's
# mpicxx.<name> and mpiexec.<name> where they exist), FindMPI finds it, and
# tb_find_mpi() sets TB_MPI_LIBRARY ("Open MPI 4.1.4"), TB_MPI_FLAVOUR (openmpi,
# mpich, other), TB_MPIEXEC_FLAGS (the launcher flags, a list) and TB_SRUN_MPI_PLUGIN.
set(TB_MPI "openmpi" CACHE STRING "MPI library to build against: openmpi or mpich")
set_property(CACHE TB_MPI PROPERTY STRINGS openmpi mpich)

# Library name and version from MPI_Get_library_version (FindMPI runs it at configure
# time) or, failing that, `mpiexec --version`. Sets <out_name>, <out_flavour>, <out_major>.
function(tb_mpi_identify text out_name out_flavour out_major)
  set(vendor "")
  set(flavour mpich)  # the MPICH family (MPICH, Intel MPI, MVAPICH) shares hydra's launcher
  if(text MATCHES "Open MPI v?([0-9]+\\.[0-9]+[.0-9a-z]*)")  # MPI_Get_library_version
    set(vendor "Open MPI")
    set(flavour openmpi)
  elseif(text MATCHES "\\(Open ?(RTE|MPI)\\) ([0-9]+\\.[0-9.a-z]+)")  # mpirun --version
    set(vendor "Open MPI")
    set(flavour openmpi)
    set(CMAKE_MATCH_1 "${CMAKE_MATCH_2}")
  elseif(text MATCHES "Intel\\(R\\) MPI Library ([0-9][0-9.]*)")
    set(vendor "Intel MPI")
  elseif(text MATCHES "MVAPICH2? Version:[ \t]*([0-9][0-9.a-z]*)")
    set(vendor "MVAPICH")
  elseif(text MATCHES "MPICH Version:[ \t]*([0-9][0-9.a-z]*)")
    set(vendor "MPICH")
  elseif(text MATCHES "HYDRA build details:[^V]*Version:[ \t]*([0-9][0-9.a-z]*)")  # mpiexec --version
    set(vendor "MPICH")
  endif()
  if(vendor)
    set(name "${vendor} ${CMAKE_MATCH_1}")
    string(REGEX MATCH "^[0-9]+" major "${CMAKE_MATCH_1}")
  else()
    string(REGEX REPLACE "\n.*" "" name "${text}")  # unknown: its first line
    string(STRIP "${name}" name)
    set(flavour other)
    set(major 0)
  endif()
  set(${out_name} "${name}" PARENT_SCOPE)
  set(${out_flavour} "${flavour}" PARENT_SCOPE)
  set(${out_major} "${major}" PARENT_SCOPE)
endfunction()

macro(tb_find_mpi)
  if(NOT TB_MPI MATCHES "^(openmpi|mpich)$")
    message(FATAL_ERROR "TB_MPI=${TB_MPI}: allowed values are openmpi and mpich")
  endif()
  # TB_MPI changed in an existing build folder: forget what FindMPI cached for the other.
  if(DEFINED _TB_MPI_CACHED AND NOT _TB_MPI_CACHED STREQUAL TB_MPI)
    get_cmake_property(_tb_vars CACHE_VARIABLES)
    foreach(_v IN LISTS _tb_vars)
      if(_v MATCHES "^MPI(EXEC)?_")
        unset(${_v} CACHE)
      endif()
    endforeach()
  endif()
  set(_TB_MPI_CACHED "${TB_MPI}" CACHE INTERNAL "TB_MPI of the last configure")
  # Debian/Ubuntu install both libraries side by side with suffixed wrappers; the
  # unsuffixed names follow update-alternatives. Elsewhere FindMPI searches as usual.
  find_program(_tb_mpicxx NAMES mpicxx.${TB_MPI} NO_CACHE)
  find_program(_tb_mpiexec NAMES mpiexec.${TB_MPI} NO_CACHE)
  if(_tb_mpicxx AND NOT MPI_CXX_COMPILER)
    set(MPI_CXX_COMPILER "${_tb_mpicxx}" CACHE FILEPATH "MPI C++ compiler wrapper")
  endif()
  if(_tb_mpiexec AND NOT MPIEXEC_EXECUTABLE)
    set(MPIEXEC_EXECUTABLE "${_tb_mpiexec}" CACHE FILEPATH "MPI launcher")
  endif()
  set(MPI_DETERMINE_LIBRARY_VERSION TRUE)
  find_package(MPI COMPONENTS CXX)

  if(MPI_CXX_FOUND)
    set(_tb_text "${MPI_CXX_LIBRARY_VERSION_STRING}")
    if((NOT _tb_text OR _tb_text STREQUAL "NOTFOUND") AND MPIEXEC_EXECUTABLE)
      execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _tb_text
                      ERROR_VARIABLE _tb_text TIMEOUT 20)
    endif()
    tb_mpi_identify("${_tb_text}" TB_MPI_LIBRARY TB_MPI_FLAVOUR _tb_major)
    if(NOT TB_MPI_FLAVOUR STREQUAL TB_MPI)
      message(WARNING "TB_MPI=${TB_MPI}, but the MPI found is ${TB_MPI_LIBRARY} (${MPI_CXX_COMPILER}); "
                      "the launcher flags follow the library found")
    endif()
    # The flags one machine needs, owned by the library: Open MPI refuses root and more
    # ranks than cores without them, binds ranks to cores (two jobs would share them),
    # and takes shared memory between ranks (vader, renamed sm in Open MPI 5, which also
    # spells oversubscription --map-by :OVERSUBSCRIBE, --oversubscribe deprecated). MPICH's
    # hydra runs as root, oversubscribes and leaves binding off by default: nothing.
    # Under srun the PMI plugin is the one both Slurm and the library speak (README).
    set(TB_MPIEXEC_FLAGS "")
    set(TB_SRUN_MPI_PLUGIN "")
    if(TB_MPI_FLAVOUR STREQUAL "openmpi")
      set(_tb_over --oversubscribe)
      set(_tb_shm vader)
      if(_tb_major GREATER_EQUAL 5)  # not tried here: Debian 12 has Open MPI 4.1.4
        set(_tb_over --map-by :OVERSUBSCRIBE)
        set(_tb_shm sm)
      endif()
      set(TB_MPIEXEC_FLAGS --allow-run-as-root ${_tb_over} --bind-to none --mca btl self,${_tb_shm})
      set(TB_SRUN_MPI_PLUGIN pmix)
    elseif(TB_MPI_FLAVOUR STREQUAL "mpich")
      set(TB_SRUN_MPI_PLUGIN pmi2)
    endif()
    if(MPIEXEC_PREFLAGS)  # the user's own, as FindMPI documents them
      separate_arguments(TB_MPIEXEC_FLAGS UNIX_COMMAND "${MPIEXEC_PREFLAGS}")
    endif()
  endif()
endmacro()
