// What a fuzz target does on a finding: print what was violated and abort,
// which libFuzzer reports as a crash (saving the input) and the replay
// (replay_main.cc) as a failed test.
#pragma once

#include <cstdio>
#include <cstdlib>

// Aborts, naming the condition and `message` (a printf format), unless
// `condition` holds.
#define TETHER_FUZZ_CHECK(condition, ...)                                                     \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s: ", __FILE__, __LINE__, #condition); \
      std::fprintf(stderr, __VA_ARGS__);                                                      \
      std::fprintf(stderr, "\n");                                                             \
      std::abort();                                                                           \
    }                                                                                         \
  } while (false)

// Inputs above this many bytes are ignored by every target, so that one
// input runs in milliseconds (libFuzzer is also run with -max_len).
inline constexpr unsigned long kFuzzMaxInputBytes = 4096;
