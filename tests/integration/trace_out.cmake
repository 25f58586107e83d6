# Predicted-trace tests (lsim_chrome_write, docs/trace-out.md): included by
# tests/integration/CMakeLists.txt. Label: trace_out.
#
#   trace_out:roundtrip:<fixture>  write .json/.json.gz, read back exactly, check the format
#   trace_out:multirank            two ranks in one file: disjoint pids, all checks
#   trace_out:escape               awkward names, negative thread ids and times
#   trace_out:atomic               temporary file + rename; errors leave nothing behind
#   trace_out:shared:<trace>       the same on shared real traces (skipped, 77, when absent)

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
  lsim_trace_out_test(shared:${name} roundtrip --require ${LSIM_SHARED_TRACES}/${f})
  set_property(TEST trace_out:shared:${name} APPEND PROPERTY LABELS shared)
endforeach()
