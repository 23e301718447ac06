#pragma once
// Include this (not <immintrin.h>) in *_avx512.cc files only.
//
// g++ 12's AVX-512 intrinsics self-initialise their "undefined" operands
// (_mm512_undefined_ps() and friends), which -Wuninitialized and
// -Wmaybe-uninitialized report at every use (GCC bug 105593); the warnings
// say nothing about our code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
