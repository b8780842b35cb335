// snapshot_diagnosis.h — the diagnosis step of analyze_snapshot (private to
// src/analysis): where a device's peak went and which settings would lower it.
#pragma once

#include "memplan/snapshot_analysis.h"

namespace memplan::snapshot {

// `analysis` has its window and models; `trace` is its device_trace, or
// nullptr when the models did not run (then no recommendations).
Diagnosis diagnose(const Snapshot& snapshot, const DeviceAnalysis& analysis, const simulate::DeviceTrace* trace);

}  // namespace memplan::snapshot
