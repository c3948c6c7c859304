// What the service benchmark reads about processes and the machine, from
// /proc and getrusage (Linux).
#pragma once

#include <sys/types.h>

#include <string>

namespace tether::service_bench {

// VmRSS of `pid`, KiB (-1 when unreadable).
long VmRssKiB(pid_t pid);
// User + system CPU seconds of `pid` (all its threads); NAN when unreadable.
double ProcessCpuSeconds(pid_t pid);
// User + system CPU seconds of this process.
double SelfCpuSeconds();
// CPU seconds of the calling thread.
double ThreadCpuSeconds();
// Machine-wide busy CPU seconds (all cores, /proc/stat: everything but idle
// and iowait).
double MachineBusySeconds();
// /proc/loadavg's three averages, "a b c".
std::string LoadAverage();
// The first "model name" of /proc/cpuinfo, or "unknown".
std::string CpuModel();

}  // namespace tether::service_bench
