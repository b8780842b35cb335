// problem_binding.cc — memplan.Buffer, memplan.Problem and memplan.Plan, the
// conversions from Python lists and NumPy arrays, bounds and the validator.
//
// A Problem is built from
//   * a list of dicts: {"lower": 0, "upper": 2, "size": 64, "alignment": 16,
//     "offset": 0, "id": "x", "bank": "sram", "priority": 9} (lower, upper,
//     size required; bank and priority are for memory banks, banks.h);
//   * a list of tuples (lower, upper, size[, alignment[, offset]]);
//   * a 2-D NumPy integer array with those 3 to 5 columns (offset -1: none);
//   * Problem.from_arrays(lower, upper, size, alignment=, offset=, ids=).
// Ids default to "0", "1", ... (the index), as the other producers name them.
// Every Problem is checked (check_problem, fixed offsets per bank as the CSV
// reader checks them) when it is made: an invalid one raises InputError
// naming the buffer and the field, so a Problem object is always valid.
#include <pybind11/operators.h>

#include <limits>

#include "bindings.h"
#include "errors.h"
#include "memplan/bounds.h"
#include "memplan/generate.h"
#include "memplan/units.h"
#include "memplan/validate.h"

namespace memplan::python {

int64_t int64_from(py::handle value, const std::string& what) {
  // Anything with __index__: Python ints and NumPy integer scalars. Not bool,
  // though it is an int in Python: a True where a size was meant is a mistake.
  if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr())) {
    raise_input_error(what + ": expected an integer, got " +
                      std::string(py::str(py::type::of(value).attr("__name__"))) + " " + std::string(py::repr(value)));
  }
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (overflow != 0) raise_input_error(what + ": " + std::string(py::str(index)) + " is outside int64");
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  return v;
}

int64_t bytes_from(py::handle value, const std::string& what) {
  if (py::isinstance<py::str>(value)) {
    StatusOr<int64_t> bytes = parse_bytes(value.cast<std::string>());
    if (!bytes.ok()) raise_input_error(what + ": " + bytes.status().message());
    return *bytes;
  }
  const int64_t bytes = int64_from(value, what);
  if (bytes < 0) raise_input_error(what + ": " + std::to_string(bytes) + " is negative");
  return bytes;
}

std::vector<int64_t> int64_column(py::handle values, const std::string& what) {
  std::vector<int64_t> out;
  if (py::isinstance<py::array>(values)) {
    py::array array = py::reinterpret_borrow<py::array>(values);
    const char kind = array.dtype().kind();
    if (kind != 'i' && kind != 'u') {
      raise_input_error(what + ": a NumPy array of integers, not of " + std::string(py::str(array.dtype())));
    }
    if (array.ndim() != 1) raise_input_error(what + ": a 1-D array, not " + std::to_string(array.ndim()) + "-D");
    if (kind == 'u' && array.itemsize() == 8) {
      auto u = py::array_t<uint64_t, py::array::forcecast>::ensure(array);
      for (py::ssize_t i = 0; i < u.size(); ++i) {
        if (u.at(i) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          raise_input_error(what + "[" + std::to_string(i) + "]: " + std::to_string(u.at(i)) + " is outside int64");
        }
      }
    }
    auto a = py::array_t<int64_t, py::array::forcecast>::ensure(array);
    out.assign(a.data(), a.data() + a.size());
    return out;
  }
  if (py::isinstance<py::str>(values) || !py::isinstance<py::sequence>(values)) {
    raise_input_error(what + ": expected a sequence or NumPy array of integers, got " +
                      std::string(py::str(py::type::of(values).attr("__name__"))));
  }
  py::sequence seq = py::reinterpret_borrow<py::sequence>(values);
  out.reserve(seq.size());
  for (size_t i = 0; i < seq.size(); ++i) out.push_back(int64_from(seq[i], what + "[" + std::to_string(i) + "]"));
  return out;
}

py::array_t<int64_t> to_array(const std::vector<int64_t>& values) {
  py::array_t<int64_t> array(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), array.mutable_data());
  return array;
}

