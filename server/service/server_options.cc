#include "service/server_options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <spdlog/fmt/fmt.h>

namespace tether::service {
namespace {

std::optional<uint64_t> ParseUint(const std::string& s) {
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// A finite number of seconds in 0..max_seconds, as milliseconds (rounded);
// with `whole_ms`, a non-zero value must also be at least 1 ms, so that no
// value rounds to 0 (which means something else, e.g. "never").
std::optional<std::chrono::milliseconds> ParseSeconds(const std::string& s, double max_seconds,
                                                      bool whole_ms = false) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v) || v < 0 || v > max_seconds) {
    return std::nullopt;
  }
  if (whole_ms && v != 0 && v < 0.001) return std::nullopt;
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(v * 1000)));
}

// `*out` = the integer in `value` when it lies in lo..hi.
template <typename T>
bool SetUint(const std::string& value, uint64_t lo, uint64_t hi, T* out) {
  auto v = ParseUint(value);
  if (!v || *v < lo || *v > hi) return false;
  *out = static_cast<T>(*v);
  return true;
}

std::string ShowSeconds(std::chrono::milliseconds ms) {
  return fmt::format("{}", std::chrono::duration<double>(ms).count());
}

bool ValidListen(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  auto port = ParseUint(s.substr(colon + 1));
  return port && *port <= 65535;
}

// The longest --session-idle-timeout: 30 days. Longer ones would overflow
// the store's nanosecond clock arithmetic (at about 292 years) long before
// they meant anything; 0 is the way to say "never".
constexpr double kMaxIdleTimeoutSeconds = 30 * 24 * 3600;

