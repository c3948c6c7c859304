// The C++-client side of bench/fmu_remote_bench.cc: one CoSimulate
// session driven with the benchmark's schedule, each Exchange timed.
//
//   tether_fmu_remote_bench_client ADDRESS SPEC.json STEPS H
//
// Creates a session of SPEC on ADDRESS, opens a CoSimulate stream and
// sends STEPS requests (communication_step H, input Fx = Input(k),
// ON_FAILURE_DISCARD: what the remote FMU sends), then deletes the session.
// Prints "state" and the final t, q and v as hexadecimal floats (the
// driver's equal-work check), then one round-trip time per line in
// microseconds. A separate process from the driver: the driver loads the
// FMU, whose library registers Tether's protobuf messages, which this
// process registers too (protobuf aborts on a second registration).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/spec_json.h"
#include "fmu_remote_bench_schedule.h"
#include "tether/client.h"

int main(int argc, char** argv) {
  using namespace tether;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s ADDRESS SPEC.json STEPS H\n", argv[0]);
    return 2;
  }
  const std::string address = argv[1];
  std::ifstream in(argv[2], std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  v1::SimulationSpec spec;
  if (Status s = ParseSpecJson(text.str(), &spec, argv[2]); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 2;
  }
  const int steps = std::atoi(argv[3]);
  const double h = std::strtod(argv[4], nullptr);

  auto client = client::Client::Connect(address);
  v1::Session session;
  if (grpc::Status s = client->CreateSession(spec, "fmu_remote_bench client", &session); !s.ok()) {
    std::fprintf(stderr, "CreateSession: %s\n", s.error_message().c_str());
    return 1;
  }
  auto stream = client->CoSimulate(session.id());
  std::vector<double> micros;
  micros.reserve(static_cast<size_t>(steps));
  v1::CoSimulateResponse response;
  for (int k = 0; k < steps; ++k) {
    v1::CoSimulateRequest request;
    request.set_communication_step(h);
    request.set_on_failure(v1::CoSimulateRequest::ON_FAILURE_DISCARD);
    (*request.mutable_inputs())["Fx"] = fmu_remote_bench::Input(k);
    const auto start = std::chrono::steady_clock::now();
    grpc::Status s = stream->Exchange(std::move(request), &response);
    const auto end = std::chrono::steady_clock::now();
    if (!s.ok() || response.discarded()) {
      std::fprintf(stderr, "step %d: %s\n", k,
                   s.ok() ? response.discard_reason().c_str() : s.error_message().c_str());
      return 1;
    }
    micros.push_back(std::chrono::duration<double, std::micro>(end - start).count());
  }
  if (grpc::Status s = stream->Finish(); !s.ok()) {
    std::fprintf(stderr, "Finish: %s\n", s.error_message().c_str());
    return 1;
  }
  static_cast<void>(client->DeleteSession(session.id()));
  const v1::Frame& f = response.frame();
  std::printf("state %a", f.t());
  for (double x : f.q()) std::printf(" %a", x);
  for (double x : f.v()) std::printf(" %a", x);
  std::printf("\n");
  for (double us : micros) std::printf("%.3f\n", us);
  return 0;
}
