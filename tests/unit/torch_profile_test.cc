// torch_profile_test.cc — PyTorch profiler chrome traces as problems: steps,
// ticks, operator attribution, what is left out, errors that name the event
// and field, and the resnet18 profile recorded by tests/torch_profiler/record_profile.py.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/file_kind.h"
#include "memplan/torch_profile.h"

namespace memplan {
namespace {

std::string memory(double ts, int64_t bytes, uint64_t addr, int tid = 1) {
  return R"({"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":7,"tid":)" + std::to_string(tid) +
         R"(,"ts":)" + std::to_string(ts) + R"(,"args":{"Total Reserved":0,"Total Allocated":0,"Bytes":)" +
         std::to_string(bytes) + R"(,"Addr":)" + std::to_string(addr) + R"(,"Device Type":0,"Device Id":-1}})";
}

std::string span(const std::string& name, double ts, double dur, int tid = 1) {
  return R"({"ph":"X","cat":"cpu_op","name":")" + name + R"(","pid":7,"tid":)" + std::to_string(tid) + R"(,"ts":)" +
         std::to_string(ts) + R"(,"dur":)" + std::to_string(dur) + R"(,"args":{}})";
}

std::string trace(const std::vector<std::string>& events) {
  std::string out = R"({"schemaVersion":1,"traceEvents":[)";
  for (size_t i = 0; i < events.size(); ++i) out += (i ? "," : "") + events[i];
  return out + "]}";
}

TorchProfile parse_profile_ok(const std::string& text) {
  StatusOr<TorchProfile> profile = parse_torch_profile(text, "p.json");
  EXPECT_TRUE(profile.ok()) << profile.status().message();
  return profile.ok() ? *profile : TorchProfile{};
}

std::string parse_error(const std::string& text) {
  StatusOr<TorchProfile> profile = parse_torch_profile(text, "p.json");
  return profile.ok() ? "" : profile.status().message();
}

TEST(TorchProfile, WholeTraceIsOneIterationWithTicksInTimeOrder) {
  // Written out of time order: the reader sorts by ts.
  const TorchProfile p = parse_profile_ok(
      trace({memory(30, -64, 0x100), memory(10, 64, 0x100), memory(20, 32, 0x200), memory(40, -32, 0x200)}));
  EXPECT_TRUE(p.steps.empty());
  EXPECT_EQ(profile_step_numbers(p), std::vector<int64_t>{0});
  StatusOr<ProfileExtraction> x = extract_profile_step(p, 0);
  ASSERT_TRUE(x.ok()) << x.status().message();
  EXPECT_TRUE(x->whole_trace);
  EXPECT_EQ(x->events, 4u);
  ASSERT_EQ(x->problem.size(), 2u);
  EXPECT_EQ(x->problem.buffers[0].lower, 0);
  EXPECT_EQ(x->problem.buffers[0].upper, 2);
  EXPECT_EQ(x->problem.buffers[0].size, 64);
  EXPECT_EQ(x->problem.buffers[1].lower, 1);
  EXPECT_EQ(x->problem.buffers[1].upper, 3);
  EXPECT_EQ(x->problem.buffers[1].alignment, 16);
  EXPECT_TRUE(x->operators.empty());  // no operator spans: no column
  EXPECT_FALSE(extract_profile_step(p, 1).ok());
}

TEST(TorchProfile, AttributesToTheInnermostSpanOfTheSameThread) {
  const TorchProfile p = parse_profile_ok(trace({
      span("aten::conv2d", 0, 100), span("aten::convolution", 5, 90), span("aten::empty", 10, 5),
      span("aten::add", 0, 100, /*tid=*/2),  // another thread: never the operator of tid 1
      memory(12, 64, 0x100),                 // inside aten::empty
      memory(50, 32, 0x200),                 // inside aten::convolution, after aten::empty ended
      memory(150, -64, 0x100), memory(160, -32, 0x200), memory(170, 16, 0x300, /*tid=*/3),
      memory(171, -16, 0x300, 3),  // no span on thread 3
  }));
  StatusOr<ProfileExtraction> x = extract_profile_step(p, 0);
  ASSERT_TRUE(x.ok()) << x.status().message();
  ASSERT_EQ(x->problem.size(), 3u);
  EXPECT_EQ(x->operators, (std::vector<std::string>{"aten::empty", "aten::convolution", ""}));
}

TEST(TorchProfile, StepsSplitTheTraceAndLeaveOutWhatCrossesThem) {
  const TorchProfile p = parse_profile_ok(trace({
      R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":7,"tid":1,"ts":100,"dur":100,"args":{}})",
      R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":7,"tid":1,"ts":0,"dur":100,"args":{}})",
      memory(10, 64, 0x100), memory(20, -64, 0x100),  // step 0
      memory(30, 128, 0x200),                         // escapes step 0, freed in step 1
      memory(40, 8, 0x300), memory(50, -8, 0x300),    // step 0, below --min-size 16
      memory(110, -128, 0x200),                       // inherited by step 1
      memory(120, 32, 0x400), memory(130, -32, 0x400), memory(250, 1, 0x500),
      memory(260, -1, 0x500),  // after every step
  }));
  EXPECT_EQ(profile_step_numbers(p), (std::vector<int64_t>{0, 1}));
  // Kineto's copy of a step on the GPU timeline is not a second step 0.
  const TorchProfile with_gpu_copy = parse_profile_ok(
      trace({R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#0","pid":7,"tid":1,"ts":0,"dur":100})",
             R"({"ph":"X","cat":"gpu_user_annotation","name":"ProfilerStep#0","pid":0,"tid":7,"ts":3,"dur":90})",
             memory(10, 64, 0x100)}));
  ASSERT_EQ(with_gpu_copy.steps.size(), 1u);
  EXPECT_EQ(with_gpu_copy.steps[0].end_us, 100);
  StatusOr<ProfileExtraction> s0 = extract_profile_step(p, 0, /*min_size=*/16);
  ASSERT_TRUE(s0.ok()) << s0.status().message();
  EXPECT_EQ(s0->events, 5u);
  EXPECT_EQ(s0->problem.size(), 1u);
  EXPECT_EQ(s0->escaped, 1u);
  EXPECT_EQ(s0->escaped_bytes, 128u);
  EXPECT_EQ(s0->below_min_size, 1u);
  EXPECT_EQ(s0->below_min_size_bytes, 8u);
  StatusOr<ProfileExtraction> s1 = extract_profile_step(p, 1);
  ASSERT_TRUE(s1.ok()) << s1.status().message();
  EXPECT_EQ(s1->events, 3u);
  EXPECT_EQ(s1->inherited, 1u);
  ASSERT_EQ(s1->problem.size(), 1u);
  EXPECT_EQ(s1->problem.buffers[0].id, "1");  // ticks count from the step's first memory event
  const std::string missing = extract_profile_step(p, 2).status().message();
  EXPECT_NE(missing.find("no ProfilerStep#2"), std::string::npos) << missing;
}

TEST(TorchProfile, ErrorsNameTheEventAndTheField) {
  const std::string ok = memory(1, 8, 1);
  EXPECT_NE(parse_error("{\"traceEvents\":[").find("p.json: not valid JSON at byte"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\":1}").find("without \"traceEvents\""), std::string::npos);
  EXPECT_NE(parse_error(trace({span("x", 0, 1)})).find("no \"[memory]\" events"), std::string::npos);
  EXPECT_EQ(parse_error(trace({ok, R"({"name":"[memory]","ts":1,"args":{"Bytes":"8","Addr":1}})"})),
            "p.json: traceEvents[1]: field 'args.Bytes': missing or not an integer in int64");
  EXPECT_EQ(parse_error(trace({R"({"name":"[memory]","ts":1,"args":{"Bytes":8,"Addr":-1}})"})),
            "p.json: traceEvents[0]: field 'args.Addr': missing or not a non-negative integer");
  EXPECT_EQ(parse_error(trace({R"({"name":"[memory]","args":{"Bytes":8,"Addr":1}})"})),
            "p.json: traceEvents[0]: field 'ts': missing or not a finite number");
  EXPECT_EQ(parse_error(trace({ok, R"({"name":"[memory]","ts":1,"args":{"Bytes":0,"Addr":1}})"})),
            "p.json: traceEvents[1]: field 'args.Bytes': 0 (neither an allocation nor a free)");
  EXPECT_EQ(parse_error(trace({ok, "3"})), "p.json: traceEvents[1]: not an object");
  EXPECT_EQ(parse_error(trace({ok, R"({"ph":"X","name":"aten::mm","ts":1})"})),
            "p.json: traceEvents[1]: field 'dur': missing, negative or not a finite number");
  const std::string twice = parse_error(trace({ok, R"({"ph":"X","name":"ProfilerStep#3","ts":0,"dur":5})",
                                               R"({"ph":"X","name":"ProfilerStep#3","ts":9,"dur":5})"}));
  EXPECT_EQ(twice, "p.json: traceEvents[2]: field 'name': step 3 again (first at traceEvents[1])");
  EXPECT_NE(parse_error(trace({ok, R"({"ph":"X","name":"ProfilerStep#x","ts":0,"dur":5})"})).find("field 'name'"),
            std::string::npos);
}

TEST(TorchProfile, ReadsTheBareArrayLayoutAndTellsJsonFromTraces) {
  EXPECT_TRUE(parse_torch_profile("[" + memory(1, 8, 1) + "]").ok());
  EXPECT_TRUE(looks_like_json("\xEF\xBB\xBF \n {\"traceEvents\":[]}"));
  EXPECT_TRUE(looks_like_json("[]"));
  EXPECT_FALSE(looks_like_json("MEMPLAN"));
  EXPECT_FALSE(looks_like_json("  "));
}

TEST(TorchProfile, OperatorColumnIsWrittenUnquotedAndReadsBack) {
  Problem problem;
  problem.buffers = {{.id = "0", .lower = 0, .upper = 2, .size = 8}, {.id = "1", .lower = 1, .upper = 3, .size = 8}};
  const std::vector<std::string> operators = {"aten::cat, dim 0", ""};
  const std::string text = format_problem_csv(problem, operators);
  EXPECT_EQ(text, "id,lower,upper,size,operator\n0,0,2,8,aten::cat; dim 0\n1,1,3,8,\n");
  StatusOr<Problem> back = parse_problem_csv(text);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->size(), 2u);
}

// The shipped profile: resnet18 (random weights), 1x3x32x32 input, 3 steps
// marked with ProfilerStep spans, recorded with Debian's torch 1.13. Each step
// makes 108 allocations and frees them all in the step (1,651,148 bytes), and
// frees one block of the step before (its output): numbers counted from the
// JSON with Python independently of this reader.
TEST(TorchProfile, ResNet18ProfileGivesOneProblemPerStep) {
  StatusOr<TorchProfile> p =
      read_torch_profile(std::string(MEMPLAN_SOURCE_DIR) + "/tests/torch_profiler/data/resnet18_32px_3steps.json");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->events.size(), 654u);
  EXPECT_EQ(profile_step_numbers(*p), (std::vector<int64_t>{0, 1, 2}));
  for (const int64_t step : {0, 1, 2}) {
    StatusOr<ProfileExtraction> x = extract_profile_step(*p, step);
    ASSERT_TRUE(x.ok()) << x.status().message();
    EXPECT_EQ(x->events, 217u);
    EXPECT_EQ(x->problem.size(), 108u);
    int64_t bytes = 0;
    for (const Buffer& b : x->problem.buffers) bytes += b.size;
    EXPECT_EQ(bytes, 1651148);
    EXPECT_EQ(x->escaped, 0u);
    EXPECT_EQ(x->inherited, 1u);
    EXPECT_EQ(x->reused_live, 0u);
    ASSERT_EQ(x->operators.size(), 108u);
    size_t attributed = 0;
    std::map<std::string, size_t> per_operator;
    for (const std::string& op : x->operators) {
      attributed += op.rfind("aten::", 0) == 0 ? 1 : 0;
      ++per_operator[op];
    }
    EXPECT_EQ(attributed, 108u);
    // Innermost spans counted by a brute-force Python pass over the JSON.
    EXPECT_EQ(per_operator["aten::empty"], 81u);
    EXPECT_EQ(per_operator["aten::resize_"], 19u);
    EXPECT_EQ(per_operator["aten::mkldnn_convolution"], 2u);
    EXPECT_EQ(per_operator["aten::addmm"], 1u);
    EXPECT_GT(load(x->problem), 0);
  }
}

}  // namespace
}  // namespace memplan
