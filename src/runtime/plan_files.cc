// plan_files.cc — loading and saving plan files for the adapters (plan_files.h).
#include "runtime/plan_files.h"

namespace memplan::runtime {
namespace {

struct Counts {
  size_t units = 0, variants = 0;
};

Counts count(const PlanFile& file) {
  Counts c;
  for (const SavedUnit& u : file.units) {
    if (u.variants.empty()) continue;
    ++c.units;
    c.variants += u.variants.size();
  }
  return c;
}

std::string counted(const PlanFile& file) {
  const Counts c = count(file);
  return std::to_string(c.units) + (c.units == 1 ? " unit, " : " units, ") + std::to_string(c.variants) +
         (c.variants == 1 ? " variant" : " variants");
}

}  // namespace

std::string load_plans_line(const std::string& path, std::string_view adapter, std::string_view program,
                            const std::function<Status(const PlanFile&)>& take) {
  StatusOr<PlanFile> file = load_plan_file(path);
  if (!file.ok()) return "plans ignored, learning from scratch: " + file.status().message();
  const std::string mismatch = plan_file_mismatch(*file, adapter, program);
  if (!mismatch.empty()) return "plans in " + path + " ignored, learning from scratch: " + mismatch;
  const Status taken = take(*file);
  if (!taken.ok()) return "plans in " + path + " ignored, learning from scratch: " + taken.message();
  return "serving plans from " + path + " (" + counted(*file) + ") from the first iteration";
}

std::string save_plans_line(const PlanFile& file, const std::string& path) {
  const Status saved = save_plan_file(file, path);
  if (!saved.ok()) return "plans not saved: " + saved.message();
  return "saved plans to " + path + " (" + counted(file) + ")";
}

}  // namespace memplan::runtime
