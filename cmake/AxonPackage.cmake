# What the wheel installs for C and C++ programs, beside the library and its headers: a CMake
# package (find_package(axon), target axon::axon) and a pkg-config file (axon.pc), both under
# <package>/lib and both relocatable, since pip decides where the package lands. `axon config`
# (python/axon/tools/config.py) prints the same folders and flags. A program linked through any of
# them finds libaxon by an rpath (CMake puts the library's folder in a build tree's RPATH by itself;
# axon.pc and `axon config --libs` carry -Wl,-rpath): the package folder is not on the loader's path.
include(CMakePackageConfigHelpers)

set(AXON_CMAKE_INSTALL_DIR lib/cmake/axon)
install(TARGETS axon EXPORT axonTargets LIBRARY DESTINATION . INCLUDES DESTINATION include)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/ DESTINATION include)
install(EXPORT axonTargets NAMESPACE axon:: DESTINATION ${AXON_CMAKE_INSTALL_DIR})

configure_file(${CMAKE_CURRENT_LIST_DIR}/axonConfig.cmake.in ${PROJECT_BINARY_DIR}/axonConfig.cmake @ONLY)
# 0.x: a minor release may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/axonConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/axonConfig.cmake ${PROJECT_BINARY_DIR}/axonConfigVersion.cmake
  DESTINATION ${AXON_CMAKE_INSTALL_DIR})

configure_file(${CMAKE_CURRENT_LIST_DIR}/axon.pc.in ${PROJECT_BINARY_DIR}/axon.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/axon.pc DESTINATION lib/pkgconfig)
