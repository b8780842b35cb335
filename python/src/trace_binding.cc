// trace_binding.cc — traces from Python: read a memplan trace (what the
// tracer libmemplan_trace.so writes), summarise its iterations and extract
// one as a problem, as `memplan trace-info` and `memplan extract` do; and a
// PyTorch profiler chrome trace, which `memplan extract` also reads.
#include "bindings.h"
#include "errors.h"
#include "memplan/file_kind.h"
#include "memplan/torch_profile.h"
#include "memplan/trace.h"

namespace memplan::python {
namespace {

// What memplan.extract() returns: the problem and the account of what was left out.
struct PyExtraction {
  Problem problem;
  std::vector<std::string> operators;  // per buffer ("" unknown); empty for memplan traces
  int64_t iteration = 0;
  size_t events = 0;
  size_t escaped = 0;
  uint64_t escaped_bytes = 0;
  size_t inherited = 0;
  size_t below_min_size = 0;
  uint64_t below_min_size_bytes = 0;
  size_t failed = 0;
  size_t reused_live = 0;
};

PyExtraction from_trace(Extraction&& x) {
  return {.problem = std::move(x.problem),
          .iteration = x.iteration,
          .events = x.events,
          .escaped = x.escaped,
          .escaped_bytes = x.escaped_bytes,
          .inherited = x.inherited,
          .below_min_size = x.below_min_size,
          .below_min_size_bytes = x.below_min_size_bytes,
          .failed = x.failed,
          .reused_live = x.reused_live};
}

PyExtraction from_profile(ProfileExtraction&& x) {
  return {.problem = std::move(x.problem),
          .operators = std::move(x.operators),
          .iteration = x.step,
          .events = x.events,
          .escaped = x.escaped,
          .escaped_bytes = x.escaped_bytes,
          .inherited = x.inherited,
          .below_min_size = x.below_min_size,
          .below_min_size_bytes = x.below_min_size_bytes,
          .reused_live = x.reused_live};
}

ExtractOptions extract_options(py::object min_size, py::object alignment) {
  ExtractOptions options;
  options.min_size = static_cast<uint64_t>(bytes_from(min_size, "min_size"));
  if (!alignment.is_none()) {
    options.alignment = bytes_from(alignment, "alignment");
    if (!is_power_of_two(options.alignment)) {
      raise_input_error("alignment: " + std::to_string(options.alignment) + " is not a power of two");
    }
  }
  return options;
}

PyExtraction extract_from_trace(const Trace& trace, int64_t iteration, const ExtractOptions& options,
                                const std::string& source) {
  StatusOr<Extraction> x = extract_iteration(trace, iteration, options);
  if (!x.ok()) raise_status(Status(x.status().code(), source + ": " + x.status().message()));
  return from_trace(std::move(x).value());
}

// `memplan extract`'s dispatch for a file (sniff_file_kind, the CLI's test):
// an ONNX model, a PyTorch profile (JSON) or a memplan trace; options that do
// not apply to the kind of file are refused, as the CLI refuses them.
py::object extract_file(py::object path_object, py::object iteration, py::object min_size, py::object alignment,
                        py::object inputs, bool keep_constants) {
  const std::string path = py::str(py::module_::import("os").attr("fspath")(path_object));
  const FileKind kind = sniff_file_kind(path, read_file_head(path));
  if (kind == FileKind::kOnnxModel) {
    if (!iteration.is_none()) raise_input_error("iteration applies to traces, not to ONNX models");
    if (!(py::isinstance<py::int_>(min_size) && min_size.cast<int64_t>() == 0)) {
      raise_input_error("min_size applies to traces, not to ONNX models");
    }
#if MEMPLAN_WITH_ONNX
    return extract_onnx_file(path, inputs, alignment, keep_constants);
#else
    raise_input_error(path +
                      ": an ONNX model, and this memplan module was built without the ONNX front end "
                      "(install libonnx-dev and configure with -DMEMPLAN_WITH_ONNX=ON)");
#endif
  }
  if (!inputs.is_none()) raise_input_error("inputs apply to ONNX models, not to traces");
  if (keep_constants) raise_input_error("keep_constants applies to ONNX models, not to traces");
  const ExtractOptions options = extract_options(min_size, alignment);
  if (kind == FileKind::kTorchProfile) {
    TorchProfile profile = value_or_raise(read_torch_profile(path), ErrorSource::kFile);
    const int64_t step =
        iteration.is_none() ? profile_step_numbers(profile).front() : int64_from(iteration, "iteration");
    StatusOr<ProfileExtraction> x = extract_profile_step(profile, step, options.min_size, options.alignment);
    if (!x.ok()) raise_status(Status(x.status().code(), path + ": " + x.status().message()));
    return py::cast(from_profile(std::move(x).value()));
  }
  const Trace trace = value_or_raise(read_trace(path), ErrorSource::kFile);
  return py::cast(
      extract_from_trace(trace, iteration.is_none() ? 1 : int64_from(iteration, "iteration"), options, path));
}

py::dict summary_dict(const IterationSummary& s) {
  py::dict d;
  d["iteration"] = s.iteration;
  d["closed"] = s.closed;
  d["events"] = s.events;
  d["allocations"] = s.allocations;
  d["frees"] = s.frees;
  d["allocated_bytes"] = s.allocated_bytes;
  d["peak_live_bytes"] = s.peak_live_bytes;
  d["peak_iteration_bytes"] = s.peak_iteration_bytes;
  d["threads"] = s.threads;
  d["repeats_previous"] = s.repeats_previous;
  return d;
}

}  // namespace

void bind_trace(py::module_& m) {
  py::class_<PyExtraction>(m, "Extraction",
                           "One iteration of a trace as a problem, and what was left out of it (memplan extract).")
      .def_property_readonly(
          "problem", [](const PyExtraction& x) { return x.problem; },
          "The buffers allocated and freed in the iteration (a copy).")
      .def_readonly("operators", &PyExtraction::operators,
                    "PyTorch profiles: each buffer's operator ('' unknown); empty for memplan traces.")
      .def_readonly("iteration", &PyExtraction::iteration, "The iteration (a profile's step number).")
      .def_readonly("events", &PyExtraction::events, "Events in the iteration: ticks 0..events-1.")
      .def_readonly("escaped", &PyExtraction::escaped, "Allocated in the iteration, not freed in it.")
      .def_readonly("escaped_bytes", &PyExtraction::escaped_bytes)
      .def_readonly("inherited", &PyExtraction::inherited, "Freed in the iteration, allocated before it.")
      .def_readonly("below_min_size", &PyExtraction::below_min_size)
      .def_readonly("below_min_size_bytes", &PyExtraction::below_min_size_bytes)
      .def_readonly("failed", &PyExtraction::failed, "Allocation calls that returned null.")
      .def_readonly("reused_live", &PyExtraction::reused_live, "Allocations of a pointer still live (a lost free).")
      .def("__repr__", [](const PyExtraction& x) {
        return "<memplan.Extraction: iteration " + std::to_string(x.iteration) + ", " + std::to_string(x.events) +
               " events, " + std::to_string(x.problem.size()) + " buffers, " + std::to_string(x.escaped) +
               " escaped, " + std::to_string(x.inherited) + " inherited>";
      });

  py::class_<Trace>(m, "Trace", "An allocation trace of a running program, as the tracer wrote it.")
      .def_readonly("pid", &Trace::pid, "The traced process.")
      .def_readonly("complete", &Trace::complete, "The tracer's exit handler wrote its end block.")
      .def_readonly("missed_events", &Trace::missed_events)
      .def_readonly("dropped_marks", &Trace::dropped_marks)
      .def_readonly("file_bytes", &Trace::file_bytes)
      .def_readonly("operators", &Trace::operators, "Operator names, when the program recorded them.")
      .def_property_readonly(
          "events", [](const Trace& t) { return t.events.size(); }, "Number of events.")
      .def_property_readonly(
          "threads", [](const Trace& t) { return t.threads.size(); }, "Threads that allocated.")
      .def_property_readonly("marks", [](const Trace& t) { return t.mark_indices().size(); })
      .def_property_readonly("iteration_count", &Trace::iteration_count,
                             "Iterations 0..marks: 0 is the span before the first mark.")
      .def(
          "iterations",
          [](const Trace& t) {
            py::list out;
            for (const IterationSummary& s : summarize_iterations(t)) out.append(summary_dict(s));
            return out;
          },
          "Per-iteration statistics (memplan trace-info): one dict per iteration.")
      .def(
          "extract",
          [](const Trace& t, int64_t iteration, py::object min_size, py::object alignment) {
            return extract_from_trace(t, iteration, extract_options(min_size, alignment), "<trace>");
          },
          py::arg("iteration") = 1, py::kw_only(), py::arg("min_size") = 0, py::arg("alignment") = py::none(),
          "Iteration N (the span from the N-th mark to the next) as an Extraction. min_size: leave out smaller "
          "buffers (bytes); alignment: every buffer gets at least this (default 16, malloc's).")
      .def("__repr__", [](const Trace& t) {
        return "<memplan.Trace: pid " + std::to_string(t.pid) + ", " + std::to_string(t.events.size()) + " events, " +
               std::to_string(t.mark_indices().size()) + " marks" + (t.complete ? "" : ", incomplete") + ">";
      });

  m.def(
      "read_trace",
      [](py::object path) {
        return value_or_raise(read_trace(py::str(py::module_::import("os").attr("fspath")(path))), ErrorSource::kFile);
      },
      py::arg("path"), "A trace file written by the tracer (memplan trace).");
  m.def(
      "parse_trace",
      [](py::bytes data, const std::string& source) {
        const std::string bytes = data;
        return value_or_raise(parse_trace({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, source));
      },
      py::arg("data"), py::arg("source") = "<trace>", "A trace from its bytes.");
  m.def("extract", &extract_file, py::arg("path"), py::arg("iteration") = py::none(), py::kw_only(),
        py::arg("min_size") = 0, py::arg("alignment") = py::none(), py::arg("inputs") = py::none(),
        py::arg("keep_constants") = false,
        "What `memplan extract` reads, as a problem: one iteration of a memplan trace (default: 1) or one step "
        "of a PyTorch profiler chrome trace (JSON; default: its first step) as an Extraction; or an ONNX model "
        "(*.onnx, when built with ONNX) with its input shapes, inputs={'input': (1, 3, 224, 224)} or "
        "['input=1x3x224x224'], as an OnnxExtraction. min_size and alignment are bytes (alignment default 16 for "
        "traces, 64 for models); keep_constants plans a model's constants in the arena too.");
}

}  // namespace memplan::python
