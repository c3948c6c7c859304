// Linked into a test binary (tests/CMakeLists.txt), counting_allocator.cc
// replaces every replaceable allocation function (operator new and new[],
// their nothrow, sized and aligned forms, and the matching deletes) by one
// that counts, then allocates with malloc: a test reads the count before
// and after the code under test to see whether that code allocated.
#pragma once

namespace tether::testing {

// Heap allocations made through operator new so far, in every thread.
long HeapAllocations();

}  // namespace tether::testing
