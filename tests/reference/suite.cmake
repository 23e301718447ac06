# The reference suite (label `reference`): ridge's greedy tokens and logits
# held to an independent Python + numpy forward pass (tests/reference/*.py).
#
# Each case is one line, ridge_reference_case(NAME TYPE GEN_MODEL_ARGS...):
# the fixture test reference_gen_NAME_TYPE writes the model with
#   ridge gen-model GEN_MODEL_ARGS... --type TYPE
# and reference_NAME_TYPE_ISA runs run_case.py for ISA = scalar, avx2, avx512:
# `RIDGE_ISA=ISA ridge forward`, then the reference teacher-forced on ridge's
# tokens (tolerances and why: run_case.py, README.md). An ISA this CPU lacks
# exits 77, which CTest reports as not run (skipped), never as passed.
# reference_unit runs the oracle's own tests (dequantizers on hand-made
# blocks; perturbed files must fail the comparison; the other graphs held to
# llama by equivalences).
#
# Python runs with PYTHONDONTWRITEBYTECODE: nothing is written into the source tree.
#
# The sanitizer trees leave it to the Release tree: it tests numbers, not memory.
if(RIDGE_SANITIZE OR RIDGE_SANITIZE_THREAD)
  return()
endif()

# Debian's python3-numpy (scripts/setup.sh) serves /usr/bin/python3; a python3
# that comes first on PATH (pyenv, a virtualenv) may lack numpy.
find_package(Python3 COMPONENTS Interpreter)
set(RIDGE_REFERENCE_PYTHON "")
foreach(candidate IN ITEMS "${Python3_EXECUTABLE}" /usr/bin/python3)
  if(candidate AND NOT RIDGE_REFERENCE_PYTHON)
    execute_process(COMMAND ${candidate} -c "import numpy" RESULT_VARIABLE _numpy_rc OUTPUT_QUIET ERROR_QUIET)
    if(_numpy_rc EQUAL 0)
      set(RIDGE_REFERENCE_PYTHON ${candidate})
    endif()
  endif()
endforeach()
if(NOT RIDGE_REFERENCE_PYTHON)
  message(FATAL_ERROR "tests/reference: a python3 with numpy is required for the reference suite. "
                      "Run scripts/setup.sh (it installs python3-numpy).")
endif()

