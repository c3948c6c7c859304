#include "service/memory_budget.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace tether::service {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
// What the process needs besides sessions and compilations: its code, gRPC's
// threads and buffers, the logger.
constexpr int64_t kProcessReserve = 64 * kMiB;

// The first line of a small file, or empty.
std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (in) std::getline(in, line);
  return line;
}

// A decimal byte count ("max" and anything else: 0).
int64_t ParseBytes(const std::string& text) {
  if (text.empty() || text.size() > 19) return 0;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return 0;
    v = v * 10 + (c - '0');
  }
  return v;
}

// The cgroup limit of this process: v2's memory.max of its own cgroup (the
// "0::PATH" line of /proc/self/cgroup), else v1's memory.limit_in_bytes
// (a value near 2^63 means none).
int64_t CgroupLimit() {
  std::ifstream cg("/proc/self/cgroup");
  std::string line, v2_path, v1_path;
  while (std::getline(cg, line)) {
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
    const auto colon = line.find(':');
    const auto second = line.find(':', colon + 1);
    if (colon != std::string::npos && second != std::string::npos) {
      std::stringstream controllers(line.substr(colon + 1, second - colon - 1));
      std::string c;
      while (std::getline(controllers, c, ','))
        if (c == "memory") v1_path = line.substr(second + 1);
    }
  }
  for (const std::string& dir : {"/sys/fs/cgroup" + v2_path, std::string("/sys/fs/cgroup")}) {
    if (int64_t v = ParseBytes(FirstLine(dir + "/memory.max")); v > 0) return v;
  }
  if (!v1_path.empty()) {
    for (const std::string& dir :
         {"/sys/fs/cgroup/memory" + v1_path, std::string("/sys/fs/cgroup/memory")}) {
      const int64_t v = ParseBytes(FirstLine(dir + "/memory.limit_in_bytes"));
      if (v > 0 && v < (int64_t{1} << 60)) return v;
    }
  }
  return 0;
}

int64_t MemTotal() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  while (in >> key) {
    if (key == "MemTotal:" && in >> kib) return kib * 1024;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

}  // namespace

MemoryLimit DetectMemoryLimit() {
  MemoryLimit best;
  auto consider = [&](int64_t bytes, const char* source) {
    if (bytes > 0 && (best.bytes == 0 || bytes < best.bytes)) best = {bytes, source};
  };
  consider(MemTotal(), "MemTotal (/proc/meminfo)");
  consider(CgroupLimit(), "the cgroup's memory limit");
  struct rlimit as {};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY &&
      as.rlim_cur < static_cast<rlim_t>(int64_t{1} << 62)) {
    consider(static_cast<int64_t>(as.rlim_cur) / 2, "half of RLIMIT_AS (ulimit -v)");
  }
  return best;
}

int64_t AutomaticMemoryBudget(const MemoryLimit& limit, std::size_t compile_workers,
                              int64_t compile_bytes) {
  if (limit.bytes <= 0) return std::numeric_limits<int64_t>::max();
  const int64_t compiles = static_cast<int64_t>(compile_workers) * (compile_bytes / 4 * 5);
  // Four fifths of what is left: the allocator keeps more resident than the
  // sessions hold (compile memory freed between their blocks; measured up
  // to 1.25x, bench/session_memory_bench.cc).
  return std::max((limit.bytes - kProcessReserve - compiles) / 5 * 4, limit.bytes / 8);
}

std::string FormatBytes(int64_t bytes) {
  char buf[48];
  if (bytes == std::numeric_limits<int64_t>::max()) return "unlimited";
  if (bytes < 10 * 1024) {
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  } else if (bytes < kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024);
  } else if (bytes < 10 * 1024 * kMiB) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / kMiB);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024 * kMiB));
  }
  return buf;
}

// --- MemoryCharge ------------------------------------------------------------

