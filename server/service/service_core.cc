#include "service/service_core.h"

#include <algorithm>
#include <thread>

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

ServiceCore::ServiceCore(const ServiceOptions& options)
    : options_(Resolved(options)),
      store_(options_.max_sessions, options_.session_idle_timeout),
      pool_(options_.workers, options_.worker_spin) {
  store_.StartExpiry([](const Session& s) {
    spdlog::info("session expired: session={} step={}", s.id(), [&] {
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

void ServiceCore::BeginShutdown() {
  if (shutting_down_.exchange(true)) return;
  InterruptStreams(nullptr, Unavailable());
}

bool ServiceCore::WaitForStreams(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(streams_mu_);
  return streams_cv_.wait_until(lock, deadline, [this] { return streams_.empty(); });
}

void ServiceCore::StopWorkers() { pool_.Stop(); }

}  // namespace tether::service
