# UCX, the engine axon runs on across nodes. Looked up in this order, the first found winning:
#   1. $UCX_HOME (a cluster's own build: HPC-X, MOFED, Spack), alone;
#   2. the system's (find_package's usual places: /usr, CMAKE_PREFIX_PATH, modules);
#   3. the libucx-cu13 wheel in the Python environment (`make` installs it into .venv). Its CMake
#      config is relocatable (its pkg-config file is not), so we ask Python where it is.
# A cluster's UCX must win: the wheel has no InfiniBand, Debian's has no CUDA transports.
#
# axon compiles against the headers and loads libucp at run time (transport/ucx/ucx_api.cpp), from
# the folder found here unless the process already holds a libucp: never two UCX builds in one
# process. AXON_UCX=AUTO uses UCX when found, ON requires it, OFF builds without it (one node only).
set(AXON_UCX AUTO CACHE STRING "Build the UCX transport (across nodes): AUTO, ON or OFF")
set_property(CACHE AXON_UCX PROPERTY STRINGS AUTO ON OFF)
set(AXON_UCX_MIN_VERSION 1.13)
set(AXON_HAVE_UCX OFF)
set(AXON_UCX_SOURCE "")

if(NOT AXON_UCX STREQUAL "OFF")
  if(DEFINED ENV{UCX_HOME})
    find_package(ucx ${AXON_UCX_MIN_VERSION} CONFIG QUIET PATHS "$ENV{UCX_HOME}" NO_DEFAULT_PATH)
    set(AXON_UCX_SOURCE "UCX_HOME=$ENV{UCX_HOME}")
    if(NOT ucx_FOUND)
      message(FATAL_ERROR "UCX_HOME=$ENV{UCX_HOME} holds no UCX ${AXON_UCX_MIN_VERSION} or newer "
                          "(no lib/cmake/ucx/ucx-config.cmake); unset it to use the system's or the wheel's")
    endif()
  endif()
  if(NOT ucx_FOUND)
    find_package(ucx ${AXON_UCX_MIN_VERSION} CONFIG QUIET)
    set(AXON_UCX_SOURCE "system")
  endif()
  if(NOT ucx_FOUND)
    if(NOT Python_EXECUTABLE)
      find_package(Python 3.9 COMPONENTS Interpreter QUIET)
    endif()
    if(Python_EXECUTABLE)
      execute_process(COMMAND "${Python_EXECUTABLE}" -c "import libucx, os; print(os.path.dirname(libucx.__file__))"
                      OUTPUT_VARIABLE axon_ucx_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                      RESULT_VARIABLE axon_ucx_wheel_rc)
      if(axon_ucx_wheel_rc EQUAL 0 AND EXISTS "${axon_ucx_wheel}/lib/cmake/ucx")
        find_package(ucx ${AXON_UCX_MIN_VERSION} CONFIG QUIET PATHS "${axon_ucx_wheel}/lib/cmake/ucx" NO_DEFAULT_PATH)
        set(AXON_UCX_SOURCE "the libucx wheel")
      endif()
    endif()
  endif()
  if(ucx_FOUND AND TARGET ucx::ucp)
    set(AXON_HAVE_UCX ON)
    get_target_property(AXON_UCX_INCLUDE ucx::ucp INTERFACE_INCLUDE_DIRECTORIES)
    get_target_property(axon_ucp_lib ucx::ucp IMPORTED_LOCATION)
    if(NOT axon_ucp_lib)
      get_target_property(axon_ucp_lib ucx::ucp IMPORTED_LOCATION_RELEASE)
    endif()
    get_filename_component(AXON_UCX_LIBDIR "${axon_ucp_lib}" DIRECTORY)
  elseif(AXON_UCX STREQUAL "ON")
    message(FATAL_ERROR "AXON_UCX=ON but no UCX ${AXON_UCX_MIN_VERSION} or newer was found: set UCX_HOME, "
                        "install the system's (libucx-dev), or `pip install libucx-cu13` into the Python "
                        "environment CMake uses")
  endif()
endif()
if(AXON_HAVE_UCX)
  message(STATUS "axon: UCX ${ucx_VERSION} from ${AXON_UCX_SOURCE} (${AXON_UCX_LIBDIR})")
else()
  message(STATUS "axon: no UCX (AXON_UCX=${AXON_UCX}): PEs must share one node")
endif()
