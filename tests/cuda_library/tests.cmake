# tests.cmake — libmemplan_cuda_alloc.so loads the way PyTorch loads it: with
# dlopen, into a process that loaded libstdc++ with dlopen too and used its
# thread-locals (load_after_libstdcxx.c says why that is the hard case). No
# GPU needed: nothing is called. Without a driver, the toolkit's stub
# libcuda.so stands in as libcuda.so.1 (the library needs one to load).
if(NOT TARGET memplan_cuda_alloc)
  return()
endif()
add_executable(memplan_load_after_libstdcxx ${CMAKE_CURRENT_LIST_DIR}/load_after_libstdcxx.c)
set_target_properties(memplan_load_after_libstdcxx PROPERTIES LINKER_LANGUAGE C)
target_link_libraries(memplan_load_after_libstdcxx PRIVATE ${CMAKE_DL_LIBS})
set(_memplan_driver_dir ${CMAKE_CURRENT_BINARY_DIR}/cuda_library_driver)
file(MAKE_DIRECTORY ${_memplan_driver_dir})
if(CUDA_cuda_driver_LIBRARY)
  file(CREATE_LINK ${CUDA_cuda_driver_LIBRARY} ${_memplan_driver_dir}/libcuda.so.1 SYMBOLIC)
endif()
add_test(NAME runtime.cuda_library_loads_after_libstdcxx
  COMMAND memplan_load_after_libstdcxx $<TARGET_FILE:memplan_cuda_alloc>)
set_tests_properties(runtime.cuda_library_loads_after_libstdcxx PROPERTIES LABELS runtime TIMEOUT 60
  PASS_REGULAR_EXPRESSION "^loaded\n" ENVIRONMENT "LD_LIBRARY_PATH=${_memplan_driver_dir}")
