# HDF5 graph store and result archive (io/h5_*.c). Included from
# tests/unit/CMakeLists.txt: include(${CMAKE_CURRENT_SOURCE_DIR}/store.cmake)
#
# test_store builds graphs from the bundled fixtures, round-trips them (and a
# result file) through HDF5, and feeds damaged files to the readers. It pokes
# files through the HDF5 API itself, hence the HDF5 include/link lines.
add_executable(test_store test_store.c)
target_link_libraries(test_store PRIVATE lumosim_io ${HDF5_C_LIBRARIES})
target_include_directories(test_store PRIVATE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
add_test(NAME test_store COMMAND test_store ${LSIM_TEST_DATA} ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(test_store PROPERTIES LABELS "unit;store" TIMEOUT 120)
if(LSIM_SANITIZE)
  # HDF5 itself leaks when it rejects corrupt metadata; suppress only that.
  set_tests_properties(test_store PROPERTIES ENVIRONMENT
    "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/store_lsan.supp:print_suppressions=0")
endif()

# Each allocation of the store's readers and writer made to fail in turn
# (alloc.h): LSIM_ENOMEM naming the store, nothing left behind (issue 40).
add_executable(test_store_oom test_store_oom.c)
target_link_libraries(test_store_oom PRIVATE lumosim_io)
add_test(NAME test_store_oom COMMAND test_store_oom)
set_tests_properties(test_store_oom PROPERTIES LABELS "unit;store" TIMEOUT 300)
if(LSIM_SANITIZE)
  set_tests_properties(test_store_oom PROPERTIES ENVIRONMENT
    "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/store_lsan.supp:print_suppressions=0")
endif()

# The collective (_mpi) functions at several process counts, through
# MPIEXEC_EXECUTABLE like tests/mpi (labels "mpi;store").
add_executable(test_store_mpi test_store_mpi.c)
target_link_libraries(test_store_mpi PRIVATE lumosim_io ${HDF5_C_LIBRARIES})
target_include_directories(test_store_mpi PRIVATE ${HDF5_C_INCLUDE_DIRS} ${HDF5_INCLUDE_DIRS})
set(_store_mpi_flags "")
if(MPIEXEC_EXECUTABLE)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version
    OUTPUT_VARIABLE _store_mpiexec_version ERROR_VARIABLE _store_mpiexec_version
    RESULT_VARIABLE _store_mpiexec_rc TIMEOUT 20)
  if(_store_mpiexec_version MATCHES "Open MPI|OpenRTE|open-mpi")
    set(_store_mpi_flags --oversubscribe)
  endif()
endif()
set(_store_mpi_env "OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
if(LSIM_SANITIZE)
  list(APPEND _store_mpi_env "ASAN_OPTIONS=detect_leaks=0")
endif()
foreach(np 1 2 3 4)
  add_test(NAME mpi:store_np${np}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${np} ${MPIEXEC_PREFLAGS} ${_store_mpi_flags}
            $<TARGET_FILE:test_store_mpi> ${MPIEXEC_POSTFLAGS} ${LSIM_TEST_DATA} ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(mpi:store_np${np} PROPERTIES
    LABELS "mpi;store" ENVIRONMENT "${_store_mpi_env}" PROCESSORS ${np} TIMEOUT 120)
endforeach()