const ServerFlag kFlags[] = {
    {"listen", "HOST:PORT", "TETHER_LISTEN",
     "default {default}\n"
     "(port 0 picks a free port; use 0.0.0.0 to\n"
     "listen on every interface)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       if (!ValidListen(v)) {
         *expected = "expected HOST:PORT with PORT in 0..65535";
         return false;
       }
       o->listen = v;
       return true;
     },
     [](const ServerOptions& o) { return o.listen; }},
    {"workers", "N", "TETHER_WORKERS", "default: hardware threads",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..1024";
       return SetUint(v, 1, 1024, &o->service.workers);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.workers); }},
    {"worker-spin", "US", "TETHER_WORKER_SPIN",
     "default {default}: microseconds a worker\n"
     "that just stepped a co-simulation polls for the next\n"
     "step before it sleeps (0: sleep at once; saves CPU,\n"
     "adds a wake-up to each co-simulation step)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected microseconds in 0..1000000";
       uint64_t us = 0;
       if (!SetUint(v, 0, 1000000, &us)) return false;
       o->service.worker_spin = std::chrono::microseconds(us);
       return true;
     },
     [](const ServerOptions& o) { return std::to_string(o.service.worker_spin.count()); }},
    {"max-sessions", "N", "TETHER_MAX_SESSIONS", "default {default}",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..10000000";
       return SetUint(v, 1, 10000000, &o->service.max_sessions);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.max_sessions); }},
    {"tenant-max-sessions", "N", "TETHER_TENANT_MAX_SESSIONS",
     "default {default} (0: --max-sessions):\n"
     "sessions one tenant may hold (a tokens file's\n"
     "max_sessions=N overrides it per tenant)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 0..10000000 (0: --max-sessions)";
       return SetUint(v, 0, 10000000, &o->service.tenant_max_sessions);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.tenant_max_sessions); }},
    {"tenant-max-streams", "N", "TETHER_TENANT_MAX_STREAMS",
     "default {default} (0: as many as the tenant's\n"
     "sessions): concurrent Run + CoSimulate streams of\n"
     "one tenant (tokens file: max_streams=N)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 0..10000000 (0: the tenant's session quota)";
       return SetUint(v, 0, 10000000, &o->service.tenant_max_streams);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.tenant_max_streams); }},
    {"ensemble-max-instances", "N", "TETHER_ENSEMBLE_MAX_INSTANCES",
     "default {default}: instances one RunEnsemble call\n"
     "may run",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..100000000";
       return SetUint(v, 1, 100000000, &o->service.ensemble_max_instances);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.ensemble_max_instances); }},
    {"ensemble-max-instance-steps", "N", "TETHER_ENSEMBLE_MAX_INSTANCE_STEPS",
     "default {default}: instances x steps one\n"
     "RunEnsemble call may take",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..10^15";
       return SetUint(v, 1, uint64_t{1000000000000000}, &o->service.ensemble_max_instance_steps);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.ensemble_max_instance_steps); }},
    {"ensemble-max-compilations", "N", "TETHER_ENSEMBLE_MAX_COMPILATIONS",
     "default {default}: parameter sets one RunEnsemble\n"
     "call may compile (bounded before it runs;\n"
     "one ensemble compile at a time per server)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..1000000";
       return SetUint(v, 1, 1000000, &o->service.ensemble_max_compilations);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.ensemble_max_compilations); }},
    {"memory-budget", "BYTES", "TETHER_MEMORY_BUDGET",
     "default {default} (0: automatic: 4/5 of the\n"
     "cgroup's memory limit, half of RLIMIT_AS or the\n"
     "machine's memory, less 64 MiB and 1.25 x\n"
     "--compile-memory-budget per compile worker): bytes\n"
     "all sessions and snapshots may hold; beyond:\n"
     "RESOURCE_EXHAUSTED naming --memory-budget",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected =
           "expected 0 (automatic) or an integer in 1048576..4398046511104 (1 MiB to 4 TiB)";
       if (v == "0") return SetUint(v, 0, 0, &o->service.memory_budget);
       return SetUint(v, uint64_t{1} << 20, uint64_t{1} << 42, &o->service.memory_budget);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.memory_budget); }},
    {"tenant-max-memory", "BYTES", "TETHER_TENANT_MAX_MEMORY",
     "default {default} (0: --memory-budget alone):\n"
     "bytes one tenant's sessions and snapshots may hold\n"
     "(a tokens file's max_memory=BYTES overrides it)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 0 (no quota of its own) or an integer in 1048576..4398046511104";
       if (v == "0") return SetUint(v, 0, 0, &o->service.tenant_max_memory);
       return SetUint(v, uint64_t{1} << 20, uint64_t{1} << 42, &o->service.tenant_max_memory);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.tenant_max_memory); }},
    {"max-message-bytes", "N", "TETHER_MAX_MESSAGE_BYTES", "default {default}",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 4096..2147483647";
       return SetUint(v, 4096, 2147483647, &o->service.max_message_bytes);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.max_message_bytes); }},
    {"session-idle-timeout", "S", "TETHER_SESSION_IDLE_TIMEOUT",
     "default {default} (0: never; else\n"
     "0.001..2592000, i.e. 1 ms to 30 days)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 0 (never) or seconds in 0.001..2592000 (1 ms to 30 days)";
       auto ms = ParseSeconds(v, kMaxIdleTimeoutSeconds, /*whole_ms=*/true);
       if (!ms) return false;
       o->service.session_idle_timeout = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.service.session_idle_timeout); }},
    {"stream-stall-timeout", "S", "TETHER_STREAM_STALL_TIMEOUT",
     "default {default}: a Run, CoSimulate or\n"
     "RunEnsemble whose client leaves a message unread\n"
     "this long (one more per message the transport\n"
     "holds ahead of it, at most 8) ends with\n"
     "DEADLINE_EXCEEDED and gives its session back,\n"
     "READY at its last computed step; unread for as\n"
     "long again, the call is cancelled (0: never; else\n"
     "0.001..86400)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 0 (never) or seconds in 0.001..86400";
       auto ms = ParseSeconds(v, 86400, /*whole_ms=*/true);
       if (!ms) return false;
       o->service.stream_stall_timeout = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.service.stream_stall_timeout); }},
    {"compile-workers", "N", "TETHER_COMPILE_WORKERS",
     "default {default}: threads that compile\n"
     "(Validate, Evaluate, CreateSession), apart from\n"
     "the workers, so compiles never delay streams",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..1024";
       return SetUint(v, 1, 1024, &o->service.compile_workers);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.compile_workers); }},
    {"max-queued-compiles", "N", "TETHER_MAX_QUEUED_COMPILES",
     "default {default}: Validate, Evaluate,\n"
     "CreateSession and RunEnsemble calls waiting for the\n"
     "compile lane; one more is RESOURCE_EXHAUSTED",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..100000";
       return SetUint(v, 1, 100000, &o->service.max_queued_compiles);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.max_queued_compiles); }},
    {"tenant-max-queued-compiles", "N", "TETHER_TENANT_MAX_QUEUED_COMPILES",
     "default {default} (half of --max-queued-compiles):\n"
     "one tenant's compiles waiting; one more is\n"
     "RESOURCE_EXHAUSTED, and the lane serves tenants in turn",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 0..100000";
       return SetUint(v, 0, 100000, &o->service.tenant_max_queued_compiles);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.tenant_max_queued_compiles); }},
    {"max-extra-workers", "N", "TETHER_MAX_EXTRA_WORKERS",
     "default {default} (as many as --workers): threads\n"
     "started while every worker is busy, for tenants\n"
     "that have nothing running (fairness)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 0..1024";
       return SetUint(v, 0, 1024, &o->service.max_extra_workers);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.max_extra_workers); }},
    {"max-snapshots", "N", "TETHER_MAX_SNAPSHOTS",
     "default {default}: snapshots a session keeps\n"
     "(CreateSnapshot); one more drops the oldest",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..100000";
       return SetUint(v, 1, 100000, &o->service.max_snapshots);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.max_snapshots); }},
    {"max-compile-nodes", "N", "TETHER_MAX_COMPILE_NODES",
     "default {default}: expression nodes one\n"
     "compilation may create (its expressions and their\n"
     "derivatives; about 100 bytes each); beyond:\n"
     "RESOURCE_EXHAUSTED naming the expression",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1000..1000000000";
       return SetUint(v, 1000, 1000000000, &o->service.compile.max_nodes);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.compile.max_nodes); }},
    {"max-derivative-nodes", "N", "TETHER_MAX_DERIVATIVE_NODES",
     "default {default}: (node, variable) pairs one\n"
     "compilation may differentiate (about 20 bytes each)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1000..10000000000";
       return SetUint(v, 1000, 10000000000, &o->service.compile.max_derivative_nodes);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.compile.max_derivative_nodes); }},
    {"max-tape-length", "N", "TETHER_MAX_TAPE_LENGTH",
     "default {default}: instructions of each\n"
     "evaluation tape of a compiled description",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1000..1000000000";
       return SetUint(v, 1000, 1000000000, &o->service.compile.max_tape_length);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.compile.max_tape_length); }},
    {"max-dense-kkt-work", "N", "TETHER_MAX_DENSE_KKT_WORK",
     "default {default}: multiply-adds one evaluation's\n"
     "KKT solve may take on the dense path (a mass matrix\n"
     "that is not diagonal, or few constraints); beyond:\n"
     "RESOURCE_EXHAUSTED naming system, before any evaluation",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1000..1000000000000";
       return SetUint(v, 1000, 1000000000000, &o->service.compile.max_dense_kkt_work);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.compile.max_dense_kkt_work); }},
    {"compile-memory-budget", "BYTES", "TETHER_COMPILE_MEMORY_BUDGET",
     "default {default}: bytes one compilation's\n"
     "expressions, their derivatives and memos may hold\n"
     "(checked every few thousand operations); beyond:\n"
     "RESOURCE_EXHAUSTED naming the expression",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1048576..68719476736 (1 MiB to 64 GiB)";
       return SetUint(v, uint64_t{1} << 20, uint64_t{1} << 36, &o->service.compile.max_bytes);
     },
     [](const ServerOptions& o) { return std::to_string(o.service.compile.max_bytes); }},
    {"compile-time-budget", "S", "TETHER_COMPILE_TIME_BUDGET",
     "default {default}: seconds of CPU time one\n"
     "compilation may take, and at most 3 times that of\n"
     "wall-clock time (0: unlimited; a client's\n"
     "deadline and shutdown stop it too)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected seconds in 0..3600";
       auto ms = ParseSeconds(v, 3600);
       if (!ms) return false;
       o->service.compile.time_budget = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.service.compile.time_budget); }},
    {"shutdown-grace", "S", "TETHER_SHUTDOWN_GRACE", "default {default}",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected seconds in 0..3600";
       auto ms = ParseSeconds(v, 3600);
       if (!ms) return false;
       o->shutdown_grace = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.shutdown_grace); }},
    {"keepalive-time", "S", "TETHER_KEEPALIVE_TIME",
     "default {default}: ping a connection quiet for\n"
     "this long (1..86400)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected seconds in 1..86400";
       auto ms = ParseSeconds(v, 86400, /*whole_ms=*/true);
       if (!ms || *ms < std::chrono::seconds(1)) return false;
       o->keepalive_time = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.keepalive_time); }},
    {"keepalive-timeout", "S", "TETHER_KEEPALIVE_TIMEOUT",
     "default {default}: close a connection whose\n"
     "ping is not answered within this (0.001..3600)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected seconds in 0.001..3600";
       auto ms = ParseSeconds(v, 3600, /*whole_ms=*/true);
       if (!ms || ms->count() == 0) return false;
       o->keepalive_timeout = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.keepalive_timeout); }},
    {"max-connection-idle", "S", "TETHER_MAX_CONNECTION_IDLE",
     "default {default}: close a connection without\n"
     "calls for this long (0: never; else 0.001..604800)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 0 (never) or seconds in 0.001..604800";
       auto ms = ParseSeconds(v, 604800, /*whole_ms=*/true);
       if (!ms) return false;
       o->max_connection_idle = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.max_connection_idle); }},
    {"max-streams-per-connection", "N", "TETHER_MAX_STREAMS_PER_CONNECTION",
     "default {default}: calls running at once on one\n"
     "connection (HTTP/2 streams; 1..100000)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected an integer in 1..100000";
       return SetUint(v, 1, 100000, &o->max_streams_per_connection);
     },
     [](const ServerOptions& o) { return std::to_string(o.max_streams_per_connection); }},
    {"tls-cert", "FILE", "TETHER_TLS_CERT",
     "PEM certificate chain: serve TLS (with\n"
     "--tls-key)",
     [](const std::string& v, ServerOptions* o, std::string*) {
       o->tls_cert = v;
       return true;
     },
     [](const ServerOptions& o) { return o.tls_cert; }},
    {"tls-key", "FILE", "TETHER_TLS_KEY", "PEM private key of --tls-cert",
     [](const std::string& v, ServerOptions* o, std::string*) {
       o->tls_key = v;
       return true;
     },
     [](const ServerOptions& o) { return o.tls_key; }},
    {"tls-client-ca", "FILE", "TETHER_TLS_CLIENT_CA",
     "PEM CA certificates: require and verify\n"
     "client certificates (mTLS)",
     [](const std::string& v, ServerOptions* o, std::string*) {
       o->tls_client_ca = v;
       return true;
     },
     [](const ServerOptions& o) { return o.tls_client_ca; }},
    {"tokens-file", "FILE", "TETHER_TOKENS_FILE",
     "bearer tokens, one 'TENANT TOKEN [expires=...\n"
     "max_sessions=N max_streams=N max_memory=BYTES]'\n"
     "a line: every\n"
     "tether.v1 call needs 'authorization: Bearer\n"
     "TOKEN' and sees only its tenant's sessions\n"
     "(or the file's text in TETHER_TOKENS)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected a file name";
       if (v.empty()) return false;
       o->tokens_file = v;
       return true;
     },
     [](const ServerOptions& o) { return o.tokens_file; }},
    {"tokens-reload-interval", "S", "TETHER_TOKENS_RELOAD_INTERVAL",
     "default {default}: read --tokens-file again every\n"
     "S seconds; a change (a token revoked or added)\n"
     "is in force for new calls within S (0: only at\n"
     "start-up; else 0.1..3600)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 0 (only at start-up) or seconds in 0.1..3600";
       auto ms = ParseSeconds(v, 3600, /*whole_ms=*/true);
       if (!ms || (ms->count() > 0 && ms->count() < 100)) return false;
       o->tokens_reload_interval = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.tokens_reload_interval); }},
    {"state-dir", "DIR", "TETHER_STATE_DIR",
     "sessions survive a restart: written to DIR when\n"
     "the server drains (SIGTERM) and served again from\n"
     "it at start-up, under the same ids (default: none)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected a directory name";
       if (v.empty()) return false;
       o->service.state_dir = v;
       return true;
     },
     [](const ServerOptions& o) { return o.service.state_dir; }},
    {"checkpoint-interval", "S", "TETHER_CHECKPOINT_INTERVAL",
     "default {default}: with --state-dir (or\n"
     "--session-store), also write the sessions that\n"
     "changed every S seconds, so a\n"
     "crash loses at most about S (0: only at drain;\n"
     "else 0.01..86400)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 0 (only at drain) or seconds in 0.01..86400";
       auto ms = ParseSeconds(v, 86400, /*whole_ms=*/true);
       if (!ms || (ms->count() > 0 && ms->count() < 10)) return false;
       o->service.checkpoint_interval = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.service.checkpoint_interval); }},
    {"session-store", "URL", "TETHER_SESSION_STORE",
     "redis://HOST:PORT: sessions live in a Redis\n"
     "shared by every replica, each run by the replica\n"
     "holding its lease (default: none, sessions live\n"
     "in this process; not with --state-dir)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected redis://HOST:PORT";
       if (v.rfind("redis://", 0) != 0 || !ValidListen(v.substr(8))) return false;
       o->service.session_store = v;
       return true;
     },
     [](const ServerOptions& o) { return o.service.session_store; }},
    {"lease-ttl", "S", "TETHER_LEASE_TTL",
     "default {default}: with --session-store, a\n"
     "replica's liveness key in the store expires S\n"
     "seconds after its last renewal (one per S/3),\n"
     "and with it every session lease the replica\n"
     "holds (0.1..60)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected seconds in 0.1..60";
       auto ms = ParseSeconds(v, 60, /*whole_ms=*/true);
       if (!ms || ms->count() < 100) return false;
       o->service.lease_ttl = *ms;
       return true;
     },
     [](const ServerOptions& o) { return ShowSeconds(o.service.lease_ttl); }},
    {"write-through", "true|false", "TETHER_WRITE_THROUGH",
     "default {default}: with --session-store, send a\n"
     "CoSimulate step's response only once the state\n"
     "after it is in the store",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 1, true, 0 or false";
       if (v == "1" || v == "true") {
         o->service.write_through = true;
       } else if (v == "0" || v == "false") {
         o->service.write_through = false;
       } else {
         return false;
       }
       return true;
     },
     [](const ServerOptions& o) {
       return std::string(o.service.write_through ? "true" : "false");
     }},
    {"insecure", "true|false", "TETHER_INSECURE",
     "default {default}: true allows a non-loopback\n"
     "--listen without TLS and tokens (refused\n"
     "otherwise)",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 1, true, 0 or false";
       if (v == "1" || v == "true") {
         o->insecure = true;
       } else if (v == "0" || v == "false") {
         o->insecure = false;
       } else {
         return false;
       }
       return true;
     },
     [](const ServerOptions& o) { return std::string(o.insecure ? "true" : "false"); }},
    {"strict-file-modes", "true|false", "TETHER_STRICT_FILE_MODES",
     "default {default}: refuse to start when --tls-key\n"
     "or --tokens-file is readable or writable by\n"
     "others (expected 0600, or 0640 with the\n"
     "server's group); false only warns",
     [](const std::string& v, ServerOptions* o, std::string* expected) {
       *expected = "expected 1, true, 0 or false";
       if (v == "1" || v == "true") {
         o->strict_file_modes = true;
       } else if (v == "0" || v == "false") {
         o->strict_file_modes = false;
       } else {
         return false;
       }
       return true;
     },
     [](const ServerOptions& o) { return std::string(o.strict_file_modes ? "true" : "false"); }},
    {"log-level", "LEVEL", "TETHER_LOG_LEVEL", "trace|debug|info|warn|error|off ({default})",
     [](const std::string& v, ServerOptions* o, std::string*) {
       o->log_level = v;
       return true;
     },
     [](const ServerOptions& o) { return o.log_level; }},
    {"log-format", "text|json", "TETHER_LOG_FORMAT", "default {default}",
     [](const std::string& v, ServerOptions* o, std::string*) {
       o->log_format = v;
       return true;
     },
     [](const ServerOptions& o) { return o.log_format; }},
};

