// The service benchmark's references: minimal gRPC callback servers for
// Simulator.Run and Simulator.CoSimulate that send precomputed realistic
// payloads (from the engine, on the benchmark's spec), run in a child
// process (this same binary with --serve-reference SPEC).
#pragma once

#include <string>

namespace tether::service_bench {

// Serves the references on 127.0.0.1:0, prints "listening on HOST:PORT" on
// stdout and returns 0 after SIGINT or SIGTERM. Dies on a bad spec.
int ServeReference(const std::string& spec_path);

}  // namespace tether::service_bench
