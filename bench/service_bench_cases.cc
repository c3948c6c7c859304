#include "service_bench_cases.h"

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "engine/simulation.h"
#include "service_bench_common.h"
#include "service_bench_process_stats.h"
#include "service_bench_statistics.h"
#include "tether/client.h"
#include "tether/v1/simulator.grpc.pb.h"

namespace tether::service_bench {

using test_support::ServerProcess;

namespace {

std::unique_ptr<tether::client::Client> Connect(const std::string& address) {
  tether::client::ConnectOptions o;
  o.wait_for_ready = true;
  o.timeout = std::chrono::seconds(120);
  return tether::client::Client::Connect(address, o);
}

std::string CreateSession(tether::client::Client* c, const v1::SimulationSpec& spec) {
  v1::Session s;
  grpc::Status st = c->CreateSession(spec, "bench", &s);
  if (!st.ok()) Die("CreateSession: " + st.error_message());
  return s.id();
}

// (1) Run frames/s.
struct RunResult {
  uint64_t frames = 0;
  double seconds = 0;
  size_t frame_bytes = 0;  // serialized size of a frame from the middle
};

RunResult TimedRun(tether::client::Client* c, const std::string& session_id, uint64_t steps) {
  v1::RunRequest r;
  r.set_session_id(session_id);
  r.set_steps(steps);
  r.set_every(1);
  RunResult out;
  const uint64_t sample = steps / 2;
  auto t0 = Clock::now();
  grpc::Status st = c->Run(
      r,
      [&](const v1::Frame& f) {
        if (out.frames == sample) out.frame_bytes = f.ByteSizeLong();
        ++out.frames;
        return true;
      },
      nullptr);
  out.seconds = Seconds(Clock::now() - t0);
  if (!st.ok()) Die("Run: " + st.error_message());
  if (out.frames != steps + 1) {
    Die("Run delivered " + std::to_string(out.frames) + " frames, expected " +
        std::to_string(steps + 1));
  }
  return out;
}

// The engine alone emitting every step (frames appended in batches of 256,
// as the server builds its messages), one thread. Returns frames per second
// (wall); *cpu_us receives thread CPU us per frame.
double EngineFramesPerSecond(const v1::SimulationSpec& spec, uint64_t steps, double* cpu_us) {
  auto created = tether::Simulation::Create(spec);
  if (!created.ok()) Die(created.status().message());
  std::unique_ptr<tether::Simulation> sim = std::move(created).value();
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  tether::RunOptions run;
  run.steps = steps;
  run.every = 1;
  run.emit_start = true;
  run.certificate = true;
  uint64_t n = 0;
  const double c0 = ThreadCpuSeconds();
  const auto t0 = Clock::now();
  if (auto s = sim->BeginRun(run); !s.ok()) Die(s.message());
  while (!sim->run_done()) {
    frames.Clear();
    if (auto s = sim->Advance(256, &frames); !s.ok()) Die(s.message());
    n += static_cast<uint64_t>(frames.size());
  }
  const double wall = Seconds(Clock::now() - t0);
  *cpu_us = (ThreadCpuSeconds() - c0) / static_cast<double>(n) * 1e6;
  return static_cast<double>(n) / wall;
}

}  // namespace

Row PartRunStream(const Options& o, const v1::SimulationSpec& spec, ServerProcess& tether_srv,
                  ServerProcess& ref_srv, std::vector<std::string>* notes) {
  Progress("(1) Run stream, every=1: calibrating");
  auto tc = Connect(tether_srv.address());
  auto rc = Connect(ref_srv.address());
  // Warm-up (both servers), then calibration: ~0.7 s per Tether run.
  {
    std::string id = CreateSession(tc.get(), spec);
    TimedRun(tc.get(), id, 20000);
    tc->DeleteSession(id);
    TimedRun(rc.get(), "ref", 20000);
  }
  std::string id0 = CreateSession(tc.get(), spec);
  RunResult cal = TimedRun(tc.get(), id0, 50000);
  tc->DeleteSession(id0);
  const double cal_fps = static_cast<double>(cal.frames) / cal.seconds;
  const uint64_t steps =
      std::clamp<uint64_t>(static_cast<uint64_t>(cal_fps * (o.quick ? 0.2 : 0.7)), 20000, 1000000);
  const int reps = o.quick ? 2 : 7;
  Progress("(1) %d interleaved repetitions of %" PRIu64 " steps each (Tether ~%s frames/s)", reps,
           steps, Si(cal_fps).c_str());

  std::vector<double> t_fps, r_fps;
  size_t t_bytes = 0, r_bytes = 0;
  double t_srv_cpu = 0, r_srv_cpu = 0, t_cli_cpu = 0, r_cli_cpu = 0;
  uint64_t t_frames = 0, r_frames = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(o.quick ? 20 : 75);
  for (int i = 0; i < reps && Clock::now() < deadline; ++i) {
    std::string id = CreateSession(tc.get(), spec);
    double s0 = ProcessCpuSeconds(tether_srv.pid()), c0 = SelfCpuSeconds();
    RunResult t = TimedRun(tc.get(), id, steps);
    t_srv_cpu += ProcessCpuSeconds(tether_srv.pid()) - s0;
    t_cli_cpu += SelfCpuSeconds() - c0;
    tc->DeleteSession(id);
    s0 = ProcessCpuSeconds(ref_srv.pid());
    c0 = SelfCpuSeconds();
    RunResult r = TimedRun(rc.get(), "ref", steps);
    r_srv_cpu += ProcessCpuSeconds(ref_srv.pid()) - s0;
    r_cli_cpu += SelfCpuSeconds() - c0;
    t_fps.push_back(static_cast<double>(t.frames) / t.seconds);
    r_fps.push_back(static_cast<double>(r.frames) / r.seconds);
    t_frames += t.frames;
    r_frames += r.frames;
    t_bytes = t.frame_bytes;
    r_bytes = r.frame_bytes;
    Progress("(1) rep %d: Tether %s frames/s, reference %s frames/s", i + 1,
             Si(t_fps.back()).c_str(), Si(r_fps.back()).c_str());
  }
  double eng_cpu_us = 0;
  const double eng_fps = EngineFramesPerSecond(spec, steps, &eng_cpu_us);
  const double tm = Median(t_fps), rm = Median(r_fps), ratio = tm / rm;
  notes->push_back(
      "(1) the engine alone, emitting every step into frames (no gRPC, one thread, "
      "this process): " +
      Si(eng_fps) + " frames/s (" + Fmt("%.2f", eng_cpu_us) + " us CPU per frame), i.e. " +
      Fmt("%.2f", eng_fps / rm) +
      " of the reference: the most a service adding zero cost could reach here");
  notes->push_back("(1) " + std::to_string(t_fps.size()) + " interleaved runs of " +
                   std::to_string(steps) + " steps each; frame " + std::to_string(t_bytes) +
                   " B (Tether) vs " + std::to_string(r_bytes) +
                   " B (reference), 256 frames per RunResponse; Tether min/max " +
                   Si(*std::min_element(t_fps.begin(), t_fps.end())) + "/" +
                   Si(*std::max_element(t_fps.begin(), t_fps.end())) + ", reference min/max " +
                   Si(*std::min_element(r_fps.begin(), r_fps.end())) + "/" +
                   Si(*std::max_element(r_fps.begin(), r_fps.end())) + " frames/s");
  notes->push_back(
      "(1) CPU per 1M frames: tether-server " +
      Fmt("%.2f", t_srv_cpu / static_cast<double>(t_frames) * 1e6) + " s, reference server " +
      Fmt("%.2f", r_srv_cpu / static_cast<double>(r_frames) * 1e6) + " s; client " +
      Fmt("%.2f", t_cli_cpu / static_cast<double>(t_frames) * 1e6) + " s (Tether) vs " +
      Fmt("%.2f", r_cli_cpu / static_cast<double>(r_frames) * 1e6) + " s (reference)");
  return {"(1) Run stream, circle pendulum, every=1, 256 frames/msg: frames/s received",
          Si(tm),
          Si(rm) + " (precomputed frames)",
          Fmt("%.2f", ratio),
          ">= 0.5",
          ratio >= 0.5 ? "yes" : "no"};
}

// (2) CoSimulate round trips.
Row PartCoSimulate(const Options& o, const v1::SimulationSpec& spec, ServerProcess& tether_srv,
                   ServerProcess& ref_srv, std::vector<std::string>* notes) {
  Progress("(2) CoSimulate round trips");
  auto tc = Connect(tether_srv.address());
  auto rc = Connect(ref_srv.address());
  const double h = spec.integrator().step_size();
  const double comm = 10 * h;
  std::string id = CreateSession(tc.get(), spec);
  auto t_stream = tc->CoSimulate(id);
  auto e_stream = rc->CoSimulate("empty");
  auto s_stream = rc->CoSimulate("sized");
  std::map<std::string, double> no_inputs;
  v1::Frame frame;
  v1::Certificate cert;
  size_t t_resp_bytes = 0, s_resp_bytes = 0;
  uint64_t steps_per_trip = 0;
  auto step = [&](tether::client::CoSimulation* s, const char* what) {
    auto t0 = Clock::now();
    grpc::Status st = s->DoStep(comm, no_inputs, &frame, &cert);
    double us = Seconds(Clock::now() - t0) * 1e6;
    if (!st.ok()) Die(std::string("CoSimulate (") + what + "): " + st.error_message());
    return us;
  };
  const int warm = o.quick ? 50 : 300;
  for (int i = 0; i < warm; ++i) {
    step(t_stream.get(), "tether");
    if (i == warm - 1) {
      steps_per_trip = cert.steps();
      v1::CoSimulateResponse resp;
      *resp.mutable_frame() = frame;
      *resp.mutable_certificate() = cert;
      t_resp_bytes = resp.ByteSizeLong();
    }
    step(e_stream.get(), "empty");
    step(s_stream.get(), "sized");
    if (i == warm - 1) {
      v1::CoSimulateResponse resp;
      *resp.mutable_frame() = frame;
      *resp.mutable_certificate() = cert;
      s_resp_bytes = resp.ByteSizeLong();
    }
  }
  std::vector<double> t_us, e_us, s_us;
  const int blocks = o.quick ? 2 : 10, per_block = o.quick ? 100 : 500;
  const auto deadline = Clock::now() + std::chrono::seconds(o.quick ? 15 : 60);
  double t_srv_cpu = 0, e_srv_cpu = 0;
  for (int b = 0; b < blocks && Clock::now() < deadline; ++b) {
    double c0 = ProcessCpuSeconds(tether_srv.pid());
    for (int i = 0; i < per_block; ++i) t_us.push_back(step(t_stream.get(), "tether"));
    t_srv_cpu += ProcessCpuSeconds(tether_srv.pid()) - c0;
    c0 = ProcessCpuSeconds(ref_srv.pid());
    for (int i = 0; i < per_block; ++i) e_us.push_back(step(e_stream.get(), "empty"));
    e_srv_cpu += ProcessCpuSeconds(ref_srv.pid()) - c0;
    for (int i = 0; i < per_block; ++i) s_us.push_back(step(s_stream.get(), "sized"));
  }
  t_stream->Finish();
  e_stream->Finish();
  s_stream->Finish();
  tc->DeleteSession(id);

  // The engine alone: the same 10-step communication step, in this process.
  std::vector<double> eng_us;
  {
    auto created = tether::Simulation::Create(spec);
    if (!created.ok()) Die(created.status().message());
    std::unique_ptr<tether::Simulation> sim = std::move(created).value();
    google::protobuf::RepeatedPtrField<v1::Frame> frames;
    for (int i = 0; i < 2000; ++i) {
      auto t0 = Clock::now();
      v1::Certificate c;
      EngineCommunicationStep(sim.get(), comm, &frames, &c);
      eng_us.push_back(Seconds(Clock::now() - t0) * 1e6);
    }
  }

  const double tm = Median(t_us), em = Median(e_us), sm = Median(s_us);
  const double ratio = tm / em;
  notes->push_back(
      "(2) " + std::to_string(t_us.size()) + " round trips each, interleaved in blocks of " +
      std::to_string(per_block) + "; communication_step = " + Fmt("%g", comm) +
      " s = " + std::to_string(steps_per_trip) +
      " RK4 steps (certificate.steps); Tether response " + std::to_string(t_resp_bytes) +
      " B. Medians: Tether " + Fmt("%.1f", tm) + " us (mean " + Fmt("%.1f", Mean(t_us)) + ", p90 " +
      Fmt("%.1f", Percentile(t_us, 0.9)) + "), empty ping-pong " + Fmt("%.1f", em) + " us (mean " +
      Fmt("%.1f", Mean(e_us)) + ", p90 " + Fmt("%.1f", Percentile(e_us, 0.9)) +
      "), ping-pong with a " + std::to_string(s_resp_bytes) + " B response " + Fmt("%.1f", sm) +
      " us (ratio " + Fmt("%.2f", tm / sm) + "x); the engine alone takes " +
      Fmt("%.1f", Median(eng_us)) + " us for the same 10-step window (median, this process)");
  notes->push_back("(2) server CPU per round trip: tether-server " +
                   Fmt("%.1f", t_srv_cpu / static_cast<double>(t_us.size()) * 1e6) +
                   " us, empty ping-pong server " +
                   Fmt("%.1f", e_srv_cpu / static_cast<double>(e_us.size()) * 1e6) + " us");
  return {"(2) CoSimulate round trip, 10 RK4 steps: median latency",
          Fmt("%.1f us", tm),
          Fmt("%.1f us (empty ping-pong)", em),
          Fmt("%.2fx", ratio),
          "<= 1.3x",
          ratio <= 1.3 ? "yes" : "no"};
}

namespace {

// (3) The engine alone, one thread: sessions of `steps` steps as the server
// runs them (fresh simulation, first run emits step 0 and the last step,
// certificate on). Returns steps/s.
double EngineStepsPerSecond(const v1::SimulationSpec& spec, uint64_t steps, double budget_s,
                            double* cpu_us_per_step) {
  std::unique_ptr<tether::Simulation> sim;
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  uint64_t total = 0;
  double timed = 0, cpu = 0;
  const auto deadline = Clock::now() + std::chrono::duration<double>(budget_s);
  for (int i = 0; i < 1000 && (i < 2 || Clock::now() < deadline); ++i) {
    auto created = tether::Simulation::Create(spec);
    if (!created.ok()) Die(created.status().message());
    sim = std::move(created).value();
    tether::RunOptions run;
    run.steps = steps;
    run.every = steps;
    run.emit_start = true;
    run.certificate = true;
    frames.Clear();
    const double c0 = ThreadCpuSeconds();
    auto t0 = Clock::now();
    if (auto s = sim->BeginRun(run); !s.ok()) Die(s.message());
    while (!sim->run_done()) {
      if (auto s = sim->Advance(steps, &frames); !s.ok()) Die(s.message());
    }
    v1::Certificate c;
    sim->GetCertificate(&c);
    timed += Seconds(Clock::now() - t0);
    cpu += ThreadCpuSeconds() - c0;
    total += sim->step();
  }
  *cpu_us_per_step = cpu / static_cast<double>(total) * 1e6;
  return static_cast<double>(total) / timed;
}

class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void CountDown() {
    std::lock_guard<std::mutex> l(mu_);
    if (--n_ == 0) cv_.notify_all();
  }
  bool WaitUntil(Clock::time_point deadline) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_until(l, deadline, [this] { return n_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

// One Run on the callback client API (1000 of them in flight at once).
class AsyncRun final : public grpc::ClientReadReactor<v1::RunResponse> {
 public:
  AsyncRun(v1::Simulator::Stub* stub, const std::string& id, uint64_t steps, Latch* latch)
      : stub_(stub), latch_(latch) {
    request_.set_session_id(id);
    request_.set_steps(steps);
    request_.set_every(steps);
  }
  void Start() {
    stub_->async()->Run(&context_, &request_, this);
    StartRead(&response_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    frames_ += static_cast<uint64_t>(response_.frames_size());
    if (response_.has_certificate()) certificate_steps_ = response_.certificate().steps();
    StartRead(&response_);
  }
  void OnDone(const grpc::Status& s) override {
    status_ = s;
    end_ = Clock::now();
    latch_->CountDown();
  }
  const grpc::Status& status() const { return status_; }
  uint64_t frames() const { return frames_; }
  uint64_t certificate_steps() const { return certificate_steps_; }
  Clock::time_point end() const { return end_; }

 private:
  v1::Simulator::Stub* stub_;
  Latch* latch_;
  grpc::ClientContext context_;
  v1::RunRequest request_;
  v1::RunResponse response_;
  uint64_t frames_ = 0, certificate_steps_ = 0;
  grpc::Status status_;
  Clock::time_point end_;
};

}  // namespace

Row PartConcurrent(const Options& o, const v1::SimulationSpec& spec, ServerProcess& srv,
                   unsigned workers, std::vector<std::string>* notes) {
  const int n = o.sessions;
  uint64_t steps = o.session_steps;
  Progress("(3) engine alone, one thread, %" PRIu64 "-step sessions", steps);
  double cpu_before = 0, cpu_after = 0;
  const double eng_before = EngineStepsPerSecond(spec, steps, o.quick ? 0.5 : 2.0, &cpu_before);
  Progress("(3) engine: %s steps/s", Si(eng_before).c_str());
  const double predicted =
      static_cast<double>(n) * static_cast<double>(steps) / (workers * eng_before);
  Progress("(3) %d sessions x %" PRIu64 " steps; ideal time on %u workers %.1f s", n, steps,
           workers, predicted);

  auto c = Connect(srv.address());
  std::vector<std::string> ids;
  ids.reserve(static_cast<size_t>(n));
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) ids.push_back(CreateSession(c.get(), spec));
  const double create_s = Seconds(Clock::now() - t0);
  Progress("(3) created %d sessions in %.2f s; running them", n, create_s);

  auto stub = v1::Simulator::NewStub(c->channel());
  Latch latch(n);
  std::vector<std::unique_ptr<AsyncRun>> runs;
  for (int i = 0; i < n; ++i) {
    runs.push_back(
        std::make_unique<AsyncRun>(stub.get(), ids[static_cast<size_t>(i)], steps, &latch));
  }
  const double srv_cpu0 = ProcessCpuSeconds(srv.pid()), cli_cpu0 = SelfCpuSeconds();
  const double busy0 = MachineBusySeconds();
  const auto start = Clock::now();
  for (auto& r : runs) r->Start();
  const int budget = o.quick ? 60 : 200;
  bool all = latch.WaitUntil(start + std::chrono::seconds(budget));
  if (!all) {
    Progress("(3) not finished after %d s: cancelling", budget);
    for (auto& r : runs) r->Cancel();
    if (!latch.WaitUntil(Clock::now() + std::chrono::seconds(30))) {
      Die("(3) runs did not end 30 s after cancelling");
    }
  }
  Clock::time_point last = start;
  uint64_t done_steps = 0;
  int ok = 0;
  for (auto& r : runs) {
    last = std::max(last, r->end());
    if (r->status().ok()) {
      ++ok;
      done_steps += r->certificate_steps();
    }
  }
  const double wall = Seconds(last - start);
  const double srv_cpu = ProcessCpuSeconds(srv.pid()) - srv_cpu0;
  const double cli_cpu = SelfCpuSeconds() - cli_cpu0;
  const double busy = MachineBusySeconds() - busy0;
  const double machine_wall = Seconds(Clock::now() - start);
  if (ok != n) Progress("(3) only %d of %d runs finished OK", ok, n);
  const double aggregate = static_cast<double>(done_steps) / wall;
  Progress("(3) %d runs, %" PRIu64 " steps in %.2f s: %s steps/s", ok, done_steps, wall,
           Si(aggregate).c_str());
  for (const auto& id : ids) c->DeleteSession(id);

  const double eng_after = EngineStepsPerSecond(spec, steps, o.quick ? 0.5 : 2.0, &cpu_after);
  const double eng_cpu_us = 0.5 * (cpu_before + cpu_after);
  const double eng = 0.5 * (eng_before + eng_after);
  const double reference = workers * eng;
  const double ratio = aggregate / reference;
  notes->push_back(
      "(3) " + std::to_string(ok) + "/" + std::to_string(n) +
      " concurrent Runs (callback "
      "client, one channel) of " +
      std::to_string(steps) + " steps, every=" + std::to_string(steps) +
      ", certificate on: " + std::to_string(done_steps) + " steps in " + Fmt("%.2f", wall) +
      " s wall (creating the sessions, not timed: " + Fmt("%.2f", create_s) +
      " s). Engine alone (same spec, certificate on, fresh " + std::to_string(steps) +
      "-step sessions, one thread, this process): " + Si(eng_before) + " steps/s before, " +
      Si(eng_after) + " after; reference = " + std::to_string(workers) + " workers x " + Si(eng) +
      ". CPU during the runs: "
      "tether-server " +
      Fmt("%.1f", srv_cpu) + " s (" + Fmt("%.2f", srv_cpu / wall) + " cores; " +
      Fmt("%.2f", srv_cpu / static_cast<double>(done_steps) * 1e6) +
      " us CPU/step vs the engine's " + Fmt("%.2f", eng_cpu_us) +
      " us thread CPU/step alone), client " + Fmt("%.1f", cli_cpu) +
      " s; the whole machine was busy " + Fmt("%.2f", busy / machine_wall) + " of " +
      std::to_string(std::thread::hardware_concurrency()) + " cores, so other processes took " +
      Fmt("%.2f", std::max(0.0, busy - srv_cpu - cli_cpu) / machine_wall) +
      " cores. CPU-normalized (engine CPU/step over server CPU/step, i.e. the ratio if "
      "tether-server had its " +
      std::to_string(workers) + " cores to itself): " +
      Fmt("%.2f", eng_cpu_us / (srv_cpu / static_cast<double>(done_steps) * 1e6)));
  return {"(3) " + std::to_string(n) + " sessions x " + std::to_string(steps) +
              " steps concurrently: aggregate steps/s",
          Si(aggregate),
          std::to_string(workers) + " workers x " + Si(eng) + " = " + Si(reference),
          Fmt("%.2f", ratio),
          ">= 0.8",
          ratio >= 0.8 ? "yes" : "no"};
}

// (4) RSS per idle session.
Row PartIdleMemory(const Options& o, const v1::SimulationSpec& spec, ServerProcess& srv,
                   std::vector<std::string>* notes) {
  const int n = o.idle_sessions;
  Progress("(4) RSS of %d idle sessions", n);
  auto c = Connect(srv.address());
  // Warm-up: one session created and deleted, so that first-call
  // allocations (connection, threads, protobuf/gRPC statics) are in the
  // baseline.
  c->DeleteSession(CreateSession(c.get(), spec));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long before = VmRssKiB(srv.pid());
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back(CreateSession(c.get(), spec));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long after = VmRssKiB(srv.pid());
  for (const auto& id : ids) c->DeleteSession(id);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const long deleted = VmRssKiB(srv.pid());
  if (before < 0 || after < 0) Die("cannot read VmRSS of the server");
  const double per = static_cast<double>(after - before) / n;
  notes->push_back("(4) tether-server VmRSS " + std::to_string(before) + " KiB before, " +
                   std::to_string(after) + " KiB with " + std::to_string(n) + " idle sessions, " +
                   std::to_string(deleted) + " KiB after deleting them (glibc keeps freed memory)");
  return {"(4) server RSS per idle session (circle pendulum)",
          Fmt("%.1f KiB", per),
          "-",
          "-",
          "(report)",
          "-"};
}

}  // namespace tether::service_bench
