// tether-server's settings: every default is the member initialiser below,
// and every flag is one row of kFlags (server_options.cc, read through
// ServerFlags()), from which both the parser and the --help text are made.
// A new setting is a member here plus a row in server_options.cc.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>

#include "engine/ensemble.h"
#include "engine/simulation.h"

namespace tether::service {

// What the Simulator service itself reads (ServiceCore).
struct ServiceOptions {
  // Worker threads stepping simulations (0: one per hardware thread).
  std::size_t workers = 0;
  // How long a worker polls after a co-simulation step (WorkerPool).
  std::chrono::microseconds worker_spin{1000};
  std::size_t max_sessions = 1000;
  // Per tenant (service/tenant.h): sessions held (0: max_sessions) and
  // concurrent Run + CoSimulate streams (0: as many as its sessions, i.e.
  // no limit beyond the session quota); a tokens file may set either per
  // tenant (service/auth.h).
  std::size_t tenant_max_sessions = 0;
  std::size_t tenant_max_streams = 0;
  // RunEnsemble (service/ensemble_reactor.h): the most instances in one
  // call, and the most instances x steps one call may take.
  uint64_t ensemble_max_instances = EnsembleLimits{}.max_instances;
  uint64_t ensemble_max_instance_steps = uint64_t{10} * 1000 * 1000 * 1000;
  // The most compilations (parameter sets) one call may make.
  uint64_t ensemble_max_compilations = 256;
  // Bytes sessions may hold in all (service/memory_budget.h; 0: automatic,
  // from the cgroup's memory limit, RLIMIT_AS or the machine's memory,
  // less room for the process and the compile lane) and per tenant (0: no
  // quota below the server's; a tokens file's max_memory=BYTES overrides
  // it per tenant). New sessions, snapshots, imports and updates that
  // would pass either are RESOURCE_EXHAUSTED.
  int64_t memory_budget = 0;
  int64_t tenant_max_memory = 0;
  // Largest message sent or received; Run splits its frames to stay below.
  std::size_t max_message_bytes = 4 * 1024 * 1024;
  // Idle sessions are deleted after this long (0: never).
  std::chrono::milliseconds session_idle_timeout = std::chrono::hours(1);
  // A Run or CoSimulate whose pending write has not completed for this long
  // (the client stopped reading) ends with DEADLINE_EXCEEDED and releases
  // its session (0: never).
  std::chrono::milliseconds stream_stall_timeout = std::chrono::seconds(30);
  // Threads of the compile lane: Validate, Evaluate and CreateSession
  // compile there, never on the workers that step streams.
  std::size_t compile_workers = 1;
  // Compiles waiting for the compile lane; one more is refused with
  // RESOURCE_EXHAUSTED (QuotaFailure naming --max-queued-compiles), so a
  // flood of compiles cannot queue unbounded work and memory.
  std::size_t max_queued_compiles = 64;
  // Of those, one tenant's (0: half of max_queued_compiles, at least 1):
  // Validate, Evaluate, CreateSession, ImportSession and UpdateSession all
  // count, so one tenant's flood leaves room in the queue for the others,
  // and the lane serves tenants in turn (WorkerPool).
  std::size_t tenant_max_queued_compiles = 0;
  // Extra workers the pool may start for a tenant that has nothing running
  // while every worker is busy (WorkerPool; 0: as many as workers).
  std::size_t max_extra_workers = 0;
  // Snapshots a session keeps (CreateSnapshot); saving one more drops the
  // oldest, so saving at every step cannot exhaust memory. Each holds the
  // state (a few numbers per coordinate) and shares the compiled model.
  std::size_t max_snapshots = 64;
  // --state-dir: sessions are written there when the server drains
  // (SIGTERM) and read back at start-up (service/state_dir.h). Empty:
  // nothing is written.
  std::string state_dir;
  // With state_dir (or session_store): also write the sessions that
  // changed every this long, so a crash (SIGKILL) loses at most about this
  // much (0: only at drain).
  std::chrono::milliseconds checkpoint_interval{0};
  // --session-store redis://HOST:PORT: sessions live in a store shared by
  // every replica (service/cluster_sessions.h); empty: in this process only
  // (with state_dir, if any). Not together with state_dir.
  std::string session_store;
  // With session_store: how long a replica's liveness key in the store,
  // and with it every session lease the replica holds, outlives its last
  // renewal (renewed every third of it; service/shared_session_store.h).
  std::chrono::milliseconds lease_ttl{1000};
  // With session_store: a CoSimulate step's response is sent only after
  // the session's state after it is in the store.
  bool write_through = false;
  // What compiling one description (Validate, Evaluate, CreateSession) may
  // use; the engine's defaults (engine/simulation.h).
  CompileLimits compile;
};

// The whole server: the service plus its address, shutdown and logging.
struct ServerOptions {
  // host:port; port 0 picks a free port.
  std::string listen = "127.0.0.1:50051";
  ServiceOptions service;
  // How long open streams may take to end on SIGINT/SIGTERM.
  std::chrono::milliseconds shutdown_grace = std::chrono::seconds(5);
  // HTTP/2 connections (gRPC channel arguments; server.cc). The server
  // pings a connection quiet for keepalive_time and closes it when the
  // ping is not answered within keepalive_timeout, so a vanished client's
  // calls end and free what they hold; a connection with no call for
  // max_connection_idle is closed (GOAWAY: a live client reconnects on
  // its next call; 0: never); at most max_streams_per_connection calls
  // run at once on one connection (more wait in the client).
  std::chrono::milliseconds keepalive_time = std::chrono::seconds(60);
  std::chrono::milliseconds keepalive_timeout = std::chrono::seconds(20);
  std::chrono::milliseconds max_connection_idle = std::chrono::minutes(15);
  std::size_t max_streams_per_connection = 100;
  std::string log_level = "info";   // see ConfigureLogging
  std::string log_format = "text";  // text | json
  // TLS (gRPC's SslServerCredentials): PEM files of the server's certificate
  // chain and key; with tls_client_ca, clients must present a certificate
  // signed by that CA (mTLS). Empty: plaintext.
  std::string tls_cert, tls_key, tls_client_ca;
  // Bearer tokens (service/auth.h): the tokens file, or its text inline
  // (TETHER_TOKENS, for a Kubernetes Secret as an environment variable; no
  // flag, so that tokens never show on a command line). Both empty: no
  // authentication, one anonymous tenant.
  std::string tokens_file, tokens_text;
  // How often --tokens-file is read again for changes (service/
  // tokens_watcher.h); 0: only at start-up.
  std::chrono::milliseconds tokens_reload_interval{5000};
  bool has_tokens() const { return !tokens_file.empty() || !tokens_text.empty(); }
  // Allows a non-loopback address without TLS and tokens (refused
  // otherwise).
  bool insecure = false;
  // Refuses to start (exit 2) when --tls-key or --tokens-file is open to
  // others (service/secret_files.h); false only warns.
  bool strict_file_modes = true;
};

// True when the host of `listen` (HOST:PORT, [IPV6]:PORT, HOST, an ipv4: or
// ipv6: prefix allowed) resolves (getaddrinfo, numeric or by name) to
// loopback addresses only: 127.0.0.0/8, ::1 or ::ffff:127.0.0.0/104. Decided
// on the resolved addresses, never on the spelling: "localhost" is loopback
// when it resolves so, "127.example.com" is not unless it resolves to
// loopback, a host that does not resolve (or also resolves elsewhere) is not.
bool IsLoopbackListen(const std::string& listen);

// --tls-cert and --tls-key come together (--tls-client-ca needs them), and a
// non-loopback --listen without both TLS and tokens needs --insecure true;
// false with `*error` naming the flags otherwise.
bool CheckTransport(const ServerOptions& options, std::string* error);

// One setting as a command-line flag (--NAME VALUE or --NAME=VALUE) and an
// environment variable.
struct ServerFlag {
  const char* name;        // "listen"
  const char* value_name;  // "HOST:PORT", for --help
  const char* env;         // "TETHER_LISTEN"
  // --help text: "{default}" stands for the default (the text `show` gives
  // for a default ServerOptions); '\n' starts a continuation line.
  const char* help;
  // Sets the option from `value`; on a bad value returns false and leaves
  // in `*expected` what a valid one looks like.
  bool (*set)(const std::string& value, ServerOptions* options, std::string* expected);
  // The option's current value, as a flag would spell it.
  std::string (*show)(const ServerOptions& options);
};

// Every flag, in --help order (which is also the order the environment is
// read in).
std::span<const ServerFlag> ServerFlags();

// The --help text.
std::string ServerUsage();

// The environment variable holding a tokens file's text (ServerOptions::
// tokens_text).
inline constexpr const char* kTokensEnv = "TETHER_TOKENS";

// Reads the TETHER_* environment variables (non-empty ones; TETHER_TOKENS
// too), then the flags (which win). Returns false with `*error` set (e.g. "invalid value 'x' for
// --workers: expected an integer in 1..1024") at the first bad setting;
// `*help` is set, and parsing stops, at --help or -h. The log level and
// format are checked later, by ConfigureLogging; the transport by
// CheckTransport (in TetherServer::Start).
bool ParseServerOptions(int argc, char** argv, ServerOptions* options, bool* help,
                        std::string* error);

}  // namespace tether::service
