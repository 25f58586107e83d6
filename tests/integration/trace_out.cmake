# Predicted-trace tests (lsim_chrome_write, docs/trace-out.md): included by
# tests/integration/CMakeLists.txt. Label: trace_out.
#
#   trace_out:roundtrip:<fixture>  write .json/.json.gz, read back exactly, check the format
#   trace_out:multirank            two ranks in one file: disjoint pids, all checks
#   trace_out:escape               awkward names, negative thread ids and times
#   trace_out:atomic               temporary file + rename; errors leave nothing behind
#   trace_out:shared:<trace>       the same on shared real traces (skipped, 77, when absent)
#   trace_out:tree:<trace>         `replay --trace-out` keeps the CPU op tree (depths, op
#                                  counts, ProfilerSteps, record_param_comms args per
#                                  thread) and reads back as the same job (python3)

add_executable(test_trace_out ${CMAKE_CURRENT_SOURCE_DIR}/test_trace_out.c)
target_link_libraries(test_trace_out PRIVATE lumosim_core)
target_include_directories(test_trace_out PRIVATE ${CJSON_INCLUDE_DIRS})

function(lsim_trace_out_test name)
  add_test(NAME trace_out:${name} COMMAND test_trace_out ${ARGN})
  set_tests_properties(trace_out:${name} PROPERTIES
    LABELS "integration;trace_out"
    SKIP_RETURN_CODE ${LSIM_SKIP_CODE}
    TIMEOUT 300)
endfunction()

foreach(fx IN ITEMS cuda_graph.json hip_trace.json prewindow_megatron_rank0.json.gz)
  lsim_trace_out_test(roundtrip:${fx} roundtrip ${LSIM_TEST_DATA}/${fx})
endforeach()
lsim_trace_out_test(multirank multirank
  ${LSIM_TEST_DATA}/cuda_graph.json ${LSIM_TEST_DATA}/hip_trace.json)
lsim_trace_out_test(escape escape)
lsim_trace_out_test(atomic atomic ${LSIM_TEST_DATA}/cuda_graph.json)

foreach(f IN ITEMS
    megatron_tp8_a100/rank0.json.gz
    hta_single/critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz
    hta_single/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz
    hta_single/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz)
  string(REGEX REPLACE "\\.json\\.gz$" "" name "${f}")
  lsim_real_trace(${f} _path _lab) # the bundled copy when there is one (CMakeLists.txt)
  lsim_trace_out_test(shared:${name} roundtrip --require ${_path})
  set_property(TEST trace_out:shared:${name} APPEND PROPERTY LABELS ${_lab})
endforeach()

# The CPU op tree through the CLI (trace_tree_check.py: what each check
# asserts): the fixtures, the bundled example and two shared real traces.
find_program(LSIM_TREE_PYTHON3 python3)
if(LSIM_TREE_PYTHON3)
  # a graph store keeps the CPU op trees: build + sim --trace-out writes the
  # replay's trace, ProfilerStep whole (trace_out_store.sh; the launcher's
  # variant is mpi:trace_out_store)
  add_test(NAME trace_out:store COMMAND ${LSIM_SH} ${CMAKE_CURRENT_SOURCE_DIR}/trace_out_store.sh
           ${PROJECT_SOURCE_DIR}/examples/megatron_tp8_rank0.json.gz ${LSIM_TEST_DATA}/hip_trace.json
           ${LSIM_TEST_DATA}/cuda_graph.json ${LSIM_TEST_DATA}/training_step.json)
  set_tests_properties(trace_out:store PROPERTIES
    LABELS "integration;trace_out;store"
    ENVIRONMENT "LUMOSIM=$<TARGET_FILE:lumosim>"
    SKIP_RETURN_CODE ${LSIM_SKIP_CODE}
    TIMEOUT 300)
  foreach(f IN ITEMS
      ${LSIM_TEST_DATA}/cpu_tree.json
      ${LSIM_TEST_DATA}/cuda_graph.json
      ${LSIM_TEST_DATA}/hip_trace.json
      ${LSIM_TEST_DATA}/training_step.json
      ${LSIM_TEST_DATA}/prewindow_blocking.json
      ${LSIM_TEST_DATA}/prewindow_megatron_rank0.json.gz
      ${PROJECT_SOURCE_DIR}/examples/megatron_tp8_rank0.json.gz
      ${LSIM_SHARED_TRACES}/megatron_tp8_a100/rank0.json.gz
      ${LSIM_SHARED_TRACES}/ddp4_mi300/rank0.json.gz)
    get_filename_component(dir "${f}" DIRECTORY)
    get_filename_component(dir "${dir}" NAME)
    get_filename_component(base "${f}" NAME)
    string(REGEX REPLACE "\\.json(\\.gz)?$" "" base "${base}")
    set(name trace_out:tree:${dir}/${base})
    add_test(NAME ${name} COMMAND ${LSIM_SH} ${CMAKE_CURRENT_SOURCE_DIR}/trace_tree.sh ${f})
    set_tests_properties(${name} PROPERTIES
      LABELS "integration;trace_out"
      ENVIRONMENT "LUMOSIM=$<TARGET_FILE:lumosim>;PYTHON=${LSIM_TREE_PYTHON3}"
      SKIP_RETURN_CODE ${LSIM_SKIP_CODE}
      TIMEOUT 300)
    if(f MATCHES "^${LSIM_SHARED_TRACES}")
      set_property(TEST ${name} APPEND PROPERTY LABELS shared)
    endif()
  endforeach()
endif()
