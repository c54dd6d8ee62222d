# `cmake --install` rules: the public headers, the libraries, a CMake package
# (find_package(Chorus <version> [COMPONENTS torch]) giving Chorus::chorus,
# Chorus::tune, Chorus::c and Chorus::torch) and pkg-config files for the
# core library (chorus.pc) and the C API (chorus-c.pc).
#
# The core library is static and links its layers (chorus_ops and what is
# below it, docs/DESIGN.md "Layers and folders") privately: a static library
# cannot fold them in, so they are installed and exported beside it, under
# their own names (Chorus::chorus_ops, ...), for the linker only. Their
# include directories are build-tree only: a user's program sees nothing but
# include/chorus/.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CHORUS_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/Chorus")

# The core package: the runtime, its layers, and the tune library.
set(chorus_internal_layers chorus_base chorus_protocol chorus_autotune chorus_contracts chorus_ops)
if(CHORUS_WITH_CUDA)
  list(APPEND chorus_internal_layers chorus_cuda)
endif()
if(CHORUS_WITH_NCCL)
  list(APPEND chorus_internal_layers chorus_nccl)
endif()
set_target_properties(chorus_tune PROPERTIES EXPORT_NAME tune)
install(TARGETS chorus chorus_tune ${chorus_internal_layers}
  EXPORT ChorusTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY core/base/include/ core/runtime/include/ tune/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

# The C API: a shared library with the runtime inside, so it needs none of
# the layers above at link time. It keeps the run path to the libraries it
# was linked with outside the loader's own paths (MPI's, the CUDA runtime).
set_target_properties(chorus_c PROPERTIES EXPORT_NAME c INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS chorus_c
  EXPORT ChorusTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY frameworks/c/include/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT ChorusTargets NAMESPACE Chorus:: DESTINATION ${CHORUS_INSTALL_CMAKEDIR})

# The torch component: its own export set, so that the package finds LibTorch
# only for users who ask for it.
if(CHORUS_WITH_TORCH)
  # Chorus::torch links the front end's areas (frameworks/torch/CMakeLists.txt),
  # each installed as Chorus::torch_<area>.
  set_target_properties(chorus_torch PROPERTIES EXPORT_NAME torch)
  foreach(area binding data checkpoint pipeline)
    set_target_properties(chorus_torch_${area} PROPERTIES EXPORT_NAME torch_${area})
  endforeach()
  install(TARGETS chorus_torch chorus_torch_binding chorus_torch_data chorus_torch_checkpoint chorus_torch_pipeline
    EXPORT ChorusTorchTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  foreach(headers frameworks/torch/include frameworks/torch/binding/include frameworks/torch/data/include
                  frameworks/torch/checkpoint/include frameworks/torch/pipeline/include)
    install(DIRECTORY ${headers}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
  endforeach()
  install(EXPORT ChorusTorchTargets NAMESPACE Chorus:: DESTINATION ${CHORUS_INSTALL_CMAKEDIR})
endif()

# The launcher, for users who start jobs with it. It keeps the run path to
# the libraries it was linked with outside the prefix (the CUDA runtime
# where the loader's own paths may not list it).
set_target_properties(chorusrun PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS chorusrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Values the package configuration file is written with.
set(CHORUS_PACKAGE_WITH_CUDA ${CHORUS_WITH_CUDA})
set(CHORUS_PACKAGE_WITH_NCCL ${CHORUS_WITH_NCCL})
set(CHORUS_PACKAGE_WITH_TORCH ${CHORUS_WITH_TORCH})
configure_package_config_file(cmake/ChorusConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ChorusConfig.cmake
  INSTALL_DESTINATION ${CHORUS_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API, so find_package(Chorus 0.1) takes
# 0.1.* only (from 1.0 on this becomes SameMajorVersion).
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ChorusConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ChorusConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ChorusConfigVersion.cmake
  DESTINATION ${CHORUS_INSTALL_CMAKEDIR})

include(ChorusPkgConfig)
