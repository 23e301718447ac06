# Per-step cost of token masks (bench/grammar/*_bench.cc, Google Benchmark).
# Built with the tests so it does not rot, never registered with CTest:
# performance is measured, not tested. Run build/ridge_grammar_bench.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()
find_package(benchmark QUIET)
if(benchmark_FOUND)
  file(GLOB grammar_benches CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/grammar/*_bench.cc)
  if(grammar_benches)
    add_executable(ridge_grammar_bench ${grammar_benches})
    target_link_libraries(ridge_grammar_bench PRIVATE ridge_grammar ridge_test_support benchmark::benchmark)
    set_target_properties(ridge_grammar_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  endif()
endif()
