// planning_binding.cc — memplan.plan(), memplan.planners() and the planning
// result: the library's run_planner, the one path `memplan plan` takes, so a
// verdict (planned, fits, does not fit, unknown) and its reason are the CLI's.
//
// Planning runs on a worker thread with the GIL released; the calling thread
// waits and polls for signals, so Ctrl-C cancels the planner (through
// PlanOptions::cancel, as the CLI's Interrupt does) and raises
// KeyboardInterrupt, and other Python threads run meanwhile.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "bindings.h"
#include "errors.h"
#include "memplan/bounds.h"
#include "memplan/units.h"

namespace memplan::python {
namespace {

// "1048576 B (1.00 MiB)", as the CLI writes a byte count in its messages.
std::string bytes_with_units(int64_t bytes) { return std::to_string(bytes) + " B (" + format_bytes(bytes) + ")"; }

StatusOr<PlanningResult> run_planner_interruptibly(const std::string& name, const Problem& problem,
                                                   PlanOptions options) {
  std::atomic<bool> cancel{false};
  options.cancel = &cancel;
  StatusOr<PlanningResult> result = Status(StatusCode::kInternal, "no planner ran");
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::unique_ptr<py::error_already_set> interrupted;
  {
    py::gil_scoped_release release;
    std::thread worker([&] {
      StatusOr<PlanningResult> r = run_planner(name, problem, options);
      std::lock_guard<std::mutex> lock(mutex);
      result = std::move(r);
      done = true;
      finished.notify_one();
    });
    std::unique_lock<std::mutex> lock(mutex);
    while (!done) {
      finished.wait_for(lock, std::chrono::milliseconds(50));
      if (done || interrupted) continue;
      lock.unlock();
      {
        py::gil_scoped_acquire acquire;
        if (PyErr_CheckSignals() != 0) {
          interrupted = std::make_unique<py::error_already_set>();  // takes the pending KeyboardInterrupt
          cancel = true;
        }
      }
      lock.lock();
    }
    lock.unlock();
    worker.join();
  }
  if (interrupted) throw py::error_already_set(*interrupted);
  return result;
}

PlanResult plan(const Problem& original, const std::string& planner, py::object capacity, py::object time_limit_arg,
                uint64_t seed, int threads, py::object alignment, py::object good_enough, py::object good_enough_unit) {
  // None (the default): the default planner's short search after the
  // heuristics (PlanOptions::default_search_seconds); 0: heuristics only.
  const bool default_budget = time_limit_arg.is_none();
  const double time_limit = default_budget ? 0.0 : time_limit_arg.cast<double>();
  if (!(time_limit >= 0)) raise_input_error("time_limit: " + std::to_string(time_limit) + " s is negative");
  if (threads < 0 || threads > kMaxPlanThreads) {
    raise_input_error("threads: " + std::to_string(threads) + " is not in 0 to " + std::to_string(kMaxPlanThreads));
  }
  const Problem* problem = &original;
  Problem changed;
  if (!capacity.is_none() || !alignment.is_none()) {
    changed = original;
    if (!capacity.is_none()) changed.capacity = bytes_from(capacity, "capacity");
    if (!alignment.is_none()) {
      changed.alignment = int64_from(alignment, "alignment");
      if (!is_power_of_two(changed.alignment)) {
        raise_input_error("alignment: " + std::to_string(changed.alignment) + " is not a power of two");
      }
    }
    problem = &changed;
  }
  if (find_planner(planner) == nullptr) {
    raise_status(NotFound(unknown_planner_message(planner)), ErrorSource::kPlanner);
  }
  PlanOptions options;
  options.time_limit_seconds = time_limit;
  options.default_search_seconds = default_budget ? kDefaultSearchSeconds : 0.0;
  options.seed = seed;
  options.threads = threads;
  if (!good_enough.is_none()) {
    const double tolerance = good_enough.cast<double>();
    if (!(tolerance >= 0)) raise_input_error("good_enough: " + std::to_string(tolerance) + " is negative");
    const int64_t unit = good_enough_unit.is_none() ? 1 : bytes_from(good_enough_unit, "good_enough_unit");
    if (unit <= 0) raise_input_error("good_enough_unit: " + std::to_string(unit) + " is not positive");
    options.good_enough = GoodEnough{.unit_bytes = unit, .tolerance = tolerance};
  }
  StatusOr<PlanningResult> planned = run_planner_interruptibly(planner, *problem, options);
  if (!planned.ok()) {
    raise_status(Status(planned.status().code(), "planner '" + planner + "' failed: " + planned.status().message()),
                 ErrorSource::kPlanner);
  }
  PlanResult out{.result = std::move(planned).value(), .capacity = problem->capacity};
  switch (out.result.verdict) {
    case PlanVerdict::kPlanned:
    case PlanVerdict::kFits:
      break;
    case PlanVerdict::kDoesNotFit:
      out.message = "proven: no plan fits in capacity " + bytes_with_units(problem->capacity.value_or(0)) + ": " +
                    out.result.reason;
      break;
    case PlanVerdict::kUnknown:
      out.message = out.result.reason;
      break;
  }
  return out;
}

std::optional<py::array_t<int64_t>> offsets_of(const PlanResult& r) {
  if (!r.result.plan) return std::nullopt;
  return to_array(r.result.plan->offsets);
}

}  // namespace

void bind_planning(py::module_& m) {
  m.def(
      "planners",
      [] {
        std::vector<std::string> names;
        for (const PlannerInfo& p : planners()) names.emplace_back(p.name);
        return names;
      },
      "The registered planners' names, in the registry's order (as `memplan planners` lists them).");
  m.def(
      "planner_info",
      [] {
        py::list out;
        for (const PlannerInfo& p : planners()) {
          py::dict d;
          d["name"] = std::string(p.name);
          d["description"] = std::string(p.description);
          d["form"] = std::string(plan_form_name(p.form));
          d["fast"] = p.fast;
          out.append(d);
        }
        return out;
      },
      "One dict per registered planner: name, description, form (offsets, objects, composite), fast.");
  m.attr("DEFAULT_PLANNER") = std::string(kDefaultPlanner);

  py::class_<PlanResult>(m, "PlanResult",
                         "What memplan.plan() found: a verdict, the plan (when there is one) and what was proven.")
      .def_property_readonly(
          "verdict", [](const PlanResult& r) { return std::string(plan_verdict_name(r.result.verdict)); },
          "'planned' (no capacity), 'fits', 'does not fit' (proven; no plan) or 'unknown' "
          "(no plan within the capacity found, none proven impossible).")
      .def_property_readonly(
          "ending", [](const PlanResult& r) { return std::string(plan_ending_name(r.result.ending)); },
          "What the run ended in, as `memplan plan` says on its result line: 'optimal', 'fits', "
          "'does not fit', 'best found (time limit)', 'best found (search exhausted its "
          "windows)', 'best found (heuristics)', 'cancelled' or 'unknown'.")
      .def_property_readonly(
          "ok",
          [](const PlanResult& r) {
            return r.result.verdict == PlanVerdict::kPlanned || r.result.verdict == PlanVerdict::kFits;
          },
          "True for 'planned' and 'fits'.")
      .def("__bool__",
           [](const PlanResult& r) {
             return r.result.verdict == PlanVerdict::kPlanned || r.result.verdict == PlanVerdict::kFits;
           })
      .def_property_readonly(
          "plan", [](const PlanResult& r) { return r.result.plan; },
          "The Plan, or None ('does not fit'; 'unknown' keeps the best plan found, above the capacity).")
      .def_property_readonly("offsets", &offsets_of, "The plan's offsets (NumPy int64 array), or None.")
      .def_property_readonly(
          "arena",
          [](const PlanResult& r) {
            return r.result.plan ? std::optional<int64_t>(r.result.plan->arena) : std::nullopt;
          },
          "Bytes, or None without a plan.")
      .def_property_readonly(
          "gap",
          [](const PlanResult& r) {
            return r.result.plan ? std::optional<double>(gap(r.result.plan->arena, r.result.load)) : std::nullopt;
          },
          "arena / load - 1, or None without a plan.")
      .def_property_readonly(
          "load", [](const PlanResult& r) { return r.result.load; }, "Bytes.")
      .def_property_readonly(
          "lower_bound", [](const PlanResult& r) { return r.result.lower_bound; },
          "Bytes: proven, every plan's arena is at least this.")
      .def_property_readonly("capacity", [](const PlanResult& r) { return r.capacity; })
      .def_property_readonly("planner", [](const PlanResult& r) { return r.result.planner; })
      .def_property_readonly(
          "made_by", [](const PlanResult& r) { return r.result.made_by; },
          "What produced the plan: 'heuristics', 'exact', or the planner's name.")
      .def_property_readonly(
          "reason", [](const PlanResult& r) { return r.result.reason; },
          "'does not fit': the proof; 'unknown': what was tried.")
      .def_property_readonly(
          "message", [](const PlanResult& r) { return r.message; },
          "The CLI's message for 'does not fit' and 'unknown'; '' otherwise.")
      .def_property_readonly("planning_seconds", [](const PlanResult& r) { return r.result.planning_seconds; })
      .def_property_readonly("validation_seconds", [](const PlanResult& r) { return r.result.validation_seconds; })
      .def_property_readonly(
          "exact",
          [](const PlanResult& r) -> py::object {
            if (!r.result.exact) return py::none();
            py::dict d;
            d["outcome"] = std::string(exact_outcome_name(r.result.exact->outcome));
            d["lower_bound"] = r.result.exact->lower_bound;
            d["nodes"] = r.result.exact->stats.nodes;
            d["backtracks"] = r.result.exact->stats.backtracks;
            py::list improvements;
            for (const Improvement& i : r.result.exact->stats.improvements) {
              improvements.append(py::make_tuple(i.seconds, i.arena, std::string(plan_source_name(i.source))));
            }
            d["improvements"] = improvements;
            d["helper_probes"] = r.result.exact->stats.helper_probes;
            d["sat_decisions"] = r.result.exact->stats.sat_decisions;
            d["sat_refutations"] = r.result.exact->stats.sat_refutations;
            return d;
          },
          "When the exact solver ran: its outcome, proven lower bound (bytes), nodes, backtracks, improvements (each "
          "plan that lowered the arena: (seconds, arena bytes, the step that found it), in order) and helper_probes "
          "(seeded decisions run on helper threads), sat_decisions and sat_refutations (the SAT helper thread's "
          "solves and refuted capacities); else None.")
      .def("__repr__", [](const PlanResult& r) {
        std::string s =
            "<memplan.PlanResult: " + std::string(plan_verdict_name(r.result.verdict)) + " by " + r.result.planner;
        if (r.result.plan) s += ", arena " + std::to_string(r.result.plan->arena) + " B";
        s += ", load " + std::to_string(r.result.load) + " B";
        if (!r.message.empty()) s += "; " + r.message;
        return s + ">";
      });

  m.def("plan", &plan, py::arg("problem"), py::arg("planner") = std::string(kDefaultPlanner), py::kw_only(),
        py::arg("capacity") = py::none(), py::arg("time_limit") = py::none(), py::arg("seed") = 0,
        py::arg("threads") = 0, py::arg("alignment") = py::none(), py::arg("good_enough") = py::none(),
        py::arg("good_enough_unit") = py::none(),
        "Plans the problem with a registered planner, through the path `memplan plan` takes (heuristics, then the "
        "exact solver for a capacity, or for a short search where the heuristics leave a gap, with the default "
        "planner), and validates the plan.\n\n"
        "capacity: bytes (int or '64MiB'), overriding the problem's; time_limit: seconds (None, the default: with "
        "the default planner, the heuristics then up to 1 s of exact search on problems of up to 2,000 buffers "
        "where a gap to the load is left, other planners their own default; 0: the heuristics alone, other "
        "planners their own default); seed: for planners with randomised orders; threads: the exact solver's threads, "
        "as --threads (0, the "
        "default: one per hardware thread; up to 256; 1 repeats a run not cut short by time); alignment: the default "
        "alignment, as --alignment; good_enough: a share of the load (0.01: 1%): greedy_by_size runs "
        "first and its plan is kept, the named planner not run, when its arena is within that share of the load, "
        "counted in units of good_enough_unit bytes (int or '4KiB'; default 1), as --good-enough.\n"
        "Returns a PlanResult; 'does not fit' and 'unknown' are verdicts, not exceptions. Raises "
        "UnknownPlannerError, InputError (a bad argument) or PlanningError (a planner's error, the time limit "
        "ran out before a heuristic finished, an invalid plan: a bug). Ctrl-C cancels and raises KeyboardInterrupt.");
}

}  // namespace memplan::python
