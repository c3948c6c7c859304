// Counts every heap allocation of the test binary it is linked into
// (counting_allocator.h).
#include "counting_allocator.h"

#include <atomic>
#include <cstdlib>
#include <new>

// All the replaceable allocation functions (scalar and array; the nothrow,
// sized and aligned forms forward to these or are replaced too), each
// counting. noinline: once inlined, GCC sees malloc'd memory reach operator
// delete and warns -Wmismatched-new-delete; out of line it sees a
// new/delete pair.
static std::atomic<long> g_allocations{0};

long tether::testing::HeapAllocations() { return g_allocations.load(); }

namespace {
void* CountedAllocation(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* CountedAlignedAllocation(std::size_t n, std::align_val_t alignment) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const std::size_t a = static_cast<std::size_t>(alignment);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

[[gnu::noinline]] void* operator new(std::size_t n) { return CountedAllocation(n); }
[[gnu::noinline]] void* operator new[](std::size_t n) { return CountedAllocation(n); }
[[gnu::noinline]] void* operator new(std::size_t n, std::align_val_t a) {
  return CountedAlignedAllocation(n, a);
}
[[gnu::noinline]] void* operator new[](std::size_t n, std::align_val_t a) {
  return CountedAlignedAllocation(n, a);
}
// The nothrow forms too (std::stable_sort's temporary buffer uses them): an
// allocation they made with the default operator new would reach the free()
// below, which ASan reports as alloc-dealloc-mismatch.
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return CountedAllocation(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
[[gnu::noinline]] void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  try {
    return CountedAllocation(n);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
[[gnu::noinline]] void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  std::free(p);
}
