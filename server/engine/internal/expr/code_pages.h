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
#include <exception>
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

// WriteCodePages through an assembler: an Emitter (an Xbyak code generator
// over the buffer, with Prologue and Epilogue) writes the prologue, then
// `body(emitter)` the code (false: it cannot), then the epilogue. An
// exception (Xbyak's, for an operand it cannot encode or a write past the
// buffer; an allocation's) means no code, as false does.
template <class Emitter, class Body>
bool EmitCodePages(size_t max_bytes, Body body, CodePages* out) {
  return WriteCodePages(
      max_bytes,
      [&](void* buffer, size_t size) -> size_t {
        try {
          Emitter e(buffer, size);
          e.Prologue();
          if (!body(e)) return 0;
          e.Epilogue();
          return e.getSize();
        } catch (const std::exception&) {
          return 0;
        }
      },
      out);
}

}  // namespace tether
