// progress.h — what a long command shows while it works, and how Ctrl-C stops
// it cleanly.
//
// Interrupt: while one lives, the first SIGINT sets a flag (handed to the
// planners as PlanOptions::cancel, which they poll) instead of killing the
// process, so the command can still write the best plan found; the default
// action is restored at once, so a second Ctrl-C kills as usual.
//
// ProgressLine: while one lives, and only when stderr is a terminal, a
// thread redraws one status line on stderr every half second
// ("memplan: planning resnet50.csv ... 3.5 s of 10 s"); it erases the line
// when destroyed. Output to a file or a pipe gets nothing.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace memplan::cli {

class Interrupt {
 public:
  Interrupt();
  ~Interrupt();
  Interrupt(const Interrupt&) = delete;
  Interrupt& operator=(const Interrupt&) = delete;

  const std::atomic<bool>* flag() const;
  bool interrupted() const;
};

// Exit status of a command stopped by SIGINT (128 + 2, as the shell reports it).
inline constexpr int kExitInterrupted = 130;

class ProgressLine {
 public:
  // `what` is shown with the elapsed time, and the limit when > 0.
  ProgressLine(std::string what, double limit_seconds);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  void run();

  std::string what_;
  double limit_seconds_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool drew_ = false;
  std::thread thread_;
};

}  // namespace memplan::cli
