// extract_command.cc — `memplan extract`: one iteration of a trace, or an
// ONNX model with its input shapes, as a problem CSV, with an account of
// what was left out of it.
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/torch_profile.h"
#include "memplan/trace.h"
#include "memplan/units.h"
#if MEMPLAN_WITH_ONNX
#include "onnx_frontend.h"
#endif

namespace memplan::cli {
namespace {

struct ExtractArguments {
  std::string trace_path;
  int64_t iteration = 1;
  std::string min_size;   // bytes; empty: every size
  std::string alignment;  // default: 16 for traces, 64 for models
  std::string output_path;
  std::vector<std::string> inputs;  // ONNX: NAME=DIMS
  bool keep_constants = false;      // ONNX: constants in the arena too
  CLI::Option* iteration_option = nullptr;  // tells whether --iteration was given
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A model, not a trace: named *.onnx, or starting as a ModelProto does
// (field 1, ir_version, a small varint; a trace starts with its block magic,
// which no ModelProto does). Reads two bytes, not the whole trace.
bool is_onnx_model(const std::string& path) {
  if (ends_with(path, ".onnx") || ends_with(path, ".ONNX")) return true;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;  // the trace reader says why
  unsigned char p[2] = {0, 0};
  const size_t n = std::fread(p, 1, 2, f);
  std::fclose(f);
  // The same test as memplan::looks_like_onnx_model, which is built only with ONNX.
  return n == 2 && p[0] == 0x08 && p[1] >= 1 && p[1] < 0x80;
}

void run_extract_onnx(const ExtractArguments& args, const std::string& bytes) {
#if MEMPLAN_WITH_ONNX
  OnnxOptions options;
  options.alignment = power_of_two_byte_size(args.alignment.empty() ? "64" : args.alignment, "--alignment");
  options.fold_constants = !args.keep_constants;
  for (const std::string& text : args.inputs) {
    StatusOr<OnnxInputShape> shape = parse_onnx_input_shape(text);
    throw_if_error(shape.status());
    options.inputs.push_back(*shape);
  }
  if (!args.min_size.empty()) throw CommandError("--min-size applies to traces, not to ONNX models", kExitFailure);
  StatusOr<OnnxExtraction> extraction = extract_onnx_model(
      {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, args.trace_path, options);
  throw_if_error(extraction.status());
  const OnnxExtraction& x = *extraction;
  write_file_or_throw(args.output_path, format_problem_csv(x.problem, x.operators));
  std::FILE* report = args.output_path == "-" ? stderr : stdout;
  int64_t total = 0;
  for (const Buffer& b : x.problem.buffers) total += b.size;
  std::fprintf(report, "model        %s: ONNX IR %lld, opset %lld%s%s, %zu nodes (ticks 0..%zu)\n", args.trace_path.c_str(),
               static_cast<long long>(x.ir_version), static_cast<long long>(x.opset), x.producer.empty() ? "" : ", from ",
               x.producer.c_str(), x.nodes, x.nodes - 1);
  std::fprintf(report, "buffers      %zu intermediate tensors, %s in all, load %s\n", x.problem.size(),
               format_bytes(total).c_str(), format_bytes(load(x.problem)).c_str());
  std::fprintf(report, "left out     %zu initializers (%s), %zu graph inputs (%s), %zu constants (%s)\n",
               x.initializers, format_bytes(x.initializer_bytes).c_str(), x.graph_inputs,
               format_bytes(x.graph_input_bytes).c_str(), x.constants, format_bytes(x.constant_bytes).c_str());
  std::fprintf(report, "shapes       %zu values of shape computations evaluated, %zu shape inference rounds\n",
               x.evaluated, x.inference_rounds);
  if (x.unread > 0) std::fprintf(report, "unread       %zu node outputs no node reads (each lives one tick)\n", x.unread);
  std::fprintf(report, "wrote        %s\n", args.output_path.c_str());
#else
  throw CommandError(args.trace_path + ": an ONNX model, and this memplan was built without the ONNX front end "
                     "(install libonnx-dev and configure with -DMEMPLAN_WITH_ONNX=ON)", kExitFailure);
#endif
}

// The first bytes of a file, to tell a JSON profile from a memplan trace.
std::string file_head(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

// A PyTorch profiler chrome trace (memplan/torch_profile.h): one step as a
// problem with an operator column.
void run_extract_profile(const ExtractArguments& args, const ExtractOptions& options) {
  StatusOr<TorchProfile> profile = read_torch_profile(args.trace_path);
  throw_if_error(profile.status());  // its messages name the file
  const std::vector<int64_t> steps = profile_step_numbers(*profile);
  const int64_t step = args.iteration_option->count() > 0 ? args.iteration : steps.front();
  StatusOr<ProfileExtraction> extraction = extract_profile_step(*profile, step, options.min_size, options.alignment);
  throw_if_error(extraction.status(), args.trace_path);
  const ProfileExtraction& x = *extraction;
  write_file_or_throw(args.output_path, format_problem_csv(x.problem, x.operators));

  std::FILE* report = args.output_path == "-" ? stderr : stdout;
  int64_t total = 0;
  for (const Buffer& b : x.problem.buffers) total += b.size;
  size_t attributed = 0;
  for (const std::string& name : x.operators) attributed += name.empty() ? 0 : 1;
  if (x.whole_trace) {
    std::fprintf(report, "profile      %s: no ProfilerStep spans, the whole trace: %zu memory events (ticks 0..%zu)\n",
                 args.trace_path.c_str(), x.events, x.events == 0 ? 0 : x.events - 1);
  } else {
    std::fprintf(report, "step         ProfilerStep#%lld of %s (%zu steps): %zu memory events (ticks 0..%zu)\n",
                 static_cast<long long>(step), args.trace_path.c_str(), steps.size(), x.events,
                 x.events == 0 ? 0 : x.events - 1);
  }
  std::fprintf(report, "buffers      %zu, %s in all, load %s; %zu with an operator\n", x.problem.size(),
               format_bytes(total).c_str(), format_bytes(load(x.problem)).c_str(), attributed);
  std::fprintf(report, "left out     %zu escaping the step (%s), %zu allocated before it, %zu below --min-size (%s)\n",
               x.escaped, format_bytes(static_cast<int64_t>(x.escaped_bytes)).c_str(), x.inherited, x.below_min_size,
               format_bytes(static_cast<int64_t>(x.below_min_size_bytes)).c_str());
  if (x.reused_live > 0) {
    std::fprintf(report, "anomalies    %zu addresses were allocated while still live\n", x.reused_live);
  }
  std::fprintf(report, "wrote        %s\n", args.output_path.c_str());
}

void run_extract(const ExtractArguments& args) {
  check_output_path_or_throw(args.output_path, "--output");
  if (args.trace_path != "-" && is_onnx_model(args.trace_path)) {
    return run_extract_onnx(args, read_input_or_throw(args.trace_path));
  }
  if (!args.inputs.empty()) throw CommandError("--input applies to ONNX models, not to traces", kExitFailure);
  ExtractOptions options;
  if (!args.min_size.empty()) options.min_size = static_cast<uint64_t>(byte_size(args.min_size));
  options.alignment = power_of_two_byte_size(args.alignment.empty() ? "16" : args.alignment, "--alignment");
  if (args.trace_path != "-" && looks_like_json(file_head(args.trace_path))) {
    run_extract_profile(args, options);
    return;
  }
  const Trace trace = read_trace_or_throw(args.trace_path);
  StatusOr<Extraction> extraction = extract_iteration(trace, args.iteration, options);
  throw_if_error(extraction.status(), args.trace_path);
  const Extraction& x = *extraction;
  write_file_or_throw(args.output_path, format_problem_csv(x.problem));

  // With --output - the problem goes to stdout and this report to stderr.
  std::FILE* report = args.output_path == "-" ? stderr : stdout;
  int64_t total = 0;
  for (const Buffer& b : x.problem.buffers) total += b.size;
  std::fprintf(report, "iteration    %lld of %s: %zu events (ticks 0..%zu)\n", static_cast<long long>(args.iteration),
              args.trace_path.c_str(), x.events, x.events == 0 ? 0 : x.events - 1);
  std::fprintf(report, "buffers      %zu, %s in all, load %s\n", x.problem.size(), format_bytes(total).c_str(),
              format_bytes(load(x.problem)).c_str());
  std::fprintf(report, "left out     %zu escaping the iteration (%s), %zu allocated before it, %zu below --min-size (%s)\n",
              x.escaped, format_bytes(static_cast<int64_t>(x.escaped_bytes)).c_str(), x.inherited, x.below_min_size,
              format_bytes(static_cast<int64_t>(x.below_min_size_bytes)).c_str());
  if (x.failed > 0 || x.reused_live > 0) {
    std::fprintf(report, "anomalies    %zu allocation calls returned null, %zu pointers were allocated while still live\n",
                x.failed, x.reused_live);
  }
  std::fprintf(report, "wrote        %s\n", args.output_path.c_str());
}

}  // namespace

void register_extract_command(CLI::App& app) {
  auto args = std::make_shared<ExtractArguments>();
  CLI::App* command = app.add_subcommand(
      "extract", "Write one iteration of a trace or PyTorch profile, or an ONNX model, as a problem CSV");
  command->add_option("trace", args->trace_path,
                      "Trace file (from memplan trace), a PyTorch profiler chrome trace (JSON), or an ONNX model (.onnx)")
      ->required()
      ->type_name("FILE");
  command->add_option("--input", args->inputs,
                      "ONNX: the shape of a graph input, NAME=1x3x224x224; repeat for each input the model "
                      "leaves open")
      ->type_name("NAME=DIMS");
  command->add_flag("--keep-constants", args->keep_constants,
                    "ONNX: plan constants (outputs of nodes that read only initializers) in the arena too");
  args->iteration_option =
      command
          ->add_option("-i,--iteration", args->iteration,
                       "The iteration: N is the span from the N-th mark to the next; 0 is the span before the first "
                       "mark (default: 1). For a PyTorch profile: step N (ProfilerStep#N; default: the first step)")
          ->type_name("N");
  command->add_option("--min-size", args->min_size, "Leave out buffers smaller than this (default: keep all)")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command->add_option("-a,--alignment", args->alignment,
                      "Alignment every buffer gets at least (default 16: malloc's, aligned calls keep theirs; ONNX "
                      "models: 64)")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command->add_option("-o,--output", args->output_path, "Problem CSV to write; - for standard output")->required()->type_name("PROBLEM.csv");
  command->footer(
      "Lifetimes are in event ticks: the k-th event after the iteration's mark is tick k; a buffer\n"
      "allocated at tick a and freed at tick f lives [a, f); a realloc at tick r keeps the old buffer\n"
      "until r + 1, so old and new overlap for the copy. Buffers allocated before the iteration or\n"
      "freed after it are left out (and counted): they belong to the ordinary allocator.\n"
      "\n"
      "An ONNX model (named *.onnx, or recognised by its first bytes) is planned before it runs:\n"
      "node k is tick k; each tensor a node writes is one buffer, product(shape) x element size\n"
      "from ONNX shape inference, live from its node to its last reader, [p, last + 1); graph\n"
      "outputs live to the end; initializers, graph inputs and constants (outputs of nodes that\n"
      "read only initializers) stay outside the arena.\n"
      "A JSON file is read as a PyTorch profiler chrome trace (torch.profiler.profile(profile_memory=True),\n"
      "prof.export_chrome_trace): step N is ProfilerStep#N, its [memory] events are the ticks, and the\n"
      "CSV gets an `operator` column (the innermost operator around each allocation; docs/formats.md).\n"
      "\n"
      "Example:\n"
      "  memplan extract run.trace --iteration 2 --min-size 4K --output step.csv\n"
      "  memplan plan step.csv\n"
      "  memplan extract resnet18.onnx --input input=1x3x224x224 --output resnet18.csv\n"
      "  memplan extract prof.json --iteration 1 --output step.csv");
  command->callback([args] { run_extract(*args); });
}

}  // namespace memplan::cli