namespace {

constexpr const char* kColumns[] = {"lower", "upper", "size", "alignment", "offset"};

Problem checked(Problem problem) {
  raise_if_error(check_problem(problem, FixedOffsetScope::kPerBank));
  return problem;
}

// One buffer from a dict, a tuple/list, or a memplan.Buffer.
Buffer buffer_from(py::handle item, size_t index) {
  const std::string where = "buffers[" + std::to_string(index) + "]";
  if (py::isinstance<Buffer>(item)) return item.cast<Buffer>();
  Buffer b;
  b.id = std::to_string(index);
  if (py::isinstance<py::dict>(item)) {
    py::dict d = py::reinterpret_borrow<py::dict>(item);
    for (auto [key, value] : d) {
      const std::string k = py::str(key);
      const std::string field = where + ": field '" + k + "'";
      if (k == "id") {
        b.id = py::str(value);
      } else if (k == "lower") {
        b.lower = int64_from(value, field);
      } else if (k == "upper") {
        b.upper = int64_from(value, field);
      } else if (k == "size") {
        b.size = int64_from(value, field);
      } else if (k == "alignment") {
        b.alignment = int64_from(value, field);
      } else if (k == "offset") {
        if (!value.is_none()) b.offset = int64_from(value, field);
      } else if (k == "bank") {
        if (!value.is_none() && !py::isinstance<py::str>(value)) {
          raise_input_error(field + ": expected a bank name (str) or None, got " +
                            std::string(py::str(py::type::of(value).attr("__name__"))));
        }
        if (!value.is_none()) b.bank = value.cast<std::string>();
      } else if (k == "priority") {
        if (!value.is_none()) b.priority = int64_from(value, field);
      } else {
        raise_input_error(where + ": unknown field '" + k +
                          "' (expected id, lower, upper, size, alignment, offset, bank, priority)");
      }
    }
    for (const char* required : {"lower", "upper", "size"}) {
      if (!d.contains(required)) raise_input_error(where + ": missing field '" + required + "'");
    }
    return b;
  }
  if (py::isinstance<py::str>(item) || !py::isinstance<py::sequence>(item)) {
    raise_input_error(where +
                      ": expected a dict, a tuple (lower, upper, size[, alignment[, offset]]) or a "
                      "memplan.Buffer, got " +
                      std::string(py::str(py::type::of(item).attr("__name__"))));
  }
  py::sequence t = py::reinterpret_borrow<py::sequence>(item);
  if (t.size() < 3 || t.size() > 5) {
    raise_input_error(where + ": " + std::to_string(t.size()) +
                      " values; expected (lower, upper, size[, alignment[, offset]])");
  }
  int64_t* fields[] = {&b.lower, &b.upper, &b.size, &b.alignment};
  for (size_t k = 0; k < t.size() && k < 4; ++k) {
    *fields[k] = int64_from(t[k], where + ": field '" + kColumns[k] + "'");
  }
  if (t.size() == 5 && !t[4].is_none()) b.offset = int64_from(t[4], where + ": field 'offset'");
  return b;
}

std::vector<Buffer> buffers_from_matrix(const py::array& array) {
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    raise_input_error("buffers: a NumPy array of integers, not of " + std::string(py::str(array.dtype())));
  }
  if (array.ndim() != 2 || array.shape(1) < 3 || array.shape(1) > 5) {
    raise_input_error(
        "buffers: a NumPy array of shape (n, 3..5) with columns lower, upper, size[, alignment[, "
        "offset]]; got shape " +
        std::string(py::str(array.attr("shape"))));
  }
  std::vector<Buffer> buffers(static_cast<size_t>(array.shape(0)));
  const py::ssize_t columns = array.shape(1);
  for (py::ssize_t c = 0; c < columns; ++c) {
    py::object column = array[py::make_tuple(py::slice(0, array.shape(0), 1), c)];
    const std::vector<int64_t> values = int64_column(column, std::string("buffers column '") + kColumns[c] + "'");
    for (size_t i = 0; i < buffers.size(); ++i) {
      Buffer& b = buffers[i];
      switch (c) {
        case 0:
          b.lower = values[i];
          break;
        case 1:
          b.upper = values[i];
          break;
        case 2:
          b.size = values[i];
          break;
        case 3:
          b.alignment = values[i];
          break;
        case 4:
          if (values[i] != -1) b.offset = values[i];
          break;
      }
    }
  }
  for (size_t i = 0; i < buffers.size(); ++i) buffers[i].id = std::to_string(i);
  return buffers;
}

