#include "ridge/roofline/hardware.h"

#include <fmt/format.h>

#include "ridge/base/error.h"
#include "ridge/roofline/probe.h"

namespace ridge {
namespace {

constexpr double kTera = 1e12;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

const std::vector<HardwareProfile>& BuiltinHardware() {
  // Dense (no structured sparsity) BF16 tensor-core peaks with FP32
  // accumulation, and peak DRAM bandwidth, from NVIDIA's datasheets.
  // Memory sizes are the nominal capacities.
  static const std::vector<HardwareProfile> profiles = {
      {"h100", "NVIDIA H100 SXM5 80 GB (HBM3)", 989e12, 3.35 * kTera, 80 * kGiB,
       "dense BF16 tensor core; H100 datasheet lists 1,979 TFLOP/s with sparsity", 0, ""},
      {"h200", "NVIDIA H200 SXM 141 GB (HBM3e)", 989e12, 4.8 * kTera, 141 * kGiB,
       "dense BF16 tensor core (same GH100 compute as H100 SXM); 1,979 with sparsity", 0, ""},
      {"a100", "NVIDIA A100 SXM4 80 GB (HBM2e)", 312e12, 2.039 * kTera, 80 * kGiB,
       "dense BF16 tensor core; A100 datasheet lists 624 TFLOP/s with sparsity", 0, ""},
      {"l4", "NVIDIA L4 24 GB (GDDR6)", 121e12, 0.300 * kTera, 24 * kGiB,
       "dense BF16 tensor core: the L4 datasheet's 242 TFLOP/s is with sparsity", 0, ""},
      // GeForce Ada runs FP16/BF16 tensor math with FP32 accumulation at half
      // the FP16-accumulate rate. NVIDIA's Ada Lovelace architecture whitepaper
      // (RTX 4090 column): "Peak BF16 Tensor TFLOPS with FP32 Accumulate
      // 165.2/330.4" (dense/sparse); FP16 accumulate would be 330.3 dense.
      // Inference kernels accumulate in FP32, so 165.2 dense is the roof.
      {"rtx4090", "NVIDIA GeForce RTX 4090 24 GB (GDDR6X)", 165.2e12, 1.008 * kTera, 24 * kGiB,
       "dense BF16 tensor core with FP32 accumulate (Ada whitepaper); 330.4 with sparsity", 0, ""},
  };
  return profiles;
}

const HardwareProfile& FindHardware(const std::string& name) {
  for (const HardwareProfile& h : BuiltinHardware())
    if (h.name == name) return h;
  Fail("unknown hardware '{}' (known: {}, or host for this machine's probe)", name, HardwareNames());
}

std::string HardwareNames() {
  std::string out;
  for (const HardwareProfile& h : BuiltinHardware()) out += (out.empty() ? "" : ", ") + h.name;
  return out;
}

HardwareProfile HostProfile(const ProbeResult& probe, GgmlType weight_type, GgmlType kv_type) {
  HardwareProfile h;
  h.name = "host";
  h.description = fmt::format("this machine: {}, {} threads, {} kernels", probe.cpu_name.empty() ? "CPU" : probe.cpu_name,
                              probe.n_threads, probe.isa);
  h.bandwidth_bytes_per_s = probe.read_bytes_per_s;
  const bool quantized = weight_type != GgmlType::kF32 && weight_type != GgmlType::kF16 &&
                         weight_type != GgmlType::kBF16;
  if (quantized && probe.int8_ops_per_s > 0) {
    h.peak_flops = probe.int8_ops_per_s;
    h.peak_note = fmt::format("probed int8 dot ({}), for {} weights", probe.int8_kernel, GgmlTypeName(weight_type));
  } else if (weight_type == GgmlType::kBF16 && probe.bf16_flops_per_s > 0) {
    // BF16 weights take the BF16 dot where the ISA has one (their activations rounded to BF16).
    h.peak_flops = probe.bf16_flops_per_s;
    h.peak_note = fmt::format("probed BF16 dot ({}), for BF16 weights", probe.bf16_kernel);
  } else {
    // F32 and F16 weights (and BF16 without a BF16 dot) are widened to f32
    // and multiplied with FMA, so their roof is the FP32 FMA peak.
    h.peak_flops = probe.fp32_flops_per_s;
    h.peak_note = fmt::format("probed FP32 FMA ({}), for {} weights", probe.fp32_kernel, GgmlTypeName(weight_type));
  }
  // Attention takes the BF16 dot over a BF16 cache where there is one (AVX-512
  // BF16), and multiplies an F16/F32/Q8_0 cache widened to f32 with FMA.
  if (kv_type == GgmlType::kBF16 && probe.bf16_flops_per_s > 0) {
    h.attention_peak_flops = probe.bf16_flops_per_s;
    h.attention_peak_note = fmt::format("probed BF16 dot ({}), for attention over the BF16 cache", probe.bf16_kernel);
  } else if (probe.fp32_flops_per_s > 0) {
    h.attention_peak_flops = probe.fp32_flops_per_s;
    h.attention_peak_note = fmt::format("probed FP32 FMA ({}), for attention", probe.fp32_kernel);
  }
  if (!(h.peak_flops > 0) || !(h.bandwidth_bytes_per_s > 0))
    Fail("the host probe has no usable peak or bandwidth (peak {} FLOP/s, {} B/s)", h.peak_flops,
         h.bandwidth_bytes_per_s);
  return h;
}

}  // namespace ridge