// Applies one setting; `source` is the flag or variable it came from.
bool Apply(const std::string& name, const std::string& value, const std::string& source,
           ServerOptions* options, std::string* error) {
  for (const ServerFlag& flag : kFlags) {
    if (name != flag.name) continue;
    std::string expected;
    if (flag.set(value, options, &expected)) return true;
    *error = "invalid value '" + value + "' for " + source + ": " + expected;
    return false;
  }
  *error = "unknown flag " + source;
  return false;
}

}  // namespace

bool CheckTransport(const ServerOptions& o, std::string* error) {
  if (o.tls_cert.empty() != o.tls_key.empty()) {
    *error = "--tls-cert and --tls-key: expected both or neither, found only " +
             std::string(o.tls_cert.empty() ? "--tls-key" : "--tls-cert");
    return false;
  }
  if (!o.tls_client_ca.empty() && o.tls_cert.empty()) {
    *error = "--tls-client-ca: expected --tls-cert and --tls-key too (mTLS needs TLS)";
    return false;
  }
  const bool tls = !o.tls_cert.empty(), tokens = o.has_tokens();
  if ((!tls || !tokens) && !o.insecure && !IsLoopbackListen(o.listen)) {
    const char* missing = !tls && !tokens ? "TLS and tokens" : !tls ? "TLS" : "tokens";
    *error = "--listen " + o.listen +
             ": a non-loopback address needs TLS (--tls-cert, --tls-key) and tokens "
             "(--tokens-file or TETHER_TOKENS), or an explicit --insecure true "
             "(TETHER_INSECURE=true); missing: " +
             missing;
    return false;
  }
  return true;
}

