// The heap bytes a container holds: the unit of a session's memory
// accounting (Simulation::memory_use, engine/simulation.h). Each owner of
// heap memory in the engine has a heap_bytes() that sums its containers with
// these; tests/memory_use_test.cc checks the sums against what glibc's
// allocator says a simulation holds, so a member left out of a sum fails a
// test instead of going uncounted.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tether {

// glibc's allocator adds an 8-byte header to a block, rounds it up to 16
// bytes and makes none smaller than 32: 8 to 23 bytes a block besides the
// bytes asked for, more for the smallest; 24 covers the engine's mix
// (tests/memory_use_test.cc).
inline constexpr int64_t kAllocationOverhead = 24;

template <class T>
int64_t HeapBytes(const std::vector<T>& v) {
  return v.capacity() == 0 ? 0
                           : static_cast<int64_t>(v.capacity() * sizeof(T)) + kAllocationOverhead;
}

// A string longer than the small-string buffer (15 bytes in libstdc++).
inline int64_t HeapBytes(const std::string& s) {
  return s.capacity() <= 15 ? 0 : static_cast<int64_t>(s.capacity()) + 1 + kAllocationOverhead;
}

inline int64_t HeapBytes(const std::vector<std::string>& v) {
  int64_t bytes = v.capacity() == 0 ? 0
                                    : static_cast<int64_t>(v.capacity() * sizeof(std::string)) +
                                          kAllocationOverhead;
  for (const std::string& s : v) bytes += HeapBytes(s);
  return bytes;
}

template <class... Parts>
int64_t HeapBytesOf(const Parts&... parts) {
  return (int64_t{0} + ... + HeapBytes(parts));
}

}  // namespace tether
