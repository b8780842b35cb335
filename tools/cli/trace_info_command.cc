// trace_info_command.cc — `memplan trace-info`: what a trace holds, iteration
// by iteration: events, allocations, bytes, peaks, threads, a size histogram,
// and whether iterations repeat (the same sequence of allocation sizes); for
// a trace with operator records, the operators that allocated most.
#include <array>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "inputs.h"
#include "memplan/trace.h"
#include "memplan/units.h"
#include "text_table.h"

namespace memplan::cli {
namespace {

// Size classes of the histogram as printed: powers of four (the library counts
// powers of two; two of its buckets make one class here, so rows stay short).
// Class 0 holds sizes <= 16, class c sizes in (16 * 4^(c-1), 16 * 4^c], the
// last everything above 64 MiB.
constexpr int kClasses = 13;
constexpr const char* kClassLabels[kClasses] = {"<=16",   "<=64", "<=256", "<=1K",  "<=4K",  "<=16K", "<=64K",
                                                "<=256K", "<=1M", "<=4M",  "<=16M", "<=64M", ">64M"};

int class_of_bucket(size_t k) {  // bucket k holds sizes in (2^(k-1), 2^k]
  if (k <= 4) return 0;
  const int c = static_cast<int>((k - 3) / 2);
  return c < kClasses - 1 ? c : kClasses - 1;
}

std::string yes_no(bool b) { return b ? "yes" : "no"; }

// The operators that allocated most bytes in the marked iterations (1 up to
// the last closed one: the steady state, without start-up and teardown), or
// in the whole trace when it has no closed iteration.
void print_top_operators(const Trace& trace, const std::vector<size_t>& marks, size_t top) {
  if (trace.operators.empty() || top == 0) return;
  size_t begin = 0, end = trace.events.size();
  std::string span = "the whole trace";
  if (marks.size() >= 2) {
    begin = marks.front();
    end = marks.back();
    span = "iterations 1.." + std::to_string(marks.size() - 1);
  }
  const std::vector<OperatorSummary> rows = summarize_operators(trace, begin, end);
  uint64_t total = 0;
  for (const OperatorSummary& r : rows) total += r.bytes;
  std::printf("\ntop operators by bytes allocated, %s (%zu operator ids in the trace)\n", span.c_str(),
              trace.operators.size());
  TextTable table({{"operator", false}, {"allocs", true}, {"allocated", true}, {"share", true}});
  for (size_t i = 0; i < rows.size() && i < top; ++i) {
    const OperatorSummary& r = rows[i];
    std::string name = "(outside any operator)";
    if (r.op != kNoOperator) name = trace.operators[r.op].empty() ? "#" + std::to_string(r.op) : trace.operators[r.op];
    char share[32];
    std::snprintf(share, sizeof share, "%.1f%%",
                  total == 0 ? 0.0 : 100.0 * static_cast<double>(r.bytes) / static_cast<double>(total));
    table.add_row({name, std::to_string(r.allocations), format_bytes(static_cast<int64_t>(r.bytes)), share});
  }
  table.print(stdout);
}

void print_trace_json(const std::string& path, const Trace& trace) {
  using Json = nlohmann::ordered_json;
  const std::vector<size_t> marks = trace.mark_indices();
  Json doc;
  doc["trace"] = path;
  doc["pid"] = trace.pid;
  doc["complete"] = trace.complete;
  doc["events"] = trace.events.size() - marks.size();
  doc["threads"] = trace.threads.size();
  doc["marks"] = marks.size();
  doc["file_bytes"] = trace.file_bytes;
  doc["missed_events"] = trace.missed_events;
  doc["dropped_marks"] = trace.dropped_marks;
  Json iterations = Json::array();
  for (const IterationSummary& s : summarize_iterations(trace)) {
    iterations.push_back({{"iteration", s.iteration},
                          {"closed", s.closed},
                          {"events", s.events},
                          {"allocations", s.allocations},
                          {"frees", s.frees},
                          {"allocated_bytes", s.allocated_bytes},
                          {"peak_live_bytes", s.peak_live_bytes},
                          {"peak_own_bytes", s.peak_iteration_bytes},
                          {"threads", s.threads},
                          {"repeats_previous", s.repeats_previous}});
  }
  doc["iterations"] = std::move(iterations);
  std::puts(doc.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
}

void run_trace_info(const std::string& path, size_t top_operators, bool json) {
  const Trace trace = read_trace_or_throw(path);
  if (json) {
    print_trace_json(path, trace);
    return;
  }
  const std::vector<size_t> marks = trace.mark_indices();
  const size_t events = trace.events.size() - marks.size();
  std::printf("trace        %s\n", path.c_str());
  std::printf("process      pid %lld, %s\n", static_cast<long long>(trace.pid),
              trace.complete ? "complete (the tracer wrote its end block at exit)"
                             : "INCOMPLETE: the process ended without exit handlers; events not yet written are lost");
  std::printf("events       %zu allocation events on %zu thread(s), %zu marks (iterations 0..%zu)\n", events,
              trace.threads.size(), marks.size(), marks.size());
  std::printf(
      "file         %s, %.2f bytes per event\n", format_bytes(static_cast<int64_t>(trace.file_bytes)).c_str(),
      trace.events.empty() ? 0.0 : static_cast<double>(trace.file_bytes) / static_cast<double>(trace.events.size()));
  if (trace.missed_events > 0 || trace.dropped_marks > 0) {
    std::printf("not recorded %llu calls made inside the tracer (signal handlers), %llu marks beyond its store\n",
                static_cast<unsigned long long>(trace.missed_events),
                static_cast<unsigned long long>(trace.dropped_marks));
  }
  std::printf("\n");

  const std::vector<IterationSummary> summaries = summarize_iterations(trace);
  TextTable table({{"iteration", false},
                   {"events", true},
                   {"allocs", true},
                   {"frees", true},
                   {"allocated", true},
                   {"peak live", true},
                   {"peak own", true},
                   {"threads", true},
                   {"repeats", false}});
  for (const IterationSummary& s : summaries) {
    std::string name = std::to_string(s.iteration);
    if (s.iteration == 0) name += " (before 1st mark)";
    if (!s.closed && s.iteration > 0) name += " (open)";
    table.add_row({name, std::to_string(s.events), std::to_string(s.allocations), std::to_string(s.frees),
                   format_bytes(static_cast<int64_t>(s.allocated_bytes)),
                   format_bytes(static_cast<int64_t>(s.peak_live_bytes)),
                   format_bytes(static_cast<int64_t>(s.peak_iteration_bytes)), std::to_string(s.threads),
                   s.iteration >= 2 ? yes_no(s.repeats_previous) : "-"});
  }
  table.print(stdout);
  std::printf(
      "peak live: most bytes live in the process during the iteration; peak own: most bytes live that the\n"
      "iteration itself allocated. repeats: same sequence of allocation calls and sizes as the previous one.\n");

  // Runs of repeating iterations, the ones worth planning.
  std::string runs;
  for (size_t k = 2; k < summaries.size(); ++k) {
    if (!summaries[k].repeats_previous) continue;
    size_t end = k;
    while (end + 1 < summaries.size() && summaries[end + 1].repeats_previous) ++end;
    runs += (runs.empty() ? "" : ", ") + std::to_string(k - 1) + ".." + std::to_string(end);
    k = end;
  }
  std::printf("repeating    %s\n\n", runs.empty() ? "no two consecutive iterations allocate alike"
                                                  : ("iterations " + runs + " allocate alike").c_str());

  // Histogram: allocations per size class, only the classes that occur.
  std::vector<std::array<uint64_t, kClasses>> counts(summaries.size());
  std::array<bool, kClasses> used{};
  for (size_t i = 0; i < summaries.size(); ++i) {
    counts[i].fill(0);
    for (size_t k = 0; k < summaries[i].size_histogram.size(); ++k) {
      if (summaries[i].size_histogram[k] == 0) continue;
      const int c = class_of_bucket(k);
      counts[i][c] += summaries[i].size_histogram[k];
      used[c] = true;
    }
  }
  std::vector<TextTable::Column> columns{{"iteration", true}};
  for (int c = 0; c < kClasses; ++c) {
    if (used[c]) columns.push_back({kClassLabels[c], true});
  }
  if (columns.size() > 1) {
    std::printf("allocations by size (bytes)\n");
    TextTable histogram(columns);
    for (size_t i = 0; i < summaries.size(); ++i) {
      std::vector<std::string> row{std::to_string(summaries[i].iteration)};
      for (int c = 0; c < kClasses; ++c) {
        if (used[c]) row.push_back(counts[i][c] ? std::to_string(counts[i][c]) : ".");
      }
      histogram.add_row(std::move(row));
    }
    histogram.print(stdout);
  }
  print_top_operators(trace, marks, top_operators);
}

}  // namespace

void register_trace_info_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto top = std::make_shared<size_t>(10);
  auto json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand("trace-info", "Describe a trace iteration by iteration");
  command->add_option("trace", *path, "Trace file (from memplan trace)")->required()->type_name("FILE");
  command->add_option("--operators", *top, "Operators to list, for a trace with operator records (default 10)")
      ->type_name("N");
  command->add_flag("--json", *json,
                    "Print the trace's header and one object per iteration (events, allocations, frees,\n"
                    "bytes allocated, peak live and own bytes, threads, repeats) as JSON");
  command->footer(
      "Iteration 0 is everything before the first mark; iteration N the span from the N-th mark to\n"
      "the next (the last one, 'open', runs to the end of the trace and includes the teardown).\n"
      "\n"
      "Example:\n"
      "  memplan trace-info run.trace");
  command->callback([path, top, json] { run_trace_info(*path, *top, *json); });
}

}  // namespace memplan::cli
