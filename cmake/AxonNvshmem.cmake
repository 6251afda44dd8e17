# NVSHMEM for the benchmark peer axon_nvshmem_peer only (axon itself never uses it).
# AXON_NVSHMEM=AUTO builds the peer where NVSHMEM's headers, libnvshmem_host and
# libnvshmem_device.a are found; ON requires them; OFF never looks. Looked for under
# AXON_NVSHMEM_HOME, $NVSHMEM_HOME, then the nvidia-nvshmem pip package of the Python in use
# (nvidia/nvshmem/{include,lib}). Sets AXON_HAVE_NVSHMEM and the targets axon::nvshmem_host,
# axon::nvshmem_device; NVSHMEM_LIB_DIR is where the bootstrap plugins lie.
set(AXON_NVSHMEM AUTO CACHE STRING "Build the NVSHMEM benchmark peer: AUTO, ON or OFF")
set_property(CACHE AXON_NVSHMEM PROPERTY STRINGS AUTO ON OFF)
set(AXON_NVSHMEM_HOME "" CACHE PATH "NVSHMEM install prefix (include/ and lib/)")
set(AXON_HAVE_NVSHMEM OFF)

if(NOT AXON_NVSHMEM STREQUAL "OFF" AND AXON_HAVE_CUDA)
  set(_nvshmem_hints "")
  if(AXON_NVSHMEM_HOME)
    list(APPEND _nvshmem_hints "${AXON_NVSHMEM_HOME}")
  endif()
  if(DEFINED ENV{NVSHMEM_HOME})
    list(APPEND _nvshmem_hints "$ENV{NVSHMEM_HOME}")
  endif()
  if(Python_EXECUTABLE)
    # nvidia/ is a namespace package, spread over every site-packages that has an nvidia-* wheel.
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c
              "import nvidia, os; print(next((q for q in (os.path.join(p, 'nvshmem') for p in nvidia.__path__) if os.path.isdir(q)), ''))"
      OUTPUT_VARIABLE _nvshmem_pip OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0 AND IS_DIRECTORY "${_nvshmem_pip}")
      list(APPEND _nvshmem_hints "${_nvshmem_pip}")
    endif()
  endif()
  find_path(NVSHMEM_INCLUDE_DIR nvshmem.h HINTS ${_nvshmem_hints} PATH_SUFFIXES include NO_DEFAULT_PATH)
  find_library(NVSHMEM_HOST_LIBRARY NAMES nvshmem_host libnvshmem_host.so.3
               HINTS ${_nvshmem_hints} PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
  find_library(NVSHMEM_DEVICE_LIBRARY NAMES libnvshmem_device.a nvshmem_device
               HINTS ${_nvshmem_hints} PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
  if(NVSHMEM_INCLUDE_DIR AND NVSHMEM_HOST_LIBRARY AND NVSHMEM_DEVICE_LIBRARY)
    set(AXON_HAVE_NVSHMEM ON)
    get_filename_component(NVSHMEM_LIB_DIR "${NVSHMEM_HOST_LIBRARY}" DIRECTORY)
    add_library(axon::nvshmem_host SHARED IMPORTED)
    set_target_properties(axon::nvshmem_host PROPERTIES IMPORTED_LOCATION "${NVSHMEM_HOST_LIBRARY}"
                          INTERFACE_INCLUDE_DIRECTORIES "${NVSHMEM_INCLUDE_DIR}")
    add_library(axon::nvshmem_device STATIC IMPORTED)
    set_target_properties(axon::nvshmem_device PROPERTIES IMPORTED_LOCATION "${NVSHMEM_DEVICE_LIBRARY}")
  elseif(AXON_NVSHMEM STREQUAL "ON")
    message(FATAL_ERROR "AXON_NVSHMEM=ON but NVSHMEM was not found (looked in: ${_nvshmem_hints}); "
                        "set AXON_NVSHMEM_HOME or install nvidia-nvshmem-cu13")
  endif()
endif()
message(STATUS "axon: NVSHMEM benchmark peer ${AXON_HAVE_NVSHMEM} (AXON_NVSHMEM=${AXON_NVSHMEM})")