set(RIDGE_REFERENCE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(RIDGE_REFERENCE_WORK ${CMAKE_BINARY_DIR}/reference)
file(MAKE_DIRECTORY ${RIDGE_REFERENCE_WORK})

function(ridge_reference_case name type)
  set(model ${RIDGE_REFERENCE_WORK}/${name}_${type}.gguf)
  set(fixture reference_${name}_${type})
  add_test(NAME reference_gen_${name}_${type}
           COMMAND $<TARGET_FILE:ridge> gen-model ${ARGN} --type ${type} --threads 1 -o ${model})
  set_tests_properties(reference_gen_${name}_${type} PROPERTIES
    FIXTURES_SETUP ${fixture} LABELS reference TIMEOUT 120)
  set(isas scalar avx2 avx512)
  if(DEFINED RIDGE_REFERENCE_CASE_ISAS)
    set(isas ${RIDGE_REFERENCE_CASE_ISAS})
  endif()
  foreach(isa IN LISTS isas)
    add_test(NAME reference_${name}_${type}_${isa}
             COMMAND ${RIDGE_REFERENCE_PYTHON} ${RIDGE_REFERENCE_DIR}/run_case.py --ridge $<TARGET_FILE:ridge>
                     --model ${model} --type ${type} --isa ${isa} --work ${RIDGE_REFERENCE_WORK}/${name}_${type}_${isa})
    set_tests_properties(reference_${name}_${type}_${isa} PROPERTIES
      FIXTURES_REQUIRED ${fixture} LABELS reference SKIP_RETURN_CODE 77 TIMEOUT 300
      ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
  endforeach()
endfunction()

# Shapes: small enough that every case takes about a second; rows that are
# multiples of 256 so that K-quants fit.
set(llama_small --dim 256 --ffn 512 --layers 2 --heads 4 --kv-heads 2
    --vocab-from ${RIDGE_SHARED_DIR}/vocab/ggml-vocab-llama-spm.gguf)

ridge_reference_case(llama F32 ${llama_small})
ridge_reference_case(llama F16 ${llama_small})
ridge_reference_case(llama BF16 ${llama_small})
ridge_reference_case(llama Q8_0 ${llama_small})
ridge_reference_case(llama Q4_0 ${llama_small})
ridge_reference_case(llama Q4_1 ${llama_small})
ridge_reference_case(llama Q5_0 ${llama_small})
ridge_reference_case(llama Q5_1 ${llama_small})
ridge_reference_case(llama IQ4_NL ${llama_small})
ridge_reference_case(llama Q4_K ${llama_small})
ridge_reference_case(llama Q6_K ${llama_small})
foreach(type IN ITEMS Q2_K Q3_K Q5_K IQ4_XS Q4_K_M Q5_K_M)
  ridge_reference_case(llama ${type} ${llama_small})
endforeach()

# Llama's variants: mistral-style window on every layer, and each RoPE scaling.
ridge_reference_case(llama_window F32 ${llama_small} --sliding-window 5)
ridge_reference_case(llama_rope_llama3 F32 ${llama_small} --rope-scaling llama3 --rope-factor 8 --rope-original-ctx 64)
ridge_reference_case(llama_rope_linear F32 ${llama_small} --rope-scaling linear --rope-factor 2 --rope-original-ctx 64)
ridge_reference_case(llama_rope_yarn F32 ${llama_small} --rope-scaling yarn --rope-factor 4 --rope-original-ctx 64)

# The other architectures, each with the variants its real files carry; the
# caps are small so that tanh bends the random weights' scores and logits.
set(qwen2_small ${llama_small} --arch qwen2)
set(qwen3_small ${llama_small} --arch qwen3 --head-dim 128)
set(phi3_small ${llama_small} --arch phi3 --sliding-window 12)
set(phi3_longrope ${llama_small} --arch phi3 --rope-scaling longrope --rope-original-ctx 64)
set(gemma2_small ${llama_small} --arch gemma2 --head-dim 128 --sliding-window 6 --attn-softcap 1.5
    --final-softcap 3)
# Six layers: gemma3's every sixth layer is global (its own RoPE base 1e6 vs 10000 for the sliding ones).
set(gemma3_small --dim 256 --ffn 512 --layers 6 --heads 4 --kv-heads 1 --arch gemma3 --head-dim 128
    --sliding-window 6 --rope-freq-base 1000000 --vocab-from ${RIDGE_SHARED_DIR}/vocab/ggml-vocab-llama-spm.gguf)
foreach(type IN ITEMS F32 Q8_0)
  ridge_reference_case(qwen2 ${type} ${qwen2_small})
  ridge_reference_case(qwen3 ${type} ${qwen3_small})
  ridge_reference_case(phi3 ${type} ${phi3_small})
  ridge_reference_case(gemma2 ${type} ${gemma2_small})
  ridge_reference_case(gemma3 ${type} ${gemma3_small})
endforeach()
ridge_reference_case(phi3_longrope F32 ${phi3_longrope})

# Mixtures of experts: 8 experts, 2 per token; qwen2moe's shared expert beside them.
# Routing is discontinuous: where two experts' router probabilities nearly tie,
# the int8 kernels' rounding of activations (avx2, avx512 on quantized weights)
# can pick the other one, and the logits then differ by far more than any
# per-logit tolerance; measured once: qwen2moe Q8_0 under avx512 at step 19.
# So the quantized MoE cases run where activations stay float (scalar); the
# F32 cases hold every ISA's routing to the reference, and the dense cases the
# int8 kernels.
set(qwen3moe_small ${llama_small} --arch qwen3moe --head-dim 64 --experts 8 --experts-used 2 --expert-ffn 256)
set(qwen2moe_small ${llama_small} --arch qwen2moe --experts 8 --experts-used 2 --expert-ffn 256
    --shared-expert-ffn 512)
set(mixtral_small ${llama_small} --experts 8 --experts-used 2)
ridge_reference_case(qwen3moe F32 ${qwen3moe_small})
ridge_reference_case(qwen2moe F32 ${qwen2moe_small})
ridge_reference_case(mixtral F32 ${mixtral_small})
set(RIDGE_REFERENCE_CASE_ISAS scalar)
ridge_reference_case(qwen3moe Q8_0 ${qwen3moe_small})
ridge_reference_case(qwen2moe Q8_0 ${qwen2moe_small})
unset(RIDGE_REFERENCE_CASE_ISAS)
# gpt-oss: two layers (0 slides over 5 positions, 1 is global), heads × head_dim 8 × 64 ≠ 256,
# sinks, biases everywhere, YaRN, top-2 of 8 experts with softmax over the chosen logits and
# the clamped SwiGLU. F32 with F32 experts, and MXFP4 everywhere (experts as the real files
# hold them), both on every ISA: no two experts nearly tie in this file's routing, so the int8
# activations of avx2/avx512 pick the reference's experts (measured 2e-7 relative apart).
set(gptoss_small --dim 256 --ffn 512 --layers 2 --heads 8 --kv-heads 2 --head-dim 64 --arch gpt-oss
    --experts 8 --experts-used 2 --expert-ffn 256 --sliding-window 5 --rope-scaling yarn --rope-factor 4
    --rope-original-ctx 64 --vocab-from ${RIDGE_SHARED_DIR}/vocab/ggml-vocab-llama-spm.gguf)
ridge_reference_case(gptoss F32 ${gptoss_small} --expert-type F32)
ridge_reference_case(gptoss MXFP4 ${gptoss_small})
ridge_reference_case(qwen3 Q4_K_M ${qwen3_small})
ridge_reference_case(gemma2 Q6_K ${gemma2_small})
ridge_reference_case(qwen2 Q5_1 ${qwen2_small})
ridge_reference_case(phi3 IQ4_NL ${phi3_small})

add_test(NAME reference_unit
         COMMAND ${RIDGE_REFERENCE_PYTHON} -m unittest discover -s ${RIDGE_REFERENCE_DIR} -p "test_*.py" -v)
set_tests_properties(reference_unit PROPERTIES LABELS reference TIMEOUT 300 ENVIRONMENT
  "PYTHONDONTWRITEBYTECODE=1;RIDGE_BINARY=$<TARGET_FILE:ridge>;RIDGE_REFERENCE_WORK=${RIDGE_REFERENCE_WORK}/unit;\
RIDGE_REFERENCE_VOCAB=${RIDGE_SHARED_DIR}/vocab/ggml-vocab-llama-spm.gguf")

# Prompt lookup on a model that copies (bench/successor_checkpoint.py, checked
# by its own output): the same greedy output with speculation, and nearly every
# draft of the copied cycle accepted.
add_test(NAME reference_spec_copy
         COMMAND ${RIDGE_REFERENCE_PYTHON} ${RIDGE_REFERENCE_DIR}/spec_copy_case.py --ridge $<TARGET_FILE:ridge>
                 --tokenizer ${RIDGE_SHARED_DIR}/models/tok512.bin --work ${RIDGE_REFERENCE_WORK}/spec_copy)
set_tests_properties(reference_spec_copy PROPERTIES LABELS reference TIMEOUT 300 ENVIRONMENT PYTHONDONTWRITEBYTECODE=1)