Problem problem_from(py::handle buffers, py::handle capacity, int64_t alignment) {
  Problem problem;
  if (py::isinstance<py::array>(buffers)) {
    problem.buffers = buffers_from_matrix(py::reinterpret_borrow<py::array>(buffers));
  } else if (!buffers.is_none()) {
    if (py::isinstance<py::str>(buffers) || !py::isinstance<py::iterable>(buffers)) {
      raise_input_error("buffers: expected a list of dicts or tuples, or a NumPy array, got " +
                        std::string(py::str(py::type::of(buffers).attr("__name__"))));
    }
    size_t index = 0;
    for (py::handle item : buffers) problem.buffers.push_back(buffer_from(item, index++));
  }
  if (!capacity.is_none()) problem.capacity = bytes_from(capacity, "capacity");
  problem.alignment = alignment;
  return checked(std::move(problem));
}

Problem problem_from_arrays(py::handle lower, py::handle upper, py::handle size, py::handle alignment,
                            py::handle offset, py::handle ids, py::handle capacity, py::handle banks,
                            py::handle priorities) {
  const std::vector<int64_t> lo = int64_column(lower, "lower");
  const std::vector<int64_t> up = int64_column(upper, "upper");
  const std::vector<int64_t> sz = int64_column(size, "size");
  auto same_length = [&](size_t n, const char* name) {
    if (n != lo.size()) {
      raise_input_error(std::string(name) + ": " + std::to_string(n) + " values, but lower has " +
                        std::to_string(lo.size()));
    }
  };
  same_length(up.size(), "upper");
  same_length(sz.size(), "size");
  std::vector<int64_t> al, off;
  if (!alignment.is_none()) same_length((al = int64_column(alignment, "alignment")).size(), "alignment");
  if (!offset.is_none()) same_length((off = int64_column(offset, "offset")).size(), "offset");
  std::vector<std::string> names;
  if (!ids.is_none()) {
    for (py::handle id : ids) names.push_back(py::str(id));
    same_length(names.size(), "ids");
  }
  std::vector<std::string> pins;
  if (!banks.is_none()) {
    for (py::handle bank : banks) pins.push_back(bank.is_none() ? std::string() : std::string(py::str(bank)));
    same_length(pins.size(), "banks");
  }
  std::vector<int64_t> worth;
  if (!priorities.is_none()) same_length((worth = int64_column(priorities, "priorities")).size(), "priorities");
  Problem problem;
  problem.buffers.resize(lo.size());
  for (size_t i = 0; i < lo.size(); ++i) {
    Buffer& b = problem.buffers[i];
    b.id = names.empty() ? std::to_string(i) : names[i];
    b.lower = lo[i];
    b.upper = up[i];
    b.size = sz[i];
    if (!al.empty()) b.alignment = al[i];
    if (!off.empty() && off[i] != -1) b.offset = off[i];
    if (!pins.empty()) b.bank = pins[i];
    if (!worth.empty() && worth[i] != -1) b.priority = worth[i];
  }
  if (!capacity.is_none()) problem.capacity = bytes_from(capacity, "capacity");
  return checked(std::move(problem));
}

template <typename F>
py::array_t<int64_t> column(const Problem& p, F field) {
  std::vector<int64_t> values(p.size());
  for (size_t i = 0; i < p.size(); ++i) values[i] = field(p.buffers[i]);
  return to_array(values);
}

std::string buffer_repr(const Buffer& b) {
  std::string s = "Buffer(id=" + std::string(py::repr(py::str(b.id))) + ", lower=" + std::to_string(b.lower) +
                  ", upper=" + std::to_string(b.upper) + ", size=" + std::to_string(b.size);
  if (b.alignment != 1) s += ", alignment=" + std::to_string(b.alignment);
  if (b.offset) s += ", offset=" + std::to_string(*b.offset);
  if (!b.bank.empty()) s += ", bank=" + std::string(py::repr(py::str(b.bank)));
  if (b.priority) s += ", priority=" + std::to_string(*b.priority);
  return s + ")";
}

py::dict buffer_dict(const Buffer& b) {
  py::dict d;
  d["id"] = b.id;
  d["lower"] = b.lower;
  d["upper"] = b.upper;
  d["size"] = b.size;
  d["alignment"] = b.alignment;
  d["offset"] = b.offset ? py::cast(*b.offset) : py::none();
  // Memory banks only: present when set, so dicts of problems without them
  // stay as they were.
  if (!b.bank.empty()) d["bank"] = b.bank;
  if (b.priority) d["priority"] = *b.priority;
  return d;
}

}  // namespace

