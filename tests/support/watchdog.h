// watchdog.h — stops a test that hangs. It is not a timing check.
//
// Tests assert on what a program does (a flag acknowledged, a thread joined,
// a counter moved), never on how long it took: a slower or busier machine
// must not fail a correct program. But a test of "the helper stops when
// cancelled" would hang forever if the helper did not, so such a test arms a
// watchdog for the wait, at many times the expected duration (minutes where
// seconds are expected). If the wait outlives it, the watchdog prints that
// it fired, what was being waited for, and ends the test process with
// status 1; the test is reported as failed, with that message.
//
//   {
//     Watchdog watchdog(std::chrono::minutes(5), "SatHelper::join after the cancel");
//     helper.join();
//   }  // disarmed here
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

namespace memplan::test_support {

class Watchdog {
 public:
  Watchdog(std::chrono::seconds limit, std::string waiting_for)
      : waiting_for_(std::move(waiting_for)), thread_([this, limit] { watch(limit); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      disarmed_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void watch(std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, limit, [this] { return disarmed_; })) return;
    std::fprintf(stderr,
                 "WATCHDOG: still waiting for %s after %lld s; the test is stopped as hung "
                 "(a watchdog against hangs, not a timing check)\n",
                 waiting_for_.c_str(), static_cast<long long>(limit.count()));
    std::fflush(stderr);
    std::_Exit(1);
  }

  std::string waiting_for_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool disarmed_ = false;
  std::thread thread_;  // last: started once the members it reads exist
};

}  // namespace memplan::test_support
