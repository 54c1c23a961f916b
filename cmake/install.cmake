# `cmake --install build --prefix P` installs the C++ library as a CMake package:
#   find_package(faiss_ext CONFIG REQUIRED)   # with CMAKE_PREFIX_PATH=P
#   target_link_libraries(app PRIVATE faiss_ext::faiss_ext)
# The installed headers are the public ones (faiss_ext/*.h and faiss_ext/utils/*.h,
# which reach nothing in impl/ or kernels/: tests/check_public_headers.cmake). The
# static libraries need their dependencies at link time; faiss_extConfig.cmake finds
# them (CUDAToolkit, OpenMP, faiss) with find_dependency.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FAISS_EXT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/faiss_ext)

install(TARGETS faiss_ext faiss_ext_kernels
  EXPORT faiss_extTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/faiss_ext/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/faiss_ext
  FILES_MATCHING PATTERN "*.h"
  PATTERN "impl" EXCLUDE
  PATTERN "python" EXCLUDE)
install(EXPORT faiss_extTargets
  NAMESPACE faiss_ext::
  DESTINATION ${FAISS_EXT_CMAKE_DIR})

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/faiss_extConfig.cmake.in
  ${PROJECT_BINARY_DIR}/faiss_extConfig.cmake
  INSTALL_DESTINATION ${FAISS_EXT_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/faiss_extConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/faiss_extConfig.cmake
  ${PROJECT_BINARY_DIR}/faiss_extConfigVersion.cmake
  DESTINATION ${FAISS_EXT_CMAKE_DIR})
