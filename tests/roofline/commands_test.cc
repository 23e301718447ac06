// `ridge kv` and `ridge roofline` run as a user runs them.
#include <gtest/gtest.h>


#include <cstdio>
#include <fstream>
#include <string>

#include "ridge/roofline/probe.h"
#include "cli_runner.h"
#include "stories_model.h"
#include "test_paths.h"

namespace ridge {
namespace {

using testing::CliResult;
using testing::RunRidge;

void ExpectHas(const CliResult& r, const std::string& needle) {
  EXPECT_NE(r.output().find(needle), std::string::npos) << "missing '" << needle << "' in:\n" << r.output();
}

TEST(KvCommand, ReferenceExampleWithExplicitShape) {
  const CliResult r = RunRidge("kv --layers 32 --heads 32 --kv-heads 32 --head-dim 128 --context 4096 --batch 50 --budget 80GiB");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "per token    524,288 B  (512.00 KiB)");
  ExpectHas(r, "per request  2,147,483,648 B  (2.00 GiB)");
  ExpectHas(r, "107,374,182,400 B  (100.00 GiB)");
  ExpectHas(r, "fits 40 requests");
  ExpectHas(r, "does NOT fit");
  ExpectHas(r, "GQA-8");  // a quarter: 128.00 KiB per token
  ExpectHas(r, "128.00 KiB");
}

TEST(KvCommand, PresetOnADeviceLessItsWeights) {
  const CliResult r = RunRidge("kv --preset llama-3-8b --hw h100 -c 4096 -b 8");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "llama-3-8b: 32 layers × 8 KV heads (32 query heads) × head dim 128");
  ExpectHas(r, "per token    131,072 B");
  ExpectHas(r, "less 14.96 GiB of F16 weights");
  ExpectHas(r, "GQA-8 *");
}

TEST(KvCommand, BadInputIsAnErrorNotACrash) {
  CliResult r = RunRidge("kv --preset nonesuch");
  EXPECT_EQ(r.exit_code, 1);
  ExpectHas(r, "unknown model preset 'nonesuch'");
  r = RunRidge("kv --layers 32 --kv-heads 8");
  EXPECT_EQ(r.exit_code, 1);
  ExpectHas(r, "--head-dim");
  r = RunRidge("kv --preset llama-2-7b --budget 12 parsecs");
  EXPECT_NE(r.exit_code, 0);
  r = RunRidge("kv --preset llama-2-7b --kv-type q4_0");
  EXPECT_EQ(r.exit_code, 1);
  ExpectHas(r, "KV cache type Q4_0 is not supported");
  r = RunRidge("kv -m /nonexistent.gguf");
  EXPECT_EQ(r.exit_code, 1);
}

TEST(RooflineCommand, DefaultAnalysisWithChart) {
  const std::string svg = testing::ScratchDir("roofline-cmd") + "/chart.svg";
  const CliResult r = RunRidge("roofline --preset llama-2-7b --hw h100 -b 1 -c 1024 --svg " + svg + " --measured-tps 200");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "ridge point 295.2 FLOP/byte");
  ExpectHas(r, "prefill of 512 tokens");
  ExpectHas(r, "decode step: batch 1");
  ExpectHas(r, "FFN gate/up");
  ExpectHas(r, "LM head");
  ExpectHas(r, "intensity 1.00 FLOP/B vs ridge 295.2 → memory-bound");
  ExpectHas(r, "decode batch sweep");
  ExpectHas(r, "weight-only quantization");
  ExpectHas(r, "Q4_0");
  ExpectHas(r, "measured decode 200.00 tokens/s = 82.1% of the predicted bound 243.53 tokens/s");
  std::ifstream in(svg);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("</svg>"), std::string::npos);
  EXPECT_NE(text.find("measured decode 200.0 tok/s"), std::string::npos);
}

TEST(RooflineCommand, MeasuredFigureFromABenchReport) {
  const std::string dir = testing::ScratchDir("roofline-bench-json");
  std::ofstream(dir + "/bench.json") << R"({"tests": [{"test": "pp512", "mean": 900.0}, {"test": "tg128", "mean": 200.0}]})";
  CliResult r = RunRidge("roofline --preset llama-2-7b --hw h100 -b 1 -c 1024 --bench-json " + dir + "/bench.json");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "measured decode 200.00 tokens/s = 82.1% of the predicted bound 243.53 tokens/s");
  r = RunRidge("roofline --preset llama-2-7b --hw h100 --bench-json " + dir + "/bench.json --measured-phase prefill");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "measured prefill 900.00 tokens/s");
  std::ofstream(dir + "/bad.json") << "{\"tests\": 3}";
  r = RunRidge("roofline --preset llama-2-7b --hw h100 --bench-json " + dir + "/bad.json");
  EXPECT_EQ(r.exit_code, 1);
  ExpectHas(r, "not a `ridge bench -o json` report");
}

