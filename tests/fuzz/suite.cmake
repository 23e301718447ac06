# libFuzzer target for the GGUF reader, run by CTest for a bounded time.
#
# It is compiled by clang++ directly (a custom command), not through CMake's
# C++ compiler, so that it gets -fsanitize=fuzzer,address,undefined whatever
# the tree's compiler and flags are (gcc, and in the RIDGE_SANITIZE tree gcc's
# ASan flags, would not mix with clang's libFuzzer runtime).
#
# The fuzzer carries its own sanitizers, so the sanitizer trees neither build
# nor run it again: the Release tree does.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()
find_program(RIDGE_CLANGXX NAMES clang++-14 clang++)
if(NOT RIDGE_CLANGXX)
  message(FATAL_ERROR "tests/fuzz: clang++ with libFuzzer is required for the GGUF reader fuzz test. "
                      "Run scripts/setup.sh (it installs clang and libclang-rt-14-dev).")
endif()
# Fail at configure time, not at test time, if clang cannot link a libFuzzer binary.
set(_probe_dir ${CMAKE_BINARY_DIR}/fuzz/probe)
file(MAKE_DIRECTORY ${_probe_dir})
file(WRITE ${_probe_dir}/probe.cc "#include <cstddef>\n#include <cstdint>\n"
     "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
execute_process(COMMAND ${RIDGE_CLANGXX} -fsanitize=fuzzer,address,undefined ${_probe_dir}/probe.cc
                        -o ${_probe_dir}/probe
                RESULT_VARIABLE _probe_rc OUTPUT_VARIABLE _probe_out ERROR_VARIABLE _probe_out)
if(NOT _probe_rc EQUAL 0)
  message(FATAL_ERROR "tests/fuzz: ${RIDGE_CLANGXX} cannot build a libFuzzer binary (is libclang-rt-14-dev "
                      "installed? scripts/setup.sh installs it):\n${_probe_out}")
endif()

set(RIDGE_FUZZ_DIR ${CMAKE_BINARY_DIR}/fuzz)
set(RIDGE_GGUF_FUZZER ${RIDGE_FUZZ_DIR}/ridge_gguf_fuzz)
# Only the reader's own sources (and what it uses), so work in progress
# elsewhere cannot break the fuzzer build.
set(RIDGE_FUZZ_SOURCES
  ${CMAKE_SOURCE_DIR}/tests/fuzz/gguf_reader_fuzz.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/base/mapped_file.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/base/huge_page_buffer.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/ggml_type.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/dequantize.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/quantize_kquants.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/gguf_value.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/gguf_file.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/gguf_writer.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/architecture.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/gguf/tensor_names.cc
  ${CMAKE_SOURCE_DIR}/src/ridge/model/model_config.cc)
# One object per source through the tree's compiler launcher (ccache), so that
# the sources compile in parallel and a rebuild or a fresh clone reuses them.
set(RIDGE_FUZZ_FLAGS -std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined)
set(RIDGE_FUZZ_OBJECTS "")
foreach(src IN LISTS RIDGE_FUZZ_SOURCES)
  file(RELATIVE_PATH obj ${CMAKE_SOURCE_DIR} ${src})
  set(obj ${RIDGE_FUZZ_DIR}/obj/${obj}.o)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${RIDGE_CLANGXX} ${RIDGE_FUZZ_FLAGS} -DFMT_HEADER_ONLY
            -I${CMAKE_SOURCE_DIR}/src -MD -MF ${obj}.d -c ${src} -o ${obj}
    DEPENDS ${src}
    DEPFILE ${obj}.d
    COMMENT "Compiling ${src} for the GGUF reader fuzzer"
    VERBATIM)
  list(APPEND RIDGE_FUZZ_OBJECTS ${obj})
endforeach()
add_custom_command(
  OUTPUT ${RIDGE_GGUF_FUZZER}
  COMMAND ${RIDGE_CLANGXX} ${RIDGE_FUZZ_FLAGS} ${RIDGE_FUZZ_OBJECTS} -o ${RIDGE_GGUF_FUZZER}
  DEPENDS ${RIDGE_FUZZ_OBJECTS}
  COMMENT "Linking the GGUF reader fuzzer"
  VERBATIM)

# Seed corpus: tiny valid files written by GgufWriter.
add_executable(ridge_fuzz_seed ${CMAKE_SOURCE_DIR}/tests/fuzz/make_seed_corpus.cc)
target_link_libraries(ridge_fuzz_seed PRIVATE ridge_gguf)
add_custom_command(
  OUTPUT ${RIDGE_FUZZ_DIR}/seed/types.gguf
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${RIDGE_FUZZ_DIR}/seed
  COMMAND ridge_fuzz_seed ${RIDGE_FUZZ_DIR}/seed
  DEPENDS ridge_fuzz_seed
  COMMENT "Writing the GGUF fuzzer's seed corpus"
  VERBATIM)
add_custom_target(ridge_gguf_fuzz ALL DEPENDS ${RIDGE_GGUF_FUZZER} ${RIDGE_FUZZ_DIR}/seed/types.gguf)

# The run: a fresh working corpus (new inputs go there), the seeds, and the real
# tokenizer-only files from ../shared/vocab (read in place, truncated to max_len).
set(RIDGE_FUZZ_SECONDS 25 CACHE STRING "seconds the GGUF reader fuzz test runs")
add_test(NAME gguf_reader_fuzz
  COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && exec \"$0\" -max_total_time=${RIDGE_FUZZ_SECONDS} \
-max_len=65536 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=\"$2/\" \"$1\" \"$2/seed\" \"$3\""
          ${RIDGE_GGUF_FUZZER} ${RIDGE_FUZZ_DIR}/work ${RIDGE_FUZZ_DIR} ${RIDGE_SHARED_DIR}/vocab)
set_tests_properties(gguf_reader_fuzz PROPERTIES TIMEOUT 300 LABELS fuzz)
