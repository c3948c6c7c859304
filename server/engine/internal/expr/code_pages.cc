#include "engine/internal/expr/code_pages.h"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace tether {

#if defined(__linux__)

bool WriteCodePages(size_t max_bytes, const std::function<size_t(void*, size_t)>& write,
                    CodePages* out) {
  const long page_size = sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return false;
  const size_t page = static_cast<size_t>(page_size);
  auto round_up = [page](size_t n) { return (n + page - 1) / page * page; };
  // Written straight into its own pages, mapped writable (not executable)
  // for the largest code it could need; only the pages written are backed
  // by memory, and the rest are unmapped before it runs.
  const size_t reserved = round_up(max_bytes);
  void* pages = mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED) return false;
  const size_t code_bytes = write(pages, reserved);
  if (code_bytes == 0 || code_bytes > reserved) {
    munmap(pages, reserved);
    return false;
  }
  const size_t mapped = round_up(code_bytes);
  if (mapped < reserved) munmap(static_cast<char*>(pages) + mapped, reserved - mapped);
  if (mprotect(pages, mapped, PROT_READ | PROT_EXEC) != 0) {
    munmap(pages, mapped);
    return false;
  }
  *out = {pages, mapped, code_bytes};
  return true;
}

void ReleaseCodePages(const CodePages& pages) {
  if (pages.pages != nullptr) munmap(pages.pages, pages.mapped);
}

#else

bool WriteCodePages(size_t, const std::function<size_t(void*, size_t)>&, CodePages*) {
  return false;
}
void ReleaseCodePages(const CodePages&) {}

#endif

}  // namespace tether
