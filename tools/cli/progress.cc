// progress.cc — Interrupt and ProgressLine (see progress.h).
#include "progress.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>

namespace memplan::cli {
namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
  g_interrupted.store(true, std::memory_order_relaxed);
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C kills
}

}  // namespace

Interrupt::Interrupt() {
  g_interrupted.store(false, std::memory_order_relaxed);
  std::signal(SIGINT, on_sigint);
}

Interrupt::~Interrupt() { std::signal(SIGINT, SIG_DFL); }

const std::atomic<bool>* Interrupt::flag() const { return &g_interrupted; }

bool Interrupt::interrupted() const { return g_interrupted.load(std::memory_order_relaxed); }

ProgressLine::ProgressLine(std::string what, double limit_seconds)
    : what_(std::move(what)), limit_seconds_(limit_seconds) {
  if (isatty(STDERR_FILENO)) thread_ = std::thread([this] { run(); });
}

ProgressLine::~ProgressLine() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (drew_) std::fputs("\r\033[K", stderr);  // erase the status line
}

void ProgressLine::run() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  // Short commands draw nothing: the first line comes after a second.
  wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; });
  while (!stop_) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (limit_seconds_ > 0) {
      std::fprintf(stderr, "\r\033[Kmemplan: %s ... %.1f s of %.1f s (Ctrl-C: stop, keep the best plan)", what_.c_str(),
                   elapsed, limit_seconds_);
    } else {
      std::fprintf(stderr, "\r\033[Kmemplan: %s ... %.1f s (Ctrl-C: stop, keep the best plan)", what_.c_str(), elapsed);
    }
    std::fflush(stderr);
    drew_ = true;
    wake_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stop_; });
  }
}

}  // namespace memplan::cli