MemoryCharge& MemoryCharge::operator=(MemoryCharge&& other) noexcept {
  if (this != &other) {
    Reset();
    budget_ = other.budget_;
    tenant_ = other.tenant_;
    bytes_ = other.bytes_;
    other.budget_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

void MemoryCharge::Reset() {
  if (budget_ && bytes_ > 0) budget_->Give(tenant_, bytes_);
  budget_ = nullptr;
  bytes_ = 0;
}

// --- MemoryBudget ------------------------------------------------------------

MemoryBudget::MemoryBudget(int64_t server_bytes, std::string server_source, int64_t tenant_bytes,
                           std::string tenant_source)
    : server_bytes_(server_bytes > 0 ? server_bytes : std::numeric_limits<int64_t>::max()),
      server_source_(std::move(server_source)),
      tenant_bytes_(tenant_bytes),
      tenant_source_(std::move(tenant_source)) {}

int64_t MemoryBudget::quota_of(const Tenant* tenant) const {
  if (tenant && tenant->max_memory() > 0) return tenant->max_memory();
  return tenant_bytes_ > 0 ? tenant_bytes_ : std::numeric_limits<int64_t>::max();
}

Status MemoryBudget::Take(const Tenant* tenant, int64_t bytes, std::string_view what, bool force) {
  const int64_t quota = quota_of(tenant);
  std::lock_guard<std::mutex> lock(mu_);
  int64_t& held = by_tenant_[tenant];
  auto refuse = [&](int64_t limit, int64_t in_use, const std::string& whose,
                    const std::string& source, const std::string& subject) {
    if (held == 0) by_tenant_.erase(tenant);
    const std::string needs = std::string(what) + " needs " + FormatBytes(bytes) + " more memory";
    return ResourceExhausted(
        needs + "; " + whose + " holds " + FormatBytes(in_use) + " of its " + FormatBytes(limit) +
            " (" + source + "); delete sessions or snapshots first",
        ErrorSubject{"", subject,
                     source + ": at most " + FormatBytes(limit) + " held by " + whose + "; " +
                         needs + " with " + FormatBytes(in_use) + " held"});
  };
  if (!force && bytes > server_bytes_ - used_) {
    return refuse(server_bytes_, used_, "the server", server_source_, "--memory-budget");
  }
  if (!force && bytes > quota - held) {
    const std::string name = tenant ? tenant->name() : "unlimited";
    const std::string source =
        tenant && tenant->max_memory() > 0 ? tenant->memory_quota() : tenant_source_;
    return refuse(quota, held, "tenant '" + name + "'", source, "tenant:" + name);
  }
  held += bytes;
  used_ += bytes;
  return Status::Ok();
}

Status MemoryBudget::Charge(const Tenant* tenant, int64_t bytes, std::string_view what,
                            MemoryCharge* charge) {
  charge->Reset();
  return Resize(tenant, bytes, what, charge);
}

MemoryCharge MemoryBudget::Force(const Tenant* tenant, int64_t bytes) {
  MemoryCharge charge;
  (void)Resize(tenant, bytes, "", &charge, true);
  return charge;
}

Status MemoryBudget::Resize(const Tenant* tenant, int64_t bytes, std::string_view what,
                            MemoryCharge* charge, bool force) {
  bytes = std::max<int64_t>(bytes, 0);
  if (charge->budget_ && charge->budget_ != this) charge->Reset();
  const int64_t held = charge->budget_ ? charge->bytes_ : 0;
  if (bytes <= held) {
    if (bytes < held) Give(charge->tenant_, held - bytes);
    charge->bytes_ = bytes;
    return Status::Ok();
  }
  if (Status s = Take(tenant, bytes - held, what, force); !s.ok()) return s;
  charge->budget_ = this;
  charge->tenant_ = tenant;
  charge->bytes_ = bytes;
  return Status::Ok();
}

void MemoryBudget::Give(const Tenant* tenant, int64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ -= bytes;
  auto it = by_tenant_.find(tenant);
  if (it == by_tenant_.end()) return;
  it->second -= bytes;
  if (it->second <= 0) by_tenant_.erase(it);
}

int64_t MemoryBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

int64_t MemoryBudget::used_by(const Tenant* tenant) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_tenant_.find(tenant);
  return it == by_tenant_.end() ? 0 : it->second;
}

}  // namespace tether::service
