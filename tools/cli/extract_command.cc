// extract_command.cc — `memplan extract`: one iteration of a trace, or an
// ONNX model with its input shapes, as a problem CSV, with an account of
// what was left out of it.
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "progress.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/planner.h"
#include "memplan/validate.h"
#include "memplan/torch_profile.h"
#include "memplan/trace.h"
#include "memplan/units.h"
#include "text_table.h"
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
  bool json = false;                // ONNX with ranges or lists, or --predict: the table as JSON
  bool predict = false;             // ONNX: weights + inputs + planned activations per shape
  std::string capacity;             // --predict: the memory budget (bytes); empty: none
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

#if MEMPLAN_WITH_ONNX
// The most shapes one extract samples from --input ranges and lists.
constexpr size_t kMaxShapes = 256;

std::string shapes_text(const std::vector<OnnxInputShape>& shapes) {
  std::string s;
  for (const OnnxInputShape& shape : shapes) {
    s += (s.empty() ? "" : " ") + shape.name + "=";
    for (size_t i = 0; i < shape.dims.size(); ++i) s += (i ? "x" : "") + std::to_string(shape.dims[i]);
  }
  return s;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

// One shape of `--predict`: what a process holds to run the model at it.
struct PredictRow {
  std::string shape;
  int64_t weights = 0;      // initializers and folded constants
  int64_t inputs = 0;       // graph inputs
  int64_t activations = 0;  // the planned arena of the intermediate tensors and outputs
  int64_t load = 0;         // the activations' lower bound
  int64_t total() const { return weights + inputs + activations; }
};

// The prediction table: per shape, weights + inputs + planned activations,
// and with --capacity which shapes fit and the largest total that does.
void print_prediction(std::FILE* out, const ExtractArguments& args, const std::vector<PredictRow>& rows,
                      int64_t upper_bound_arena) {
  const int64_t capacity = args.capacity.empty() ? 0 : byte_size(args.capacity);
  const PredictRow* largest = nullptr;
  size_t fitting = 0;
  for (const PredictRow& r : rows) {
    if (capacity > 0 && r.total() <= capacity) {
      ++fitting;
      if (largest == nullptr || r.total() > largest->total()) largest = &r;
    }
  }
  if (args.json) {
    std::fprintf(out, "{\"model\": %s, \"planner\": %s, \"capacity\": %lld, \"shapes\": [",
                 json_string(args.trace_path).c_str(), json_string(std::string(kDefaultPlanner)).c_str(),
                 static_cast<long long>(capacity));
    for (size_t i = 0; i < rows.size(); ++i) {
      const PredictRow& r = rows[i];
      std::fprintf(out, "%s\n  {\"inputs\": %s, \"weights_bytes\": %lld, \"input_bytes\": %lld, "
                   "\"activation_bytes\": %lld, \"activation_load_bytes\": %lld, \"total_bytes\": %lld",
                   i ? "," : "", json_string(r.shape).c_str(), static_cast<long long>(r.weights),
                   static_cast<long long>(r.inputs), static_cast<long long>(r.activations),
                   static_cast<long long>(r.load), static_cast<long long>(r.total()));
      if (capacity > 0) std::fprintf(out, ", \"fits\": %s", r.total() <= capacity ? "true" : "false");
      std::fprintf(out, "}");
    }
    std::fprintf(out, "],\n \"upper_bound_activation_bytes\": %lld, \"largest_fitting\": %s}\n",
                 static_cast<long long>(upper_bound_arena),
                 largest == nullptr ? "null" : json_string(largest->shape).c_str());
    return;
  }
  std::vector<TextTable::Column> columns = {{.header = "inputs"},
                                            {.header = "weights", .numeric = true},
                                            {.header = "input bytes", .numeric = true},
                                            {.header = "activations", .numeric = true},
                                            {.header = "total", .numeric = true}};
  if (capacity > 0) columns.push_back({.header = "fits"});
  TextTable table(columns);
  for (const PredictRow& r : rows) {
    std::vector<std::string> cells = {r.shape, format_bytes(r.weights), format_bytes(r.inputs),
                                      format_bytes(r.activations), format_bytes(r.total())};
    if (capacity > 0) cells.emplace_back(r.total() <= capacity ? "yes" : "no");
    table.add_row(std::move(cells));
  }
  std::fprintf(out, "model        %s: %zu shape%s; activations planned by %s\n", args.trace_path.c_str(), rows.size(), rows.size() == 1 ? "" : "s",
               std::string(kDefaultPlanner).c_str());
  table.print(out);
  std::fprintf(out, "total        weights and constants + graph inputs + planned activations (intermediate tensors\n"
                    "             and outputs); one upper-bound plan serves every shape with %s of activations\n",
               format_bytes(upper_bound_arena).c_str());
  if (capacity > 0) {
    if (largest == nullptr) {
      std::fprintf(out, "capacity     %s: no shape fits\n", format_bytes(capacity).c_str());
    } else {
      std::fprintf(out, "capacity     %s: %zu of %zu shapes fit; the largest is %s (%s)\n",
                   format_bytes(capacity).c_str(), fitting, rows.size(), largest->shape.c_str(),
                   format_bytes(largest->total()).c_str());
    }
  }
  if (!args.output_path.empty()) {
    std::fprintf(out, "wrote        %s (the upper-bound problem)\n", args.output_path.c_str());
  }
}

// --input with ranges or lists: each shape extracted and planned, and one
// upper-bound plan for all of them (its problem is what --output gets).
void run_extract_onnx_grid(const ExtractArguments& args, const std::string& bytes, const OnnxOptions& base,
                           const std::vector<std::vector<OnnxInputShape>>& grid) {
  struct Row {
    std::string shape;
    size_t buffers = 0;
    int64_t load = 0;
    int64_t arena = 0;
    int64_t bound_arena = 0;  // the upper-bound plan's arena as this shape uses it
    int64_t weights = 0;      // initializers and folded constants (resident while the model is loaded)
    int64_t inputs = 0;       // graph inputs (fed by the caller)
    int64_t total() const { return weights + inputs + arena; }
  };
  std::vector<Row> rows;
  std::vector<Problem> problems;
  std::vector<std::string> operators;
  std::optional<ProgressLine> progress;
  progress.emplace("extracting and planning " + std::to_string(grid.size()) + " shapes of " + args.trace_path, 0);
  for (const std::vector<OnnxInputShape>& shapes : grid) {
    OnnxOptions options = base;
    options.inputs = shapes;
    StatusOr<OnnxExtraction> x = extract_onnx_model(
        {reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, args.trace_path, options);
    throw_if_error(x.status(), shapes_text(shapes));
    StatusOr<Plan> plan = plan_with(kDefaultPlanner, x->problem);
    throw_if_error(plan.status(), shapes_text(shapes));
    rows.push_back({.shape = shapes_text(shapes), .buffers = x->problem.size(), .load = load(x->problem),
                    .arena = plan->arena, .weights = x->initializer_bytes + x->constant_bytes,
                    .inputs = x->graph_input_bytes});
    if (operators.empty()) operators = x->operators;
    problems.push_back(std::move(x->problem));
  }
  StatusOr<Problem> bound = upper_bound_problem(problems);
  throw_if_error(bound.status(), args.trace_path);
  StatusOr<Plan> bound_plan = plan_with(kDefaultPlanner, *bound);
  throw_if_error(bound_plan.status(), "the upper-bound plan");
  progress.reset();
  // The upper-bound plan serves every shape with its offsets: checked, not assumed.
  for (size_t i = 0; i < problems.size(); ++i) {
    const Plan served{.offsets = bound_plan->offsets, .arena = arena_of(problems[i], bound_plan->offsets)};
    const ValidationResult v = validate(problems[i], served);
    if (!v.message.empty()) throw CommandError("the upper-bound plan does not serve " + rows[i].shape + ": " + v.message, kExitFailure);
    rows[i].bound_arena = bound_plan->arena;
  }
  if (!args.output_path.empty()) write_file_or_throw(args.output_path, format_problem_csv(*bound, operators));
  std::FILE* out = args.output_path == "-" ? stderr : stdout;
  if (args.predict) {
    std::vector<PredictRow> predicted;
    for (const Row& r : rows) {
      predicted.push_back({.shape = r.shape, .weights = r.weights, .inputs = r.inputs, .activations = r.arena,
                           .load = r.load});
    }
    print_prediction(out, args, predicted, bound_plan->arena);
    return;
  }
  if (args.json) {
    std::fprintf(out, "{\"model\": %s, \"planner\": %s, \"shapes\": [", json_string(args.trace_path).c_str(),
                 json_string(std::string(kDefaultPlanner)).c_str());
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::fprintf(out, "%s\n  {\"inputs\": %s, \"buffers\": %zu, \"load\": %lld, \"arena\": %lld, \"gap\": %.4f, "
                   "\"upper_bound_arena\": %lld, \"upper_bound_over_own\": %.4f}", i ? "," : "", json_string(r.shape).c_str(),
                   r.buffers, static_cast<long long>(r.load), static_cast<long long>(r.arena),
                   r.load > 0 ? static_cast<double>(r.arena) / static_cast<double>(r.load) - 1 : 0.0,
                   static_cast<long long>(r.bound_arena),
                   r.arena > 0 ? static_cast<double>(r.bound_arena) / static_cast<double>(r.arena) - 1 : 0.0);
    }
    std::fprintf(out, "],\n \"upper_bound\": {\"buffers\": %zu, \"load\": %lld, \"arena\": %lld, \"output\": %s}}\n",
                 bound->size(), static_cast<long long>(load(*bound)), static_cast<long long>(bound_plan->arena),
                 json_string(args.output_path).c_str());
    return;
  }
  TextTable table({{.header = "inputs"}, {.header = "buffers", .numeric = true}, {.header = "load", .numeric = true},
                   {.header = "arena", .numeric = true}, {.header = "gap", .numeric = true},
                   {.header = "upper-bound arena", .numeric = true}, {.header = "over own", .numeric = true}});
  char ratio[32];
  for (const Row& r : rows) {
    std::vector<std::string> cells = {r.shape, std::to_string(r.buffers), format_bytes(r.load), format_bytes(r.arena)};
    std::snprintf(ratio, sizeof ratio, "%.2f%%", r.load > 0 ? 100.0 * (static_cast<double>(r.arena) / static_cast<double>(r.load) - 1) : 0.0);
    cells.emplace_back(ratio);
    cells.push_back(format_bytes(r.bound_arena));
    std::snprintf(ratio, sizeof ratio, "%+.1f%%", r.arena > 0 ? 100.0 * (static_cast<double>(r.bound_arena) / static_cast<double>(r.arena) - 1) : 0.0);
    cells.emplace_back(ratio);
    table.add_row(std::move(cells));
  }
  std::fprintf(out, "model        %s: %zu shapes, each planned by %s\n", args.trace_path.c_str(), rows.size(),
               std::string(kDefaultPlanner).c_str());
  table.print(out);
  std::fprintf(out, "upper bound  one plan for every shape: %zu buffers at their largest, load %s, arena %s\n",
               bound->size(), format_bytes(load(*bound)).c_str(), format_bytes(bound_plan->arena).c_str());
  std::fprintf(out, "wrote        %s (the upper-bound problem)\n", args.output_path.c_str());
}
#endif

void run_extract_onnx(const ExtractArguments& args, const std::string& bytes) {
#if MEMPLAN_WITH_ONNX
  OnnxOptions options;
  options.alignment = power_of_two_byte_size(args.alignment.empty() ? "64" : args.alignment, "--alignment");
  options.fold_constants = !args.keep_constants;
  std::vector<OnnxInputChoices> choices;
  bool several = false;
  for (const std::string& text : args.inputs) {
    StatusOr<OnnxInputChoices> input = parse_onnx_input_choices(text);
    throw_if_error(input.status());
    OnnxInputShape shape{.name = input->name};
    for (const std::vector<int64_t>& d : input->dims) {
      several = several || d.size() > 1;
      shape.dims.push_back(d.front());
    }
    options.inputs.push_back(shape);
    choices.push_back(*input);
  }
  if (!args.min_size.empty()) throw CommandError("--min-size applies to traces, not to ONNX models", kExitFailure);
  if (several || args.predict) {
    StatusOr<std::vector<std::vector<OnnxInputShape>>> grid = onnx_input_grid(choices, kMaxShapes);
    throw_if_error(grid.status());
    return run_extract_onnx_grid(args, bytes, options, *grid);
  }
  if (args.json) {
    throw CommandError("--json applies to ONNX models with --input ranges or lists, or with --predict", kExitFailure);
  }
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
  const bool onnx = args.trace_path != "-" && is_onnx_model(args.trace_path);
  if (!onnx && args.predict) throw CommandError("--predict applies to ONNX models, not to traces", kExitFailure);
  if (!args.capacity.empty() && !args.predict) throw CommandError("--capacity applies with --predict", kExitFailure);
  if (args.output_path.empty() && !args.predict) {
    throw CommandError("--output is required (a problem CSV, or - for standard output)", kExitFailure);
  }
  if (!args.output_path.empty()) check_output_path_or_throw(args.output_path, "--output");
  if (onnx) return run_extract_onnx(args, read_input_or_throw(args.trace_path));
  if (!args.inputs.empty()) throw CommandError("--input applies to ONNX models, not to traces", kExitFailure);
  if (args.json) throw CommandError("--json applies to ONNX models with --input ranges or lists", kExitFailure);
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
                      "leaves open. A dimension may be a range (ids=4x1..512: its ends and the powers of two "
                      "between) or a list (ids=1,2,4,8x128): each shape is planned, and --output gets the "
                      "problem of one upper-bound plan that serves them all")
      ->type_name("NAME=DIMS");
  command->add_flag("--json", args->json,
                    "ONNX with --input ranges or lists, or --predict: the per-shape table as JSON");
  command->add_flag("--predict", args->predict,
                    "ONNX: memory before you run, per input shape (every shape of the --input ranges and lists): "
                    "weights and constants, graph inputs and planned activations, and their total; --output "
                    "is optional");
  command->add_option("--capacity", args->capacity,
                      "With --predict: the memory budget (e.g. 16GiB); says which shapes fit and the largest "
                      "that does")
      ->type_name("BYTES")
      ->check(byte_size_validator());
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
  command->add_option("-o,--output", args->output_path,
                      "Problem CSV to write; - for standard output (required, except with --predict)")
      ->type_name("PROBLEM.csv");
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
      "  memplan extract gpt.onnx --input ids=1,4x16..512 --output gpt-upper-bound.csv\n"
      "  memplan extract gpt.onnx --input ids=1,2,4,8x128..2048 --predict --capacity 16GiB\n"
      "  memplan extract prof.json --iteration 1 --output step.csv");
  command->callback([args] { run_extract(*args); });
}

}  // namespace memplan::cli
