# Encoding-speed benchmark of the tokenizer (bench/tokenizer/*_bench.cc, Google
# Benchmark). Built with the tests so it does not rot, never registered with
# CTest: performance is measured, not tested. Run build/ridge_tokenizer_bench.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()
find_package(benchmark QUIET)
if(benchmark_FOUND)
  file(GLOB tokenizer_benches CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/tokenizer/*_bench.cc)
  if(tokenizer_benches)
    add_executable(ridge_tokenizer_bench ${tokenizer_benches})
    target_link_libraries(ridge_tokenizer_bench PRIVATE ridge_tokenizer ridge_test_support benchmark::benchmark)
    set_target_properties(ridge_tokenizer_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  endif()
endif()
