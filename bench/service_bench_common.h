// What every part of the service benchmark (bench/service_bench*.cc) shares:
// the clock, fatal errors, progress lines on stderr, and the engine-alone
// communication step that both the reference payloads and part (2) use.
#pragma once

#include <chrono>
#include <string>

#include <google/protobuf/repeated_ptr_field.h>

#include "engine/simulation.h"

namespace tether::service_bench {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d);

// Prints "tether_service_bench: <message>" and exits 1 at once (children get
// SIGTERM through PR_SET_PDEATHSIG).
[[noreturn]] void Die(const std::string& message);

// "# <printf text>" on stderr, flushed.
void Progress(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// One communication step of `comm` seconds, as CoSimulate does it: a run
// to t + comm emitting only its last frame, with the certificate on.
void EngineCommunicationStep(tether::Simulation* sim, double comm,
                             google::protobuf::RepeatedPtrField<v1::Frame>* frames,
                             v1::Certificate* certificate);

}  // namespace tether::service_bench
