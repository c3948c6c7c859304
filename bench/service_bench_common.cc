#include "service_bench_common.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace tether::service_bench {

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "tether_service_bench: %s\n", message.c_str());
  std::fflush(stderr);
  std::_Exit(1);  // children get SIGTERM through PR_SET_PDEATHSIG
}

void Progress(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fputs("# ", stderr);
  std::vfprintf(stderr, fmt, ap);
  std::fputc('\n', stderr);
  std::fflush(stderr);
  va_end(ap);
}

void EngineCommunicationStep(tether::Simulation* sim, double comm,
                             google::protobuf::RepeatedPtrField<v1::Frame>* frames,
                             v1::Certificate* certificate) {
  tether::RunOptions co;
  co.until_time = sim->time() + comm;
  co.every = UINT64_MAX;
  co.emit_start = false;
  co.certificate = true;
  frames->Clear();
  if (auto s = sim->BeginRun(co); !s.ok()) Die(s.message());
  while (!sim->run_done()) {
    if (auto s = sim->Advance(100, frames); !s.ok()) Die(s.message());
  }
  sim->GetCertificate(certificate);
}

}  // namespace tether::service_bench
