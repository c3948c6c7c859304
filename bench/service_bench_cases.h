// The service benchmark's four measurements, each returning one row of the
// table (numbers in the row, explanations appended to `notes`). The servers
// are started by the caller (bench/service_bench.cc); every loop here is
// bounded in count and in time, and every failure dies.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/server_process.h"
#include "tether/v1/simulation.pb.h"

namespace tether::service_bench {

struct Options {
  std::string server;
  std::string spec_path;
  unsigned workers = 0;
  int sessions = 1000;
  uint64_t session_steps = 10000;
  int idle_sessions = 1000;
  bool quick = false;
  std::string parts = "1234";  // which of (1)-(4) to run (for profiling)
};

struct Row {
  std::string what, tether, reference, ratio, target, met;
};

// (1) Run frames/s, Tether against the reference Run (and the engine alone).
Row PartRunStream(const Options& o, const v1::SimulationSpec& spec,
                  test_support::ServerProcess& tether_srv, test_support::ServerProcess& ref_srv,
                  std::vector<std::string>* notes);
// (2) CoSimulate round trips against empty and Tether-sized ping-pongs.
Row PartCoSimulate(const Options& o, const v1::SimulationSpec& spec,
                   test_support::ServerProcess& tether_srv, test_support::ServerProcess& ref_srv,
                   std::vector<std::string>* notes);
// (3) o.sessions concurrent sessions against workers x the engine alone.
Row PartConcurrent(const Options& o, const v1::SimulationSpec& spec,
                   test_support::ServerProcess& srv, unsigned workers,
                   std::vector<std::string>* notes);
// (4) Server RSS per idle session.
Row PartIdleMemory(const Options& o, const v1::SimulationSpec& spec,
                   test_support::ServerProcess& srv, std::vector<std::string>* notes);

}  // namespace tether::service_bench
