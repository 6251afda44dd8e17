# AXON_CUDA=AUTO enables CUDA when a compiler is found; ON requires it; OFF never looks.
# The library loads the CUDA driver at run time, so a CUDA build still runs where there is no GPU.
set(AXON_HAVE_CUDA OFF)
if(NOT AXON_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper only by default, to keep CI builds short; override with -DCMAKE_CUDA_ARCHITECTURES.
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(AXON_HAVE_CUDA ON)
  elseif(AXON_CUDA STREQUAL "ON")
    message(FATAL_ERROR "AXON_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
  endif()
endif()
message(STATUS "axon: CUDA sources ${AXON_HAVE_CUDA} (AXON_CUDA=${AXON_CUDA})")
