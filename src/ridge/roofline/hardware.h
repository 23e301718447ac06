#pragma once
// Hardware for the roofline: a compute roof (peak FLOP/s of the arithmetic
// the kernels use) and a bandwidth slope (bytes/s from memory).
#include <string>
#include <vector>

#include "ridge/gguf/ggml_type.h"

namespace ridge {

struct ProbeResult;

struct HardwareProfile {
  std::string name;         // "h100", the name --hw takes
  std::string description;  // "NVIDIA H100 SXM5 80 GB"
  double peak_flops = 0;    // FLOP/s (dense, no sparsity)
  double bandwidth_bytes_per_s = 0;
  double memory_bytes = 0;  // device memory (0 when unknown, e.g. a host)
  std::string peak_note;    // which arithmetic the peak is, and its source
  // The peak of the arithmetic attention (Q·Kᵀ and P·V over the KV cache)
  // runs at, when it differs from the weights' (a CPU engine multiplies an F16
  // cache in FP32, a BF16 one with the BF16 dot, whatever the weights' type);
  // 0: peak_flops.
  double attention_peak_flops = 0;
  std::string attention_peak_note;
  double AttentionPeak() const { return attention_peak_flops > 0 ? attention_peak_flops : peak_flops; }

  // peak FLOP/s ÷ bandwidth: the arithmetic intensity (FLOP/byte) where the
  // bandwidth slope meets the compute roof.
  double RidgePoint() const { return peak_flops / bandwidth_bytes_per_s; }
};

// The built-in accelerators: h100, h200, a100, l4, rtx4090.
const std::vector<HardwareProfile>& BuiltinHardware();
// Throws ridge::Error listing the names if unknown ("host" is not built in:
// it comes from a probe, see HostProfile).
const HardwareProfile& FindHardware(const std::string& name);
std::string HardwareNames();

// This machine, from a probe. The roof is the peak of the arithmetic ridge's
// CPU kernels use for `weight_type`: the int8 dot product for quantized
// weights (Q8_0, Q4_0, K-quants: activations are quantized to int8), the BF16
// dot for BF16 where the CPU has one, FP32 FMA otherwise (F16 weights are
// widened to f32 and multiplied by FMA: there is no F16 dot to use).
// Attention's roof follows the KV cache's type the same way: the BF16 dot for
// a BF16 cache where the probe found one (AttendHead takes it there), FP32
// FMA otherwise.
HardwareProfile HostProfile(const ProbeResult& probe, GgmlType weight_type, GgmlType kv_type = GgmlType::kF16);

}  // namespace ridge