Plan plan_from(const Problem& problem, py::handle plan, const std::string& what) {
  if (py::isinstance<Plan>(plan)) {
    Plan p = plan.cast<Plan>();
    if (p.offsets.size() != problem.size()) {
      raise_input_error(what + ": a plan of " + std::to_string(p.offsets.size()) + " buffers for a problem of " +
                        std::to_string(problem.size()));
    }
    return p;
  }
  if (py::isinstance<PlanResult>(plan)) {
    const PlanResult& r = plan.cast<const PlanResult&>();
    if (!r.result.plan) raise_input_error(what + ": the planning result has no plan (" + r.message + ")");
    return plan_from(problem, py::cast(*r.result.plan), what);
  }
  std::vector<int64_t> offsets = int64_column(plan, what);
  if (offsets.size() != problem.size()) {
    raise_input_error(what + ": " + std::to_string(offsets.size()) + " offsets for a problem of " +
                      std::to_string(problem.size()) + " buffers");
  }
  return make_plan(problem, std::move(offsets));
}

void bind_problem(py::module_& m) {
  py::class_<Buffer>(m, "Buffer",
                     "One allocation to place: live during [lower, upper) in ticks, `size` bytes, its offset a "
                     "multiple of `alignment`; `offset` is a fixed offset every plan keeps, or None.")
      .def_readonly("id", &Buffer::id)
      .def_readonly("lower", &Buffer::lower)
      .def_readonly("upper", &Buffer::upper)
      .def_readonly("size", &Buffer::size)
      .def_readonly("alignment", &Buffer::alignment)
      .def_readonly("offset", &Buffer::offset)
      .def_property_readonly(
          "bank", [](const Buffer& b) { return b.bank.empty() ? py::none() : py::cast(b.bank); },
          "The memory bank this buffer is pinned to (memplan.plan_banks), or None.")
      .def_readonly("priority", &Buffer::priority,
                    "Its worth of a fast bank (memplan.plan_banks), or None: size x lifetime.")
      .def("to_dict", &buffer_dict, "The buffer as a dict, as Problem() takes it.")
      .def("__repr__", &buffer_repr)
      .def(
          "__eq__",
          [](const Buffer& a, const Buffer& b) {
            return a.id == b.id && a.lower == b.lower && a.upper == b.upper && a.size == b.size &&
                   a.alignment == b.alignment && a.offset == b.offset && a.bank == b.bank && a.priority == b.priority;
          },
          py::is_operator());

  py::class_<Problem>(m, "Problem",
                      "A set of buffers to place in one arena, with an optional capacity (bytes) and a default "
                      "alignment. Always valid: construction raises InputError naming the buffer and field.")
      .def(py::init([](py::object buffers, py::object capacity, int64_t alignment) {
             return problem_from(buffers, capacity, alignment);
           }),
           py::arg("buffers") = py::none(), py::kw_only(), py::arg("capacity") = py::none(), py::arg("alignment") = 1,
           "buffers: a list of dicts {id, lower, upper, size, alignment, offset, bank, priority} (bank: the "
           "memory bank a buffer is pinned to, priority: its worth of a fast bank; see plan_banks) or tuples "
           "(lower, upper, "
           "size[, alignment[, offset]]), or an (n, 3..5) NumPy integer array with those columns (offset -1: "
           "none). capacity: bytes (an int, or a string such as '64MiB'). alignment: the default alignment of "
           "every buffer (a power of two). Fixed offsets of buffers pinned to different banks may share bytes; "
           "planning such a problem into one arena raises InputError.")
      .def_static(
          "from_arrays",
          [](py::object lower, py::object upper, py::object size, py::object alignment, py::object offset,
             py::object ids, py::object capacity, py::object banks, py::object priorities) {
            return problem_from_arrays(lower, upper, size, alignment, offset, ids, capacity, banks, priorities);
          },
          py::arg("lower"), py::arg("upper"), py::arg("size"), py::kw_only(), py::arg("alignment") = py::none(),
          py::arg("offset") = py::none(), py::arg("ids") = py::none(), py::arg("capacity") = py::none(),
          py::arg("banks") = py::none(), py::arg("priorities") = py::none(),
          "A problem from columns (NumPy arrays or sequences of equal length); offset -1 means none. banks: "
          "each buffer's bank pin (a name, or None or '' for none); priorities: each one's worth of a fast bank "
          "(-1: size x lifetime).")
      .def("__len__", &Problem::size)
      .def("__getitem__",
           [](const Problem& p, py::ssize_t i) {
             const auto n = static_cast<py::ssize_t>(p.size());
             if (i < 0) i += n;
             if (i < 0 || i >= n) throw py::index_error("buffer index " + std::to_string(i) + " out of range");
             return p.buffers[static_cast<size_t>(i)];
           })
      .def_property_readonly(
          "buffers", [](const Problem& p) { return p.buffers; }, "The buffers, as Buffer objects.")
      .def_property_readonly("ids",
                             [](const Problem& p) {
                               std::vector<std::string> ids;
                               for (const Buffer& b : p.buffers) ids.push_back(b.id);
                               return ids;
                             })
      .def_property_readonly("lower",
                             [](const Problem& p) { return column(p, [](const Buffer& b) { return b.lower; }); })
      .def_property_readonly("upper",
                             [](const Problem& p) { return column(p, [](const Buffer& b) { return b.upper; }); })
      .def_property_readonly(
          "size", [](const Problem& p) { return column(p, [](const Buffer& b) { return b.size; }); },
          "Sizes in bytes (a NumPy array); len(problem) is the number of buffers.")
      .def_property_readonly(
          "alignments",
          [](const Problem& p) {
            std::vector<int64_t> a(p.size());
            for (size_t i = 0; i < p.size(); ++i) a[i] = p.alignment_of(i);
            return to_array(a);
          },
          "Each buffer's effective alignment: the larger of its own and the problem's default.")
      .def_property_readonly(
          "offsets", [](const Problem& p) { return column(p, [](const Buffer& b) { return b.offset.value_or(-1); }); },
          "Fixed offsets, -1 where none.")
      .def_property_readonly(
          "banks",
          [](const Problem& p) {
            py::list pins;
            for (const Buffer& b : p.buffers) pins.append(b.bank.empty() ? py::none() : py::cast(b.bank));
            return pins;
          },
          "Each buffer's bank pin (memplan.plan_banks), None where none.")
      .def_property_readonly(
          "priorities",
          [](const Problem& p) { return column(p, [](const Buffer& b) { return b.priority.value_or(-1); }); },
          "Each buffer's priority (memplan.plan_banks), -1 where none (size x lifetime).")
      .def_property(
          "capacity", [](const Problem& p) { return p.capacity; },
          [](Problem& p, py::object capacity) {
            Problem changed = p;
            changed.capacity.reset();
            if (!capacity.is_none()) changed.capacity = bytes_from(capacity, "capacity");
            p = checked(std::move(changed));
          },
          "Bytes the arena must not exceed, or None.")
      .def_property(
          "alignment", [](const Problem& p) { return p.alignment; },
          [](Problem& p, py::object alignment) {
            Problem changed = p;
            changed.alignment = int64_from(alignment, "alignment");
            if (!is_power_of_two(changed.alignment)) {
              raise_input_error("alignment: " + std::to_string(changed.alignment) + " is not a power of two");
            }
            p = checked(std::move(changed));
          },
          "The default alignment of every buffer (a power of two).")
      .def(
          "load", [](const Problem& p) { return load(p); },
          "Bytes: the most bytes live at one tick, a lower bound on every plan's arena.")
      .def(
          "bounds", [](const Problem& p, bool positional) { return compute_bounds(p, positional); },
          py::arg("positional_maximums") = true, "The lower bounds on the arena, as memplan.bounds(problem).")
      .def("to_dicts",
           [](const Problem& p) {
             py::list out;
             for (const Buffer& b : p.buffers) out.append(buffer_dict(b));
             return out;
           })
      .def("__repr__", [](const Problem& p) {
        std::string s = "<memplan.Problem: " + std::to_string(p.size()) + " buffers, load " + format_bytes(load(p));
        if (p.capacity) s += ", capacity " + format_bytes(*p.capacity);
        if (p.alignment != 1) s += ", alignment " + std::to_string(p.alignment);
        return s + ">";
      });

  py::class_<Plan>(m, "Plan", "An offset for every buffer of a problem, and the arena (bytes).")
      .def(py::init([](const Problem& problem, py::object offsets) { return plan_from(problem, offsets, "offsets"); }),
           py::arg("problem"), py::arg("offsets"),
           "A plan from offsets (a sequence or NumPy array, one per buffer); the arena is computed. Not validated: "
           "memplan.validate says whether it is valid.")
      .def_property_readonly(
          "offsets", [](const Plan& p) { return to_array(p.offsets); },
          "Offsets in bytes, a NumPy int64 array in problem order.")
      .def_readonly("arena", &Plan::arena, "Bytes: max(offset + size).")
      .def("__len__", [](const Plan& p) { return p.offsets.size(); })
      .def("__repr__", [](const Plan& p) {
        return "<memplan.Plan: " + std::to_string(p.offsets.size()) + " offsets, arena " + std::to_string(p.arena) +
               " B>";
      });

  py::class_<ValidationResult>(m, "Validation",
                               "What the validator found: true when the plan is valid; str() is 'ok' or the reason.")
      .def_property_readonly("ok", &ValidationResult::ok)
      .def_property_readonly(
          "violation", [](const ValidationResult& v) { return std::string(violation_name(v.violation)); },
          "The reason's name ('valid' when valid), as validate.h lists them.")
      .def_readonly("first", &ValidationResult::first, "Index of the offending buffer.")
      .def_readonly("second", &ValidationResult::second, "The other buffer of an overlap.")
      .def_readonly("tick", &ValidationResult::tick, "A tick at which the two overlapping buffers are both live.")
      .def_readonly("message", &ValidationResult::message, "The validator's reason; '' when valid.")
      .def("__bool__", &ValidationResult::ok)
      .def("__str__", [](const ValidationResult& v) { return v.ok() ? std::string("ok") : v.message; })
      .def("__repr__", [](const ValidationResult& v) {
        return v.ok() ? std::string("<memplan.Validation: ok>") : "<memplan.Validation: " + v.message + ">";
      });

  m.def(
      "validate", [](const Problem& problem, py::object plan) { return validate(problem, plan_from(problem, plan)); },
      py::arg("problem"), py::arg("plan"),
      "Checks a plan (a Plan, a planning result, or offsets) with memplan's independent validator: returns a "
      "Validation, true when valid, whose str() is 'ok' or the reason (which buffers, at which tick).");

  py::class_<Bounds>(m, "Bounds", "Lower bounds on the arena of any plan (bytes).")
      .def_readonly("load", &Bounds::load, "Bytes: bound for every plan.")
      .def_readonly("load_tick", &Bounds::load_tick, "A tick at which the load is reached.")
      .def_readonly("positional_maximums", &Bounds::positional_maximums,
                    "Bytes: bound for the shared-objects form only.")
      .def_readonly("max_live_count", &Bounds::max_live_count, "Most buffers live at one tick.")
      .def_readonly("total_size", &Bounds::total_size, "Bytes: the sum of all sizes.")
      .def("__repr__", [](const Bounds& b) {
        return "<memplan.Bounds: load " + std::to_string(b.load) + " B at tick " + std::to_string(b.load_tick) +
               ", positional maximums " + std::to_string(b.positional_maximums) + " B, total " +
               std::to_string(b.total_size) + " B>";
      });
  m.def(
      "bounds", [](const Problem& problem, bool positional) { return compute_bounds(problem, positional); },
      py::arg("problem"), py::arg("positional_maximums") = true,
      "Lower bounds: the load (every plan) and the positional maximums (shared-objects plans).");
  m.def("gap", &gap, py::arg("arena"), py::arg("load"), "arena / load - 1: 0 means provably optimal.");

  m.def(
      "generate",
      [](const std::string& shape, size_t buffers, uint64_t seed, int64_t max_size, int64_t max_alignment,
         double fixed_offset_probability) {
        GenerateOptions options;
        if (!parse_problem_shape(shape, &options.shape)) {
          raise_input_error("shape '" + shape + "': expected dnn, random, heavy, nested, equal or puzzle");
        }
        if (max_size < 1) raise_input_error("max_size: " + std::to_string(max_size) + " is below 1");
        if (!is_power_of_two(max_alignment)) {
          raise_input_error("max_alignment: " + std::to_string(max_alignment) + " is not a power of two");
        }
        if (!(fixed_offset_probability >= 0 && fixed_offset_probability <= 1)) {
          raise_input_error("fixed_offset_probability: expected a value from 0 to 1");
        }
        options.buffers = buffers;
        options.seed = seed;
        options.max_size = max_size;
        options.max_alignment = max_alignment;
        options.fixed_offset_probability = fixed_offset_probability;
        return checked(generate_problem(options));
      },
      py::arg("shape") = "dnn", py::arg("buffers") = 100, py::kw_only(), py::arg("seed") = 1,
      py::arg("max_size") = 1 << 20, py::arg("max_alignment") = 1, py::arg("fixed_offset_probability") = 0.0,
      "A seeded random problem, as `memplan generate` makes: shape dnn, random, heavy, nested, equal or puzzle.");
}

}  // namespace memplan::python