TEST(RooflineCommand, HostProfileFromASavedProbe) {
  ProbeResult p;
  p.cpu_name = "Unit CPU";
  p.isa = "avx512";
  p.n_threads = 2;
  p.buffer_bytes = 1 << 30;
  p.passes = 5;
  p.read_bytes_per_s = 20e9;
  p.fp32_flops_per_s = 150e9;
  p.bf16_flops_per_s = 300e9;
  p.int8_ops_per_s = 600e9;
  p.fp32_kernel = "unit fp32 kernel";
  p.bf16_kernel = "unit bf16 kernel";
  p.int8_kernel = "unit int8 kernel";
  p.measured_at = "2025-06-01T00:00:00Z";
  const std::string path = testing::ScratchDir("roofline-host") + "/probe.json";
  SaveProbe(p, path);
  CliResult r = RunRidge("roofline --preset tinyllama-1.1b --hw host --probe-file " + path + " --weight-type q8_0");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "peak 600.0 GFLOP/s (probed int8 dot (unit int8 kernel), for Q8_0 weights)");
  ExpectHas(r, "ridge point 30.0 FLOP/byte");
  ExpectHas(r, "f32 activations");
  r = RunRidge("roofline --preset tinyllama-1.1b --hw host --probe-file /nonexistent/probe.json");
  EXPECT_EQ(r.exit_code, 1);
  ExpectHas(r, "ridge roofline --probe");
}

TEST(RooflineCommand, ListsProfilesAndPresets) {
  const CliResult r = RunRidge("roofline --list");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  for (const char* name : {"h100", "h200", "a100", "l4", "rtx4090", "host", "tinyllama-1.1b", "llama-3.2-1b",
                           "llama-2-7b", "llama-3-8b", "llama-2-70b"})
    ExpectHas(r, name);
}

TEST(RooflineCommand, BadFlags) {
  CliResult r = RunRidge("roofline --hw tpu");
  EXPECT_EQ(r.exit_code, 1);
  ExpectHas(r, "unknown hardware 'tpu'");
  r = RunRidge("roofline --phase sideways");
  EXPECT_EQ(r.exit_code, 1);
  r = RunRidge("roofline --weight-type q9_9");
  EXPECT_EQ(r.exit_code, 1);
  ExpectHas(r, "--weight-type q9_9: unknown type");
  r = RunRidge("roofline --preset llama-2-7b -m x.gguf");
  EXPECT_EQ(r.exit_code, 1);
}

// `ridge bench` end to end on the real tiny model: the weights are copied into
// 2 MiB pages unless --mmap, both tests are reported against the probe, tg
// also against the reads paired with its steps.
TEST(BenchCommand, ReportsBothTestsAgainstTheRoofline) {
  const std::string model = testing::Stories260kGguf();
  CliResult r = RunRidge("bench -m '" + model + "' -p 16 -n 8 -r 1 -t 1 --probe-buffer-mib 8");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "weights: copied into 2 MiB pages (");
  ExpectHas(r, "; file layout (no weight panels for these types on ");  // F32: nothing to repack
  ExpectHas(r, "| pp16 |");
  ExpectHas(r, "| tg8 |");
  ExpectHas(r, "paired roofline: median over decode steps");
  r = RunRidge("bench -m '" + model + "' -p 16 -n 8 -r 1 -t 1 --probe-buffer-mib 8 --mmap --profile");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "weights: mapped from the file (4 KiB page cache); file layout (mapped: read in place, not repacked");
  ExpectHas(r, "where a forward pass's time goes (--profile");
  ExpectHas(r, "| pp16 | FFN gate, up matmuls | 5 |");  // stories260K: 5 layers
  ExpectHas(r, "| tg8 | LM head | 1 |");
  r = RunRidge("bench -m '" + model + "' -p 16 -n 8 -r 1 -t 1 --probe-buffer-mib 8 --batch 1,2 --profile");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  ExpectHas(r, "| batch 2 decode | attention | 5 |");
  r = RunRidge("bench -m '" + model + "' -n 8 -t 1 --probe-buffer-mib 8 --spec ngram --profile");
  EXPECT_NE(r.exit_code, 0);
  ExpectHas(r, "not with --spec/--draft");
  r = RunRidge("bench -m '" + model + "' -p 0 --probe-buffer-mib 8");
  EXPECT_NE(r.exit_code, 0);
  ExpectHas(r, "must be at least 1");
}

// What the split bench does not measure is refused by name, before any rank
// starts (so also outside mpirun and in a build without MPI).
TEST(BenchCommand, OptionsTheSplitBenchIgnoresAreRefused) {
  const std::string bench = "bench -m '" + testing::Stories260kGguf() + "' -p 16 -n 8 -r 1 -t 1 --pp 2 ";
  for (const std::string flag : {"--batch 1,4", "--spec ngram", "-d 64", "-o json", "--mmap", "--profile"}) {
    const CliResult r = RunRidge(bench + flag);
    EXPECT_NE(r.exit_code, 0) << flag;
    ExpectHas(r, "is not supported with --tp/--pp: the split bench measures pp and tg only");
  }
  const CliResult r = RunRidge(bench + "--batch 1,4");
  ExpectHas(r, "--batch is not supported");
}

}  // namespace
}  // namespace ridge

namespace ridge {
namespace {

// The network as a third roof: llama-2-7b's decode at batch 64 over 100 Gbit/s
// with 5 µs messages stops paying past 4 ranks (tensor_parallel_cost_test.cc
// checks the arithmetic; this, the command).
TEST(RooflineCommand, TensorParallelAddsTheLinkAsARoof) {
  testing::CliResult r =
      testing::RunRidge("roofline --preset llama-2-7b --phase decode -b 64 --tp 8 --link 100 --link-latency-us 5");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  EXPECT_TRUE(r.Has("tensor parallel, decode step, over a 100 Gbit/s link")) << r.out;
  EXPECT_TRUE(r.Has("<- --tp")) << r.out;
  EXPECT_TRUE(r.Has("TP pays up to N = 4 here")) << r.out;
  r = testing::RunRidge("roofline --preset llama-2-7b --tp 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.Has("--tp 2: give the link's bandwidth with --link")) << r.output();
}

}  // namespace
}  // namespace ridge