bool IsLoopbackListen(const std::string& listen) {
  std::string host = listen;
  if (host.rfind("ipv4:", 0) == 0 || host.rfind("ipv6:", 0) == 0) host = host.substr(5);
  if (!host.empty() && host.front() == '[') {
    const auto close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);  // [IPV6] or [IPV6]:PORT
  } else if (const auto colon = host.find(':');
             colon != std::string::npos && host.find(':', colon + 1) == std::string::npos) {
    host = host.substr(0, colon);  // HOST:PORT (a bare IPv6 address has several colons)
  }
  if (host.empty()) return false;  // ":PORT" listens on every address
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return false;
  bool loopback = true;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      loopback = loopback && (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      const in6_addr& addr = in6->sin6_addr;
      loopback = loopback && (IN6_IS_ADDR_LOOPBACK(&addr) ||
                              (IN6_IS_ADDR_V4MAPPED(&addr) && addr.s6_addr[12] == 127));
    } else {
      loopback = false;
    }
  }
  freeaddrinfo(found);
  return loopback;
}

std::span<const ServerFlag> ServerFlags() { return kFlags; }

std::string ServerUsage() {
  // Columns: the flag from 2, its variable from 32, the help from 60.
  constexpr std::size_t kEnvColumn = 32, kHelpColumn = 60;
  const ServerOptions defaults;
  std::string out =
      "Usage: tether-server [flags]\n"
      "\n"
      "Serves tether.v1.Simulator (plus grpc.health.v1.Health and server reflection).\n"
      "Every flag can also be given as an environment variable; flags win.\n"
      "\n";
  for (const ServerFlag& flag : kFlags) {
    std::string help = flag.help;
    if (auto at = help.find("{default}"); at != std::string::npos) {
      help.replace(at, 9, flag.show(defaults));
    }
    std::string line = std::string("  --") + flag.name + " " + flag.value_name;
    line.resize(std::max(line.size() + 1, kEnvColumn), ' ');
    line += flag.env;
    line.resize(std::max(line.size() + 1, kHelpColumn), ' ');
    std::size_t start = 0;
    for (std::size_t end; (end = help.find('\n', start)) != std::string::npos; start = end + 1) {
      out += line + help.substr(start, end - start) + "\n";
      line.assign(kEnvColumn, ' ');
    }
    out += line + help.substr(start) + "\n";
  }
  std::string tokens_line = std::string("  (no flag)");
  tokens_line.resize(kEnvColumn, ' ');
  tokens_line += kTokensEnv;
  tokens_line.resize(kHelpColumn, ' ');
  out += tokens_line + "the text of a tokens file (--tokens-file)\n";
  out += "  --help\n";
  return out;
}

bool ParseServerOptions(int argc, char** argv, ServerOptions* options, bool* help,
                        std::string* error) {
  *help = false;
  if (const char* v = std::getenv(kTokensEnv); v != nullptr && *v != '\0') {
    options->tokens_text = v;
  }
  for (const ServerFlag& flag : kFlags) {
    if (const char* v = std::getenv(flag.env); v != nullptr && *v != '\0') {
      if (!Apply(flag.name, v, flag.env, options, error)) return false;
    }
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    if (arg.rfind("--", 0) != 0) {
      *error = "unexpected argument '" + arg + "'";
      return false;
    }
    std::string name = arg.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= argc) {
        *error = "flag --" + name + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (!Apply(name, value, "--" + name, options, error)) return false;
  }
  return true;
}

}  // namespace tether::service
