// snapshot_binding.cc — PyTorch CUDA memory snapshots from Python, over the
// library's one call (snapshot_analysis.h): memplan.analyze_snapshot(path)
// returns the document of `memplan snapshot --json` as a dict, with each
// device's window and iterations as memplan.Problem objects added;
// memplan.read_snapshot is the same without the allocator models. A pickle
// that would run code is refused (snapshot.h). memplan.snapshot_problem (in
// memplan/__init__.py) pickles a live torch.cuda.memory._snapshot() dict and
// reads those bytes here.
#include <filesystem>

#include "bindings.h"
#include "errors.h"
#include "memplan/snapshot_analysis.h"

namespace memplan::python {
namespace {

// The report as a dict: report_json's document (fields named once, in the
// library), plus what JSON cannot carry: the problems.
py::dict report_dict(const snapshot::SnapshotReport& report) {
  py::dict out = py::module_::import("json").attr("loads")(snapshot::report_json(report, {.indent = -1}));
  py::list devices = out["devices"];
  for (size_t k = 0; k < report.devices.size(); ++k) {
    const snapshot::DeviceAnalysis& d = report.devices[k];
    py::dict device = devices[k];
    device["problem"] = py::cast(d.problem);
    py::list iteration_problems;
    for (const snapshot::Iteration& span : d.iterations.spans) {
      iteration_problems.append(py::cast(snapshot::iteration_problem(d.window, span)));
    }
    device["iteration_problems"] = iteration_problems;
  }
  return out;
}

snapshot::AnalysisOptions options_from(py::handle device, std::string_view planner, bool simulate) {
  return {.device = device.is_none() ? -1 : static_cast<int>(int64_from(device, "device")),
          .planner = std::string(planner),
          .simulate = simulate};
}

// str, bytes or os.PathLike, as the path the library reads.
std::string path_from(py::handle path) {
  return py::str(py::module_::import("os").attr("fsdecode")(path)).cast<std::string>();
}

// Unknown planners are NotFound (UnknownPlannerError); a missing file is an
// IoError (FileError); the rest is about the input (InputError).
py::dict analyse(const std::string& path, const snapshot::AnalysisOptions& options) {
  return report_dict(value_or_raise(snapshot::analyze_snapshot(path, options), ErrorSource::kPlanner));
}

constexpr const char* kAnalyzeDoc =
    "Analyses a PyTorch CUDA memory snapshot (torch.cuda.memory._dump_snapshot) as `memplan snapshot\n"
    "--json` does, in one library call: the file is read as plain data (a pickle that would import or\n"
    "call code is refused: InputError naming the opcode and offset), each device's window is\n"
    "reconstructed, planned and replayed through the allocator models. Returns the JSON document as a\n"
    "dict ({'snapshot', 'format', 'alloc_conf', 'devices': [{'device', 'recorded', 'load_bytes',\n"
    "'planned', 'iterations', 'simulated', 'live_at_peak', 'ooms', 'warnings', ...}], 'warnings'};\n"
    "docs/snapshots.md lists every field), with each device's 'problem' (memplan.Problem of the\n"
    "window) and 'iteration_problems' added. `path`: str, bytes or os.PathLike; `device`: one device\n"
    "(default: every device); `planner`: for the window and the worst iteration; `simulate`: run the\n"
    "allocator models.";

}  // namespace

void bind_snapshot(py::module_& m) {
  m.def(
      "analyze_snapshot",
      [](py::object path, py::object device, const std::string& planner, bool simulate) {
        return analyse(path_from(path), options_from(device, planner, simulate));
      },
      py::arg("path"), py::arg("device") = py::none(), py::kw_only(), py::arg("planner") = std::string(kDefaultPlanner),
      py::arg("simulate") = true, kAnalyzeDoc);
  m.def(
      "read_snapshot",
      [](py::object path, py::object device) {
        return analyse(path_from(path), options_from(device, kDefaultPlanner, false));
      },
      py::arg("path"), py::arg("device") = py::none(),
      "analyze_snapshot(path, device, simulate=False): the same report without the allocator models.");
  m.def(
      "_snapshot_from_pickle_bytes",
      [](py::bytes data, py::object device, const std::string& source, bool simulate) {
        const std::string bytes = data;
        return report_dict(
            value_or_raise(snapshot::analyze_snapshot({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()},
                                                      source, options_from(device, kDefaultPlanner, simulate)),
                           ErrorSource::kPlanner));
      },
      py::arg("data"), py::arg("device") = py::none(), py::arg("source") = "<snapshot>", py::arg("simulate") = false,
      "analyze_snapshot for the bytes of a pickle (memplan.snapshot_problem pickles a live snapshot).");
}

}  // namespace memplan::python
