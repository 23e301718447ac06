# Micro-benchmarks of the kernels (bench/kernels/*_bench.cc, Google Benchmark).
# Built with the tests so they do not rot, never registered with CTest:
# performance is measured, not tested. Run build/ridge_kernels_bench.
# The Release tree keeps them compiling; the sanitizer trees have no use for them.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()
find_package(benchmark QUIET)
if(benchmark_FOUND)
  file(GLOB kernel_benches CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/kernels/*_bench.cc)
  if(kernel_benches)
    add_executable(ridge_kernels_bench ${kernel_benches})
    target_link_libraries(ridge_kernels_bench PRIVATE ridge_kernels ridge_roofline benchmark::benchmark)
    set_target_properties(ridge_kernels_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  endif()
endif()
