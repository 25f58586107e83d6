# HTML report tests (included from CMakeLists.txt): `lumosim report PATH...
# --html OUT.html` on fixtures and shared traces.
#
#   html_report:NAME      the page: exit 0, self-contained (no scripts, no
#                         external URLs), one class="iter" group per
#                         iteration, deterministic; needs nothing else
#                         (synth_predicted_only: a synthesized job, drawn
#                         predicted only)
#   html_screenshot:NAME  the page rendered by headless chromium and the PNG
#                         checked by html_png_check (not blank, bars drawn);
#                         skipped (77) where chromium is not installed
#
# Shared traces skip (77) when ../shared is missing.

# PNG check without python (CI may not have it): zlib only.
add_executable(html_png_check html_png_check.c)
target_link_libraries(html_png_check PRIVATE ZLIB::ZLIB)

set(LSIM_HTML_TEST ${CMAKE_CURRENT_SOURCE_DIR}/test_html.sh)
set(LSIM_HTML_ENV "LUMOSIM=$<TARGET_FILE:lumosim>;HTML_PNG_CHECK=$<TARGET_FILE:html_png_check>")

function(lsim_html_add name)
  add_test(NAME ${name} COMMAND ${LSIM_SH} ${LSIM_HTML_TEST} ${ARGN})
  set_tests_properties(${name} PROPERTIES
    LABELS "integration;html"
    ENVIRONMENT "${LSIM_HTML_ENV}"
    SKIP_RETURN_CODE ${LSIM_SKIP_CODE}
    TIMEOUT 300)
endfunction()

# lsim_html_test(NAME ITERS PATH [test_html.sh option]...): both tests.
function(lsim_html_test name iters path)
  lsim_html_add(html_report:${name} ${ARGN} --contains "Critical path" ${iters} ${path})
  lsim_html_add(html_screenshot:${name} ${ARGN} --screenshot ${iters} ${path})
endfunction()

set(_hs ${LSIM_SHARED_TRACES})
lsim_html_test(hip_trace.json 1 ${LSIM_TEST_DATA}/hip_trace.json
  --contains "data-iter=\"ProfilerStep#1\"")
lsim_html_test(cuda_graph.json 1 ${LSIM_TEST_DATA}/cuda_graph.json
  --contains "data-iter=\"ProfilerStep#1\"")
lsim_html_test(ns_resolution 5
  ${_hs}/hta_single/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz
  --require ${_hs}/hta_single/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz
  --contains "data-iter=\"ProfilerStep#105\"")
lsim_html_test(megatron_tp8_a100_rank0 1 ${_hs}/megatron_tp8_a100/rank0.json.gz
  --require ${_hs}/megatron_tp8_a100/rank0.json.gz
  --contains "data-iter=\"ProfilerStep#3\"")
# No ProfilerStep annotation: one group for the whole window (the bundled
# copy of the trace when there is one: lsim_real_trace, CMakeLists.txt).
lsim_real_trace(hta_single/critical_path__simple_add__benchmark_result_493459_1694039959_trace.json.gz _sa _lab)
lsim_html_test(simple_add_window 1 ${_sa} --require ${_sa} --contains "data-iter=\"window\"")
set_property(TEST html_report:simple_add_window html_screenshot:simple_add_window APPEND PROPERTY LABELS ${_lab})

# Structure only: several ranks on one page, and the observed-latency mode.
lsim_html_add(html_report:two_files 2 ${LSIM_TEST_DATA}/cuda_graph.json ${LSIM_TEST_DATA}/hip_trace.json)
lsim_html_add(html_report:latency_observed --contains "latency mode: observed"
  1 --latency observed ${LSIM_TEST_DATA}/hip_trace.json)
lsim_html_add(html_report:megatron_tp8_a100_dir --require ${_hs}/megatron_tp8_a100
  8 ${_hs}/megatron_tp8_a100)

# A synthesized job (no observed times, like a what-if graph): every rank
# predicted only, one bar per iteration, no "actual" bars, duty-cycle row or
# zero actual figures, and the note saying why.
lsim_html_add(html_report:synth_predicted_only
  --pre "synth --model gpt3-15b --tp 2 --pp 2 --dp 2 --micro-batch 1 --global-batch 16 --no-memory-check -o @TMP@/j.h5"
  --pre "sim @TMP@/j.h5 -o @TMP@/r.h5"
  --contains "no observed times (synthesized or what-if graph)"
  --contains "aria-label=\"iteration breakdown, predicted\""
  --contains "aria-label=\"stream-active duty cycle, predicted\""
  --absent "<title>actual, " --absent ">actual</text>" --absent ">A</text>"
  --absent "actual beside predicted" --absent "actual above predicted" --absent "Window: actual 0"
  8 @TMP@/r.h5)

