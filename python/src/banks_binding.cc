// banks_binding.cc — memplan.plan_banks(): planning into ordered memory banks
// (include/memplan/banks.h), as `memplan plan --bank` does.
#include <climits>
#include <map>

#include "bindings.h"
#include "errors.h"
#include "memplan/banks.h"

namespace memplan::python {
namespace {

// ("sram", 512 * 1024), ("sram", "512KiB", 64), ("dram", None) or "dram".
Bank bank_from(py::handle value, size_t index) {
  const std::string what = "banks[" + std::to_string(index) + "]";
  if (py::isinstance<py::str>(value)) return Bank{.name = value.cast<std::string>()};
  if (!py::isinstance<py::tuple>(value) && !py::isinstance<py::list>(value)) {
    raise_input_error(what + ": expected a name or a tuple (name, capacity[, alignment])");
  }
  const py::sequence t = py::reinterpret_borrow<py::sequence>(value);
  if (t.size() < 1 || t.size() > 3 || !py::isinstance<py::str>(t[0])) {
    raise_input_error(what + ": expected a tuple (name, capacity or None[, alignment])");
  }
  Bank bank{.name = t[0].cast<std::string>()};
  if (t.size() >= 2 && !t[1].is_none()) bank.capacity = bytes_from(t[1], what + ": capacity");
  if (t.size() == 3) bank.alignment = bytes_from(t[2], what + ": alignment");
  return bank;
}

std::vector<Bank> banks_from(py::handle banks_arg) {
  std::vector<Bank> banks;
  size_t index = 0;
  for (py::handle b : banks_arg) banks.push_back(bank_from(b, index++));
  return banks;
}

py::dict plan_banks_py(const Problem& original, py::handle banks_arg, py::object pins, py::object priorities,
                       const std::string& planner, const std::string& strategy, std::optional<double> time_limit,
                       int64_t node_limit) {
  const std::vector<Bank> banks = banks_from(banks_arg);
  Problem problem = original;
  if (!pins.is_none() || !priorities.is_none()) {
    std::map<std::string, size_t> by_id;
    for (size_t i = 0; i < problem.size(); ++i) by_id[problem.buffers[i].id] = i;
    auto buffer_of = [&](py::handle key, const std::string& what) -> Buffer& {
      const std::string id = py::str(key).cast<std::string>();
      const auto it = by_id.find(id);
      if (it == by_id.end()) raise_input_error(what + ": no buffer has id '" + id + "'");
      return problem.buffers[it->second];
    };
    if (!pins.is_none()) {
      for (auto [key, value] : pins.cast<py::dict>()) buffer_of(key, "pins").bank = value.cast<std::string>();
    }
    if (!priorities.is_none()) {
      for (auto [key, value] : priorities.cast<py::dict>()) {
        buffer_of(key, "priorities").priority =
            int64_from(value, "priorities['" + py::str(key).cast<std::string>() + "']");
      }
    }
  }
  // plan_banks (banks.h) decides what the limits mean, checks them and
  // validates the plan, as for `memplan plan --bank`; this converts.
  const std::optional<BankStrategy> chosen = bank_strategy_from_option(strategy);
  if (!chosen) raise_input_error("strategy: '" + strategy + "' is not one of " + bank_strategy_options());
  const BankOptions options{
      .planner = planner, .strategy = *chosen, .time_limit_seconds = time_limit, .exact_node_limit = node_limit};
  if (find_planner(planner) == nullptr) raise_status(NotFound(unknown_planner_message(planner)), ErrorSource::kPlanner);
  StatusOr<BankedPlanningResult> planned = [&] {
    py::gil_scoped_release release;
    return plan_banks(problem, banks, options);
  }();
  if (!planned.ok()) raise_status(planned.status());  // a pin to no bank: InputError; the rest PlanningError
  const BankedPlanningResult& r = *planned;
  py::dict out;
  out["strategy"] = std::string(bank_strategy_name(r.strategy));
  out["total_priority"] = r.total_priority;
  out["greedy_priority"] = r.greedy_priority ? py::cast(*r.greedy_priority) : py::none();
  out["heuristic_priority"] = r.heuristic_priority ? py::cast(*r.heuristic_priority) : py::none();
  out["exact_decisions"] = r.exact_decisions;
  std::vector<int64_t> bank_of(r.plan.bank_of.begin(), r.plan.bank_of.end());
  out["bank_of"] = to_array(bank_of);
  out["offsets"] = to_array(r.plan.offsets);
  py::list per_bank;
  for (size_t k = 0; k < banks.size(); ++k) {
    py::dict b;
    b["name"] = banks[k].name;
    b["capacity"] = banks[k].capacity ? py::cast(*banks[k].capacity) : py::none();
    b["alignment"] = banks[k].alignment;
    b["buffers"] = r.banks[k].buffers;
    b["bytes"] = r.banks[k].bytes;
    b["arena"] = r.banks[k].arena;
    b["priority"] = r.banks[k].priority;
    per_bank.append(b);
  }
  out["banks"] = per_bank;
  py::list spills;
  for (const Spill& s : r.spills) {
    spills.append(py::make_tuple(problem.buffers[s.buffer].id, banks[s.from_bank].name,
                                 std::string(spill_reason_name(s.reason))));
  }
  out["spills"] = spills;
  return out;
}

py::dict validate_banked_py(const Problem& problem, py::handle banks_arg, py::handle bank_of_arg,
                            py::handle offsets_arg) {
  const std::vector<Bank> banks = banks_from(banks_arg);
  raise_if_error(check_banks(banks));
  const std::vector<int64_t> banks_in = int64_column(bank_of_arg, "bank_of");
  std::vector<int32_t> bank_of;
  for (const int64_t k : banks_in) {
    bank_of.push_back(k < INT32_MIN || k > INT32_MAX ? -1 : static_cast<int32_t>(k));  // out of range: no such bank
  }
  const BankedPlan plan =
      make_banked_plan(problem, banks.size(), std::move(bank_of), int64_column(offsets_arg, "offsets"));
  const BankValidationResult r = validate_banked(problem, banks, plan);
  py::dict out;
  out["valid"] = r.ok();
  out["rule"] = r.ok() ? py::none() : py::cast(std::string(bank_violation_name(r.violation)));
  out["reason"] = r.message;
  out["arenas"] = to_array(plan.arenas);
  return out;
}

}  // namespace

void bind_banks(py::module_& m) {
  m.def("validate_banked", &validate_banked_py, py::arg("problem"), py::arg("banks"), py::arg("bank_of"),
        py::arg("offsets"),
        "Checks a banked plan (bank_of[i]: buffer i's bank index, offsets[i]: its offset in that bank) against "
        "the banks, as `memplan validate --bank` does: every pin kept, each bank's buffers a valid plan within "
        "its capacity and alignment. Returns a dict: valid, rule (None, or the rule broken: 'overlap', "
        "'exceeds capacity', 'pin ignored', ...), reason (names buffers and banks), arenas (per bank).");
  m.def("plan_banks", &plan_banks_py, py::arg("problem"), py::arg("banks"), py::kw_only(), py::arg("pins") = py::none(),
        py::arg("priorities") = py::none(), py::arg("planner") = std::string(kDefaultPlanner),
        py::arg("strategy") = std::string(bank_strategy_option(BankStrategy::kBest)),
        py::arg("time_limit") = py::none(), py::arg("node_limit") = 0,
        "Plans the problem into memory banks, fastest first, as `memplan plan --bank` (docs/planners.md, Memory "
        "banks). banks: names or tuples (name, capacity bytes or None, [alignment]); pins: {buffer id: bank name}; "
        "priorities: {buffer id: int} (default size x lifetime, or the CSV's bank and priority columns); "
        "strategy: 'best', 'greedy', 'priority' or 'exact' (best, then the exact decision solver per bounded bank "
        "within time_limit seconds: 1 s when neither limit is given, no search to speak of at 0, as the CLI's "
        "--time-limit; and node_limit nodes per decision: set it, not the time, for answers that repeat); "
        "outside exact mode time_limit bounds each run of the planner.\n"
        "Returns a dict: strategy, total_priority, greedy_priority, heuristic_priority and exact_decisions (exact: "
        "bank 0's priority in the heuristics' plan it started from, the decisions run), bank_of and offsets (NumPy "
        "arrays), banks (per "
        "bank: name, capacity, alignment, buffers, bytes, arena, priority) and spills ((buffer id, bank, reason) "
        "for each faster bank a buffer missed). Raises InputError or PlanningError (a pin to no bank, pins that "
        "cannot fit, a buffer larger than every bank).");
}

}  // namespace memplan::python
