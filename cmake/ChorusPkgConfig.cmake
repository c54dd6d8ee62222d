# chorus.pc: the core library for builds without CMake
#   c++ -std=c++17 app.cc $(pkg-config --cflags --libs chorus)
# The library is static, so Libs lists its layers (in link order), the CUDA
# runtime when built with CUDA, NCCL, MPI's C library and the thread flag
# (GNU-style linker flags: Linux).
# chorus_ops and chorus_nccl need each other, and pkg-config drops a
# repeated -l: the layers are one linker group instead.
set(chorus_pc_libs "-L\${libdir} -Wl,--start-group -lchorus -lchorus_ops")
if(CHORUS_WITH_NCCL)
  string(APPEND chorus_pc_libs " -lchorus_nccl")
endif()
string(APPEND chorus_pc_libs " -lchorus_autotune -lchorus_protocol -lchorus_contracts")
if(CHORUS_WITH_CUDA)
  string(APPEND chorus_pc_libs " -lchorus_cuda")
endif()
string(APPEND chorus_pc_libs " -lchorus_base -Wl,--end-group")
if(CHORUS_WITH_NCCL)
  string(APPEND chorus_pc_libs " ${NCCL_LIBRARY}")
endif()
if(CHORUS_WITH_CUDA)
  string(APPEND chorus_pc_libs " -L${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
foreach(lib IN LISTS MPI_C_LIBRARIES)
  string(APPEND chorus_pc_libs " ${lib}")
endforeach()
string(APPEND chorus_pc_libs " -pthread")

# The prefix relative to the .pc file, so the installed tree may move
# (cmake --install --prefix anywhere).
file(RELATIVE_PATH chorus_pc_prefix_from_pcfiledir
  "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
string(REGEX REPLACE "/$" "" chorus_pc_prefix_from_pcfiledir "${chorus_pc_prefix_from_pcfiledir}")
# The public headers include no MPI, CUDA or NCCL header.
configure_file(${CMAKE_CURRENT_LIST_DIR}/chorus.pc.in ${CMAKE_CURRENT_BINARY_DIR}/chorus.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chorus.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# chorus-c.pc: the C API, for C programs (and other languages' builds):
#   cc -std=c99 app.c $(pkg-config --cflags --libs chorus-c)
# libchorus_c is shared and carries its own dependencies; a program outside
# the loader's paths finds it through its run path, e.g.
#   -Wl,-rpath,$(pkg-config --variable=libdir chorus-c)
configure_file(${CMAKE_CURRENT_LIST_DIR}/chorus-c.pc.in ${CMAKE_CURRENT_BINARY_DIR}/chorus-c.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/chorus-c.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