# A 512-GPU job (one rank slowed, so the slowest and fastest differ): the
# job overview, every rank in the summary (the last in a row shared with
# the GPU before it: equal windows fold, html_scale.sh checks the rows
# against the archive), only the 5 slowest and the fastest ranks in full
# (6 iteration groups), folded, and a page under 2 MB.
lsim_html_add(html_report:job_overview_512
  --pre "synth --model gpt3-15b --layers 2 --tp 8 --pp 1 --dp 64 --micro-batch 1 --global-batch 64 -o @TMP@/j.h5"
  --pre "whatif @TMP@/j.h5 --slow-gpu 5:1.5 -o @TMP@/s.h5"
  --pre "sim @TMP@/s.h5 -o @TMP@/r.h5"
  --contains "<h3>Job overview</h3>" --contains "Kernels by name, all ranks"
  --contains "<details><summary>Rank 5 (slowest)</summary>" --contains "(fastest)</summary>"
  --contains "<tr><td>510&ndash" --contains "(2 GPUs) synth:gpt3-15b/gpu511</td>"
  --contains "The job ends with rank <b>5</b>"
  --max-bytes 2000000
  6 @TMP@/r.h5)
# More than 64 GPUs (issue 39): the job aggregated by stage x replica (heat
# maps, distributions, the slowest GPUs named from the archive, the per-GPU
# rows folded) and a page whose size per GPU keeps 4,096 GPUs under 5 MB
# (html_scale.sh); the screenshot shows the heat maps (their 8 colours).
lsim_cli_test(html_report:job_at_scale "integration;html" ${LSIM_SH} ${CMAKE_CURRENT_SOURCE_DIR}/html_scale.sh)
# report RESULT.h5 --html from the archive's tables, the graphs of the GPUs
# shown in full only: the same page as from every graph, in memory the
# every-graph path is refused at; --detail summary archives shown
# (report_tables.sh, issue 39).
lsim_cli_test(report:from_tables "integration;html;store" ${LSIM_SH} ${CMAKE_CURRENT_SOURCE_DIR}/report_tables.sh
  ${LSIM_SHARED_TRACES})
lsim_html_add(html_screenshot:job_at_scale
  --pre "synth --model gpt3-15b --layers 4 --tp 8 --pp 4 --dp 16 --micro-batch 1 --global-batch 64 -o @TMP@/j.h5"
  --pre "whatif @TMP@/j.h5 --slow-gpu 41:2 -o @TMP@/s.h5"
  --pre "sim @TMP@/s.h5 -o @TMP@/r.h5"
  --screenshot --png-color ffffcc,ffeda0,fed976,feb24c,fd8d3c,fc4e2a,e31a1c,b10026:20000
  6 @TMP@/r.h5)
# The README's 4,096-GPU job drawn, not extrapolated (issue 39): under 5 MB,
# heat maps a row per stage, per-GPU rows folded, the screenshot showing the
# heat maps (html_4096.sh). Label heavy: left out of CI's sanitizer phase
# (a 4,096-GPU synth and sim); html_report:job_at_scale runs the same code.
add_test(NAME html_report:job_4096 COMMAND ${LSIM_SH} ${CMAKE_CURRENT_SOURCE_DIR}/html_4096.sh ${LSIM_HTML_TEST})
set_tests_properties(html_report:job_4096 PROPERTIES
  LABELS "integration;html;heavy"
  ENVIRONMENT "${LSIM_HTML_ENV}"
  SKIP_RETURN_CODE ${LSIM_SKIP_CODE}
  TIMEOUT 300)
# several ranks: the overview (no more than 16 ranks: every rank in full, folded)
lsim_html_add(html_report:job_overview_8 --require ${_hs}/megatron_tp8_a100
  --contains "<h3>Job overview</h3>" --contains "Collective kernels by kind" --contains "<details><summary>Rank 7"
  8 ${_hs}/megatron_tp8_a100)

lsim_html_add(html_screenshot:job_overview_8 --require ${_hs}/megatron_tp8_a100 --screenshot 8 ${_hs}/megatron_tp8_a100)

# An output that cannot be written: exit 1, one error line, nothing on stdout.
lsim_cli_test(html_report:unwritable_output "integration;html" ${LSIM_SH} ${LSIM_EXPECT_EXIT}
  1 --stdout-empty --stderr-nonempty --
  report ${LSIM_TEST_DATA}/hip_trace.json --html ${CMAKE_CURRENT_BINARY_DIR}/no-such-dir/r.html)
