// extract_command.cc — `memplan extract`: one iteration of a trace, or an
// ONNX model with its input shapes, as a problem CSV, with an account of
// what was left out of it.
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/file_kind.h"
#include "memplan/plan_file.h"
#include "memplan/torch_profile.h"
#include "memplan/trace.h"
#include "memplan/trace_plans.h"
#include "memplan/units.h"
#include "progress.h"
#include "text_table.h"
#if MEMPLAN_WITH_ONNX
#include "onnx_grid.h"
#endif

namespace memplan::cli {
namespace {

struct ExtractArguments {
  std::string trace_path;
  int64_t iteration = 1;
  std::string min_size;   // bytes; empty: every size
  std::string alignment;  // default: 16 for traces, 64 for models
  std::string output_path;
  std::vector<std::string> inputs;          // ONNX: NAME=DIMS
  bool keep_constants = false;              // ONNX: constants in the arena too
  bool json = false;                        // ONNX with ranges or lists, or --predict: the table as JSON
  bool predict = false;                     // ONNX: weights + inputs + planned activations per shape
  std::string capacity;                     // --predict: the memory budget (bytes); empty: none
  std::string save_plans;                   // traces: the drop-in's plan file of the traced run
  CLI::Option* iteration_option = nullptr;  // tells whether --iteration was given
};

#if MEMPLAN_WITH_ONNX
// The prediction as JSON: per shape, weights + inputs + planned activations,
// and with --capacity which shapes fit and the largest total that does.
nlohmann::ordered_json prediction_json(const ExtractArguments& args, const OnnxGridPrediction& p) {
  nlohmann::ordered_json shapes = nlohmann::ordered_json::array();
  for (const OnnxShapePrediction& r : p.shapes) {
    nlohmann::ordered_json row{{"inputs", r.label},
                               {"weights_bytes", r.weights_bytes},
                               {"input_bytes", r.input_bytes},
                               {"activation_bytes", r.activation_bytes},
                               {"activation_load_bytes", r.activation_load_bytes},
                               {"total_bytes", r.total_bytes()}};
    if (p.capacity > 0) row["fits"] = r.fits;
    shapes.push_back(std::move(row));
  }
  return {{"model", args.trace_path},
          {"planner", p.planner},
          {"capacity", p.capacity},
          {"shapes", std::move(shapes)},
          {"upper_bound_activation_bytes", p.upper_bound_activation_bytes},
          {"largest_fitting", p.largest_fitting ? nlohmann::ordered_json(p.shapes[*p.largest_fitting].label)
                                                : nlohmann::ordered_json(nullptr)}};
}

// The prediction table (--predict).
void print_prediction(std::FILE* out, const ExtractArguments& args, const OnnxGridPrediction& p) {
  std::vector<TextTable::Column> columns = {{.header = "inputs"},
                                            {.header = "weights", .numeric = true},
                                            {.header = "input bytes", .numeric = true},
                                            {.header = "activations", .numeric = true},
                                            {.header = "total", .numeric = true}};
  if (p.capacity > 0) columns.push_back({.header = "fits"});
  TextTable table(columns);
  for (const OnnxShapePrediction& r : p.shapes) {
    std::vector<std::string> cells = {r.label, format_bytes(r.weights_bytes), format_bytes(r.input_bytes),
                                      format_bytes(r.activation_bytes), format_bytes(r.total_bytes())};
    if (p.capacity > 0) cells.emplace_back(r.fits ? "yes" : "no");
    table.add_row(std::move(cells));
  }
  std::fprintf(out, "model        %s: %zu shape%s; activations planned by %s\n", args.trace_path.c_str(),
               p.shapes.size(), p.shapes.size() == 1 ? "" : "s", p.planner.c_str());
  table.print(out);
  std::fprintf(out,
               "total        weights and constants + graph inputs + planned activations (intermediate tensors\n"
               "             and outputs); one upper-bound plan serves every shape with %s of activations\n",
               format_bytes(p.upper_bound_activation_bytes).c_str());
  if (p.capacity > 0) {
    if (p.largest_fitting) {
      const OnnxShapePrediction& largest = p.shapes[*p.largest_fitting];
      std::fprintf(out, "capacity     %s: %zu of %zu shapes fit; the largest is %s (%s)\n",
                   format_bytes(p.capacity).c_str(), p.fitting, p.shapes.size(), largest.label.c_str(),
                   format_bytes(largest.total_bytes()).c_str());
    } else {
      std::fprintf(out, "capacity     %s: no shape fits\n", format_bytes(p.capacity).c_str());
    }
  }
  if (!args.output_path.empty()) {
    std::fprintf(out, "wrote        %s (the upper-bound problem)\n", args.output_path.c_str());
  }
}

// gap = arena / load - 1 (0 for an empty load), and the upper-bound arena over
// a shape's own arena - 1, as fractions.
double ratio_over(int64_t numerator, int64_t denominator) {
  return denominator > 0 ? static_cast<double>(numerator) / static_cast<double>(denominator) - 1 : 0.0;
}

// The grid as JSON: per shape its own plan and the upper-bound plan's arena.
nlohmann::ordered_json grid_json(const ExtractArguments& args, const OnnxGridPrediction& p) {
  // Four decimals, as the table's percentages show two.
  auto rounded = [](double x) { return std::round(x * 1e4) / 1e4; };
  nlohmann::ordered_json shapes = nlohmann::ordered_json::array();
  for (const OnnxShapePrediction& r : p.shapes) {
    shapes.push_back(
        {{"inputs", r.label},
         {"buffers", r.buffers},
         {"load", r.activation_load_bytes},
         {"arena", r.activation_bytes},
         {"gap", rounded(ratio_over(r.activation_bytes, r.activation_load_bytes))},
         {"upper_bound_arena", p.upper_bound_activation_bytes},
         {"upper_bound_over_own", rounded(ratio_over(p.upper_bound_activation_bytes, r.activation_bytes))}});
  }
  return {{"model", args.trace_path},
          {"planner", p.planner},
          {"shapes", std::move(shapes)},
          {"upper_bound",
           {{"buffers", p.upper_bound.size()},
            {"load", p.upper_bound_load_bytes},
            {"arena", p.upper_bound_activation_bytes},
            {"output", args.output_path}}}};
}

// The grid as a table: per shape its own plan and what the upper-bound plan costs it.
void print_grid(std::FILE* out, const ExtractArguments& args, const OnnxGridPrediction& p) {
  TextTable table({{.header = "inputs"},
                   {.header = "buffers", .numeric = true},
                   {.header = "load", .numeric = true},
                   {.header = "arena", .numeric = true},
                   {.header = "gap", .numeric = true},
                   {.header = "upper-bound arena", .numeric = true},
                   {.header = "over own", .numeric = true}});
  char ratio[32];
  for (const OnnxShapePrediction& r : p.shapes) {
    std::vector<std::string> cells = {r.label, std::to_string(r.buffers), format_bytes(r.activation_load_bytes),
                                      format_bytes(r.activation_bytes)};
    std::snprintf(ratio, sizeof ratio, "%.2f%%", 100.0 * ratio_over(r.activation_bytes, r.activation_load_bytes));
    cells.emplace_back(ratio);
    cells.push_back(format_bytes(p.upper_bound_activation_bytes));
    std::snprintf(ratio, sizeof ratio, "%+.1f%%",
                  100.0 * ratio_over(p.upper_bound_activation_bytes, r.activation_bytes));
    cells.emplace_back(ratio);
    table.add_row(std::move(cells));
  }
  std::fprintf(out, "model        %s: %zu shapes, each planned by %s\n", args.trace_path.c_str(), p.shapes.size(),
               p.planner.c_str());
  table.print(out);
  std::fprintf(out, "upper bound  one plan for every shape: %zu buffers at their largest, load %s, arena %s\n",
               p.upper_bound.size(), format_bytes(p.upper_bound_load_bytes).c_str(),
               format_bytes(p.upper_bound_activation_bytes).c_str());
  std::fprintf(out, "wrote        %s (the upper-bound problem)\n", args.output_path.c_str());
}

// --input with ranges or lists, or --predict: the library's prediction over
// the grid, printed; --output gets the upper-bound problem. With --capacity
// and no shape that fits, exit 2, as `memplan plan --capacity` does.
void run_extract_onnx_grid(const ExtractArguments& args, const std::string& bytes, OnnxGridOptions options) {
  options.capacity = args.capacity.empty() ? 0 : byte_size(args.capacity);
  std::optional<ProgressLine> progress;
  progress.emplace("extracting and planning the shapes of " + args.trace_path, 0);
  StatusOr<OnnxGridPrediction> prediction =
      predict_onnx_grid({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, args.trace_path, options);
  progress.reset();
  throw_if_error(prediction.status());
  const OnnxGridPrediction& p = *prediction;
  if (!args.output_path.empty()) write_file_or_throw(args.output_path, format_problem_csv(p.upper_bound, p.operators));
  std::FILE* out = args.output_path == "-" ? stderr : stdout;
  if (args.json) {
    const nlohmann::ordered_json doc = args.predict ? prediction_json(args, p) : grid_json(args, p);
    std::fprintf(out, "%s\n", doc.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace).c_str());
  } else if (args.predict) {
    print_prediction(out, args, p);
  } else {
    print_grid(out, args, p);
  }
  if (args.predict && p.none_fits()) {
    throw CommandError("--capacity " + format_bytes(p.capacity) + ": no shape fits", kExitDoesNotFit);
  }
}
#endif

void run_extract_onnx(const ExtractArguments& args, const std::string& bytes) {
#if MEMPLAN_WITH_ONNX
  OnnxGridOptions grid;
  grid.alignment = power_of_two_byte_size(args.alignment.empty() ? "64" : args.alignment, "--alignment");
  grid.fold_constants = !args.keep_constants;
  OnnxOptions options{.alignment = grid.alignment, .fold_constants = grid.fold_constants};
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
    grid.inputs.push_back(*input);
  }
  if (!args.min_size.empty()) throw CommandError("--min-size applies to traces, not to ONNX models", kExitUsage);
  if (several || args.predict) return run_extract_onnx_grid(args, bytes, std::move(grid));
  if (args.json) {
    throw CommandError("--json applies to ONNX models with --input ranges or lists, or with --predict", kExitUsage);
  }
  StatusOr<OnnxExtraction> extraction =
      extract_onnx_model({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, args.trace_path, options);
  throw_if_error(extraction.status());
  const OnnxExtraction& x = *extraction;
  write_file_or_throw(args.output_path, format_problem_csv(x.problem, x.operators));
  std::FILE* report = args.output_path == "-" ? stderr : stdout;
  int64_t total = 0;
  for (const Buffer& b : x.problem.buffers) total += b.size;
  std::fprintf(report, "model        %s: ONNX IR %lld, opset %lld%s%s, %zu nodes (ticks 0..%zu)\n",
               args.trace_path.c_str(), static_cast<long long>(x.ir_version), static_cast<long long>(x.opset),
               x.producer.empty() ? "" : ", from ", x.producer.c_str(), x.nodes, x.nodes - 1);
  std::fprintf(report, "buffers      %zu intermediate tensors, %s in all, load %s\n", x.problem.size(),
               format_bytes(total).c_str(), format_bytes(load(x.problem)).c_str());
  std::fprintf(report, "left out     %zu initializers (%s), %zu graph inputs (%s), %zu constants (%s)\n",
               x.initializers, format_bytes(x.initializer_bytes).c_str(), x.graph_inputs,
               format_bytes(x.graph_input_bytes).c_str(), x.constants, format_bytes(x.constant_bytes).c_str());
  std::fprintf(report, "shapes       %zu values of shape computations evaluated, %zu shape inference rounds\n",
               x.evaluated, x.inference_rounds);
  if (x.unread > 0)
    std::fprintf(report, "unread       %zu node outputs no node reads (each lives one tick)\n", x.unread);
  std::fprintf(report, "wrote        %s\n", args.output_path.c_str());
#else
  throw CommandError(args.trace_path +
                         ": an ONNX model, and this memplan was built without the ONNX front end "
                         "(install libonnx-dev and configure with -DMEMPLAN_WITH_ONNX=ON)",
                     kExitFailure);
#endif
}

// A PyTorch profiler chrome trace (memplan/torch_profile.h): one step as a
// problem with an operator column. `input`: the file's text when it came
// from standard input, else null (the reader reads the file).
void run_extract_profile(const ExtractArguments& args, const ExtractOptions& options, const std::string* input) {
  StatusOr<TorchProfile> profile =
      input != nullptr ? parse_torch_profile(*input, args.trace_path) : read_torch_profile(args.trace_path);
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

// Standard input ("-") is read whole, once, and sniffed as a file's first
// bytes are; the reader of its kind then parses those bytes.
void run_extract(const ExtractArguments& given) {
  std::optional<std::string> input;  // the bytes of standard input
  if (given.trace_path == "-") input = read_input_or_throw(given.trace_path);
  const FileKind kind = sniff_file_kind(given.trace_path, input ? *input : read_file_head(given.trace_path));
  ExtractArguments args = given;
  args.trace_path = source_name(given.trace_path);  // messages and reports name "<stdin>"
  const bool onnx = kind == FileKind::kOnnxModel;
  if (!onnx && args.predict) throw CommandError("--predict applies to ONNX models, not to traces", kExitUsage);
  if (!args.capacity.empty() && !args.predict) throw CommandError("--capacity applies with --predict", kExitUsage);
  if (!args.save_plans.empty() && (onnx || kind == FileKind::kTorchProfile)) {
    throw CommandError("--save-plans applies to traces (memplan trace), not to ONNX models or profiles", kExitUsage);
  }
  if (args.output_path.empty() && !args.predict && args.save_plans.empty()) {
    throw CommandError("--output is required (a problem CSV, or - for standard output)", kExitUsage);
  }
  if (!args.output_path.empty()) check_output_path_or_throw(args.output_path, "--output");
  if (onnx) return run_extract_onnx(args, input ? *input : read_input_or_throw(given.trace_path));
  if (!args.inputs.empty()) throw CommandError("--input applies to ONNX models, not to traces", kExitUsage);
  if (args.json) throw CommandError("--json applies to ONNX models with --input ranges or lists", kExitUsage);
  ExtractOptions options;
  if (!args.min_size.empty()) options.min_size = static_cast<uint64_t>(byte_size(args.min_size));
  options.alignment = power_of_two_byte_size(args.alignment.empty() ? "16" : args.alignment, "--alignment");
  if (kind == FileKind::kTorchProfile) return run_extract_profile(args, options, input ? &*input : nullptr);
  const Trace trace = input ? parse_trace_or_throw(*input, args.trace_path) : read_trace_or_throw(args.trace_path);
  if (!args.save_plans.empty()) {
    check_output_path_or_throw(args.save_plans, "--save-plans");
    StatusOr<PlanFile> plans = plans_from_trace(trace);
    throw_if_error(plans.status(), args.trace_path);
    throw_if_error(save_plan_file(*plans, args.save_plans));
    std::fprintf(stderr, "saved plans to %s (%s; the drop-in's, for any program)\n", args.save_plans.c_str(),
                 plan_file_summary(*plans).c_str());
    if (args.output_path.empty()) return;
  }
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
  std::fprintf(report,
               "left out     %zu escaping the iteration (%s), %zu allocated before it, %zu below --min-size (%s)\n",
               x.escaped, format_bytes(static_cast<int64_t>(x.escaped_bytes)).c_str(), x.inherited, x.below_min_size,
               format_bytes(static_cast<int64_t>(x.below_min_size_bytes)).c_str());
  if (x.failed > 0 || x.reused_live > 0) {
    std::fprintf(report,
                 "anomalies    %zu allocation calls returned null, %zu pointers were allocated while still live\n",
                 x.failed, x.reused_live);
  }
  std::fprintf(report, "wrote        %s\n", args.output_path.c_str());
}

}  // namespace

void register_extract_command(CLI::App& app) {
  auto args = std::make_shared<ExtractArguments>();
  CLI::App* command = app.add_subcommand(
      "extract", "Write one iteration of a trace or PyTorch profile, or an ONNX model, as a problem CSV");
  command
      ->add_option("trace", args->trace_path,
                   "Trace file (from memplan trace), a PyTorch profiler chrome trace (JSON), or an ONNX model "
                   "(.onnx); - reads standard input, told apart by its first bytes")
      ->required()
      ->type_name("FILE");
  command
      ->add_option("--input", args->inputs,
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
  command
      ->add_option("--capacity", args->capacity,
                   "With --predict: the memory budget (e.g. 16GiB); says which shapes fit and the largest "
                   "that does; exit status 2 when none does, as `memplan plan --capacity`")
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
  command
      ->add_option("-a,--alignment", args->alignment,
                   "Alignment every buffer gets at least (default 16: malloc's, aligned calls keep theirs; ONNX "
                   "models: 64)")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command
      ->add_option("-o,--output", args->output_path,
                   "Problem CSV to write; - for standard output (required, except with --predict)")
      ->type_name("PROBLEM.csv");
  command
      ->add_option("--save-plans", args->save_plans,
                   "Traces: write the plans the drop-in would have learnt of the traced run's first allocating "
                   "thread, for `memplan run --plans` (then --output is optional)")
      ->type_name("FILE");
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
      "  memplan extract prof.json --iteration 1 --output step.csv\n"
      "  memplan extract run.trace --save-plans run.plans && memplan run --plans run.plans -- ./train");
  command->callback([args] { run_extract(*args); });
}

}  // namespace memplan::cli
