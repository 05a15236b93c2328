# Install rules and the package config that lets consumers `find_package(stag)`.
include(CMakePackageConfigHelpers)

foreach(dir graph ops autodiff runtime models)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/stag/${dir}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "test_*" EXCLUDE)
endforeach()
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/stag.hpp ${CMAKE_CURRENT_SOURCE_DIR}/core.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/stag)

set(STAG_INSTALL_TARGETS stag_graph stag)
if(STAG_HAVE_CUDA)
  list(APPEND STAG_INSTALL_TARGETS stag_cuda_kernels)
endif()
install(TARGETS ${STAG_INSTALL_TARGETS} EXPORT stagTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT stagTargets NAMESPACE stag:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stag)
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/stagConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/stagConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stag)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/stagConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/stagConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/stagConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/stag)
