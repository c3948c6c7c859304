// Pages of generated machine code (NativeTape, NativeLaneCode): mapped
// writable, written, then made read-only and executable, never both
// writable and executable. One place for the mapping both translations
// share.
//
// Memory: `max_bytes` of address space are reserved while the code is
// written (backed by memory only where written); what the code does not
// use is unmapped before it runs.
#pragma once

#include "engine/internal/base/internal.h"

#include <cstddef>
#include <functional>

namespace tether {

struct CodePages {
  void* pages = nullptr;  // the code's first byte
  size_t mapped = 0;      // bytes mapped (whole pages), for munmap
  size_t code_bytes = 0;  // bytes of code
};

// Maps at least `max_bytes` writable, lets `write(buffer, size)` write the
// code into it (it returns the bytes written, or 0 when it could not write
// the code: no exception may escape it), then keeps the pages written,
// read-only and executable. False, with nothing mapped, where `write` gave
// 0 or the system refused a step (on systems without mmap, always).
bool WriteCodePages(size_t max_bytes, const std::function<size_t(void*, size_t)>& write,
                    CodePages* out);
// Unmaps what WriteCodePages mapped.
void ReleaseCodePages(const CodePages& pages);

}  // namespace tether
