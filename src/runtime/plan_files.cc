// plan_files.cc — loading and saving plan files for the adapters (plan_files.h).
#include "runtime/plan_files.h"

namespace memplan::runtime {
std::string load_plans_line(const std::string& path, std::string_view adapter, std::string_view program,
                            const std::function<Status(const PlanFile&)>& take) {
  StatusOr<PlanFile> file = load_plan_file(path);
  if (!file.ok()) return "plans ignored, learning from scratch: " + file.status().message();
  const std::string mismatch = plan_file_mismatch(*file, adapter, program);
  if (!mismatch.empty()) return "plans in " + path + " ignored, learning from scratch: " + mismatch;
  const Status taken = take(*file);
  if (!taken.ok()) return "plans in " + path + " ignored, learning from scratch: " + taken.message();
  return "serving plans from " + path + " (" + plan_file_summary(*file) + ") from the first iteration";
}

std::string save_plans_line(const PlanFile& file, const std::string& path) {
  // A run that learnt nothing (a helper process, a run too short to plan) must not erase a good file.
  if (file.units.empty()) return "no plans learnt; " + path + " left as it was";
  const Status saved = save_plan_file(file, path);
  if (!saved.ok()) return "plans not saved: " + saved.message();
  return "saved plans to " + path + " (" + plan_file_summary(file) + ")";
}

}  // namespace memplan::runtime
