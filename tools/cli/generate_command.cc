// generate_command.cc — `memplan generate`: a seeded random problem as CSV.
#include <cstdio>
#include <memory>

#include "commands.h"
#include "exit_codes.h"
#include "inputs.h"
#include "memplan/bounds.h"
#include "memplan/csv.h"
#include "memplan/generate.h"

namespace memplan::cli {
namespace {

struct GenerateArguments {
  std::string shape = "dnn";
  size_t buffers = 0;
  uint64_t seed = 1;
  std::string max_size;       // bytes; empty: the generator's default
  std::string max_alignment;  // bytes; empty: no alignment
  std::string output_path;    // empty or "-": stdout
};

void run_generate(const GenerateArguments& args) {
  check_output_path_or_throw(args.output_path, "--output");
  GenerateOptions options;
  if (!parse_problem_shape(args.shape, &options.shape)) {
    throw CommandError("unknown shape '" + args.shape + "' (dnn, random, heavy, nested, equal, puzzle)", kExitFailure);
  }
  options.buffers = args.buffers;
  options.seed = args.seed;
  if (!args.max_size.empty()) {
    options.max_size = byte_size(args.max_size);
    if (options.max_size <= 0) throw CommandError("--max-size must be at least 1 byte", kExitFailure);
  }
  if (!args.max_alignment.empty())
    options.max_alignment = power_of_two_byte_size(args.max_alignment, "--max-alignment");

  const Problem problem = generate_problem(options);
  throw_if_error(check_problem(problem), "internal error: the generator made an invalid problem");
  const std::string csv = format_problem_csv(problem);
  if (args.output_path.empty() || args.output_path == "-") {
    std::fwrite(csv.data(), 1, csv.size(), stdout);
    return;
  }
  write_file_or_throw(args.output_path, csv);
  std::printf("wrote %s: %zu buffers, shape %s, seed %llu, load %s\n", args.output_path.c_str(), problem.size(),
              std::string(problem_shape_name(options.shape)).c_str(), static_cast<unsigned long long>(args.seed),
              bytes_with_units(load(problem)).c_str());
}

}  // namespace

void register_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArguments>();
  CLI::App* command = app.add_subcommand("generate", "Write a seeded random problem (same seed, same file)");
  command
      ->add_option("-s,--shape", args->shape,
                   "dnn: layer chain with skip connections and workspaces; random: uniform lifetimes and "
                   "sizes; heavy: heavy-tailed sizes; nested: stack-like lifetimes; equal: one size; puzzle: a "
                   "rectangle of --max-size bytes cut into pieces, a few dropped (fits in --max-size)")
      ->type_name("SHAPE")
      ->check(CLI::IsMember({"dnn", "random", "heavy", "nested", "equal", "puzzle"}))
      ->capture_default_str();
  command->add_option("-n,--buffers", args->buffers, "Number of buffers")
      ->required()
      ->type_name("N")
      ->check(CLI::Range(size_t{1}, size_t{100'000'000}));
  command->add_option("--seed", args->seed, "Seed of the generator")->type_name("S")->capture_default_str();
  command->add_option("--max-size", args->max_size, "Largest buffer size before the shape's scaling (default 1MiB)")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command
      ->add_option("--max-alignment", args->max_alignment,
                   "Give buffers random power-of-two alignments up to this (default: none)")
      ->type_name("BYTES")
      ->check(byte_size_validator());
  command->add_option("-o,--output", args->output_path, "Problem CSV to write (default: stdout)")
      ->type_name("PROBLEM.csv");
  command->footer(
      "The output is the problem CSV format (id,lower,upper,size[,alignment]) that every\n"
      "other command reads. Generation is deterministic for a given shape, count and seed on\n"
      "every platform.\n"
      "\n"
      "Examples:\n"
      "  memplan generate --shape dnn --buffers 500 --seed 7 --output dnn500.csv\n"
      "  memplan generate --shape heavy --buffers 10000 --max-alignment 256 > heavy.csv");
  command->callback([args] { run_generate(*args); });
}

}  // namespace memplan::cli
