#include "service/service_core.h"

#include <algorithm>
#include <string>
#include <thread>

#include <spdlog/fmt/fmt.h>

#include <spdlog/spdlog.h>

#include "service/rpc_common.h"

namespace tether::service {
namespace {

ServiceOptions Resolved(ServiceOptions options) {
  if (options.workers == 0) {
    options.workers = std::max(1u, std::thread::hardware_concurrency());
  }
  return options;
}

}  // namespace

ServiceCore::ServiceCore(const ServiceOptions& options, std::unique_ptr<Authenticator> auth)
    : options_(Resolved(options)),
      auth_(auth ? std::move(auth) : std::make_unique<Authenticator>(options_)),
      store_(options_.max_sessions, options_.session_idle_timeout),
      pool_(options_.workers, options_.worker_spin),
      compile_pool_(options_.compile_workers, std::chrono::microseconds(0)) {
  if (options_.stream_stall_timeout.count() > 0) watchdog_ = std::thread([this] { WatchStalls(); });
  store_.StartExpiry([](const Session& s) {
    spdlog::info("session expired: tenant={} session={} step={}", s.owner().name(), s.id(), [&] {
      v1::Session p;
      s.ToProto(&p);
      return p.step();
    }());
  });
}

ServiceCore::~ServiceCore() { StopWorkers(); }

void ServiceCore::Register(StreamBase* stream) {
  std::lock_guard<std::mutex> lock(streams_mu_);
  streams_.insert(stream);
}

void ServiceCore::Unregister(StreamBase* stream) {
  {
    std::lock_guard<std::mutex> lock(streams_mu_);
    streams_.erase(stream);
  }
  streams_cv_.notify_all();
}

void ServiceCore::InterruptStreams(const Session* session, const grpc::Status& status) {
  // Interrupt never calls into gRPC with a lock held by gRPC, and never
  // runs OnDone inline, so holding streams_mu_ here is safe.
  std::lock_guard<std::mutex> lock(streams_mu_);
  for (StreamBase* s : streams_) {
    if (session == nullptr || s->attached() == session) s->Interrupt(status);
  }
}

void ServiceCore::StreamEnded() {
  // Taking the lock orders this wake-up after a waiter's check.
  { std::lock_guard<std::mutex> lock(streams_mu_); }
  streams_cv_.notify_all();
}

void ServiceCore::BeginShutdown() { shutting_down_.store(true); }

bool ServiceCore::WaitForStreams(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(streams_mu_);
  return streams_cv_.wait_until(lock, deadline, [this] {
    return std::all_of(streams_.begin(), streams_.end(),
                       [](const StreamBase* s) { return s->ended(); });
  });
}

void ServiceCore::DrainStreams() {
  std::lock_guard<std::mutex> lock(streams_mu_);
  if (drained_) return;
  drained_ = true;
  const grpc::Status status(grpc::StatusCode::UNAVAILABLE,
                            "the server is shutting down and its grace (--shutdown-grace) ran out");
  for (StreamBase* s : streams_) s->Drain(status);
}

void ServiceCore::WatchStalls() {
  const auto timeout = options_.stream_stall_timeout;
  const auto period = std::clamp<std::chrono::milliseconds>(
      timeout / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
  const grpc::Status stalled(
      grpc::StatusCode::DEADLINE_EXCEEDED,
      fmt::format("the client read nothing for {} s (--stream-stall-timeout): the stream was "
                  "ended and its session given back, READY at its last computed step",
                  std::chrono::duration<double>(timeout).count()));
  std::unique_lock<std::mutex> lock(watch_mu_);
  while (!watch_cv_.wait_for(lock, period, [this] { return watch_stop_; })) {
    lock.unlock();
    {
      const auto before = StreamBase::Clock::now() - timeout;
      std::lock_guard<std::mutex> streams_lock(streams_mu_);
      for (StreamBase* s : streams_) s->CheckStall(before, stalled);
    }
    lock.lock();
  }
}

void ServiceCore::StopWorkers() {
  {
    std::lock_guard<std::mutex> lock(watch_mu_);
    watch_stop_ = true;
  }
  watch_cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  compile_pool_.Stop();
  pool_.Stop();
}

}  // namespace tether::service
