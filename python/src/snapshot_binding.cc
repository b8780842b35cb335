// snapshot_binding.cc — PyTorch CUDA memory snapshots from Python:
// memplan.read_snapshot(path) reads a file written by
// torch.cuda.memory._dump_snapshot as plain data (snapshot.h; a pickle that
// would run code is refused), and memplan.snapshot_problem(snapshot) (in
// memplan/__init__.py) takes a live torch.cuda.memory._snapshot() dict,
// pickles it with Python's pickle and reads those bytes the same way.
#include "bindings.h"
#include "errors.h"
#include "memplan/bounds.h"
#include "memplan/snapshot.h"

namespace memplan::python {
namespace {

// One device as a dict (the fields of `memplan snapshot --json` that need no
// planning, plus the window's problem and the iterations' spans).
py::dict device_dict(const snapshot::Snapshot& s, const snapshot::Device& device) {
  const snapshot::Window w = snapshot::reconstruct_window(s, device);
  Problem problem = snapshot::window_problem(w);
  const snapshot::Iterations its = snapshot::find_iterations(s, device, w);
  py::dict d;
  d["device"] = device.device;
  d["events"] = device.events.size();
  d["blocks"] = w.blocks.size();
  py::dict recorded;
  recorded["peak_reserved_bytes"] = w.peak_reserved.bytes;
  recorded["peak_allocated_bytes"] = w.peak_allocated.bytes;
  recorded["peak_reserved_event"] = w.peak_reserved.event;
  recorded["peak_allocated_event"] = w.peak_allocated.event;
  recorded["start_reserved_bytes"] = w.start_reserved;
  recorded["start_allocated_bytes"] = w.start_allocated;
  recorded["end_reserved_bytes"] = w.end_reserved;
  recorded["end_allocated_bytes"] = w.end_allocated;
  d["recorded"] = recorded;
  d["load_bytes"] = load(problem);
  py::list live;
  for (size_t i = 0; i < w.live_at_peak.size() && i < 25; ++i) {
    const snapshot::WindowBlock& b = w.blocks[w.live_at_peak[i]];
    py::dict block;
    block["size_bytes"] = b.size;
    block["address"] = b.address;
    block["stream"] = b.stream;
    block["allocated_by"] = s.describe_stack(b.stack);
    block["alloc_event"] = b.alloc_event;
    live.append(block);
  }
  d["live_at_peak"] = live;
  py::list spans;
  for (const snapshot::Iteration& span : its.spans) spans.append(py::make_tuple(span.first_event, span.end_event));
  d["iterations"] = spans;
  d["iterations_found_by"] = its.found_by;
  py::list iteration_problems;
  for (const snapshot::Iteration& span : its.spans) iteration_problems.append(py::cast(snapshot::iteration_problem(w, span)));
  d["iteration_problems"] = iteration_problems;
  d["warnings"] = w.warnings;
  d["problem"] = py::cast(std::move(problem));
  return d;
}

py::dict snapshot_dict(const snapshot::Snapshot& s, py::object device) {
  py::dict out;
  out["format"] = s.newer_format ? "newer" : "older";
  out["alloc_conf"] = s.alloc_conf;
  out["warnings"] = s.warnings;
  py::list devices;
  const std::optional<int64_t> only =
      device.is_none() ? std::nullopt : std::optional<int64_t>(int64_from(device, "device"));
  for (const snapshot::Device& d : s.devices) {
    if (!only || d.device == *only) devices.append(device_dict(s, d));
  }
  if (only && devices.empty()) raise_input_error("device " + std::to_string(*only) + ": not in the snapshot");
  out["devices"] = devices;
  return out;
}

}  // namespace

void bind_snapshot(py::module_& m) {
  m.def(
      "read_snapshot",
      [](const std::string& path, py::object device) {
        return snapshot_dict(value_or_raise(snapshot::read_snapshot(path), ErrorSource::kFile), device);
      },
      py::arg("path"), py::arg("device") = py::none(),
      "Reads a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot) as plain data: a\n"
      "pickle that would import or call code is refused (InputError naming the opcode and offset).\n"
      "Returns {'format', 'alloc_conf', 'warnings', 'devices': [{'device', 'events', 'blocks',\n"
      "'recorded': {'peak_reserved_bytes', 'peak_allocated_bytes', ...}, 'load_bytes', 'problem'\n"
      "(memplan.Problem of the window), 'iterations' [(first_event, end_event)], 'iterations_found_by',\n"
      "'iteration_problems', 'live_at_peak' [{'size_bytes', 'address', 'stream', 'allocated_by',\n"
      "'alloc_event'}], 'warnings'}]}, every device unless `device` names one. docs/snapshots.md.");
  m.def(
      "_snapshot_from_pickle_bytes",
      [](py::bytes data, py::object device, const std::string& source) {
        const std::string bytes = data;
        pickle::Document document = value_or_raise(
            pickle::parse_pickle({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, source));
        return snapshot_dict(value_or_raise(snapshot::snapshot_from_pickle(document, source)), device);
      },
      py::arg("data"), py::arg("device") = py::none(), py::arg("source") = "<snapshot>",
      "read_snapshot for the bytes of a pickle (memplan.snapshot_problem pickles a live snapshot).");
}

}  // namespace memplan::python
