// tether: validate, evaluate and run simulation descriptions, offline (the
// engine in this process) or through a tether-server (--server ADDR).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <string_view>

#include "cli/backend.h"
#include "cli/driver.h"
#include "cli/fmu_command.h"
#include "cli/options.h"
#ifdef TETHER_HAVE_REMOTE
#include "cli/remote_backend.h"
#include "cli/remote_commands.h"
#endif

namespace {

using tether::cli::BadUsage;
using tether::cli::Options;

constexpr const char* kUsage = R"(usage: tether [--server ADDR] COMMAND [ARGS] [OPTIONS]

Commands:
  validate SPEC.json   compile the description and check it at the initial state;
                       exit 0 when valid (warnings are printed), 2 otherwise
  evaluate SPEC.json   one evaluation at the initial state, printed as JSON
  run SPEC.json        simulate and write frames and the residual certificate
  fmu SPEC.json --output NAME.fmu [--fmi 2]
                       write an FMI 2.0 Co-Simulation FMU of the description
                       (the engine runs in the importing process; with --server
                       ADDR the FMU runs a session on that server by default)
  health               (with --server) exit 0 when the server is serving
  sessions list|get ID|create SPEC.json [NAME]|delete ID
                       (with --server) inspect, create and delete sessions
  sessions export ID --output FILE | import FILE [NAME]
                       (with --server) a session's description and state as
                       portable bytes, and a new session from them
  snapshots create ID [LABEL] | list ID | restore ID N | delete ID N
                       (with --server) save, list, roll back to and drop
                       server-side snapshots of a session's state

Options for run:
  --steps N            stop after N steps
  --until T            stop at time T (the last step lands on it exactly)
                       (neither given: --steps 1000)
  --every K            write every K-th step, and the last (default 1; with
                       --output-interval: none but the last unless given)
  --output-interval DT also write frames at t0 + k*DT (s), interpolated inside
                       steps and evaluated there (any method)
  --format jsonl|csv   jsonl: one Frame a line, then {"certificate": ...} (default)
  --output FILE        write there instead of standard output
  --no-certificate     do not compute the residual certificate
  --quiet              no progress bar and no certificate summary on stderr

Options for fmu:
  --output NAME.fmu    the FMU to write (required); NAME gives its modelIdentifier
  --fmi 2              the FMI version (default 2; 3 is not supported yet)
  --server ADDR        bake ADDR in as the tether.server parameter: the FMU then
                       runs a session on ADDR by default (no call is made now)
  The FMU library is found at TETHER_FMU_LIBRARY, else ../lib/tether/tether-fmi2.so
  next to this executable.

Other options:
  --server ADDR        run the command on a tether-server (host:port)
  --timeout S          deadline for remote calls, seconds
  --help, --version

Connecting to --server (each flag, else its environment variable):
  --tls-ca FILE        TLS, trusting the root certificates in FILE (PEM)   TETHER_TLS_CA
  --tls-cert FILE      client certificate chain for mTLS (PEM)             TETHER_CLIENT_TLS_CERT
  --tls-key FILE       its private key (PEM), with --tls-cert              TETHER_CLIENT_TLS_KEY
  --tls-server-name N  the name checked in the server's certificate        TETHER_TLS_SERVER_NAME
                       (default: the host of ADDR); any --tls-* flag means TLS
  --token TOKEN        send "authorization: Bearer TOKEN" on every call    TETHER_TOKEN
                       (visible in a process listing: prefer --token-file)
  --token-file FILE    the token read from FILE (trailing newline dropped) TETHER_TOKEN_FILE
  --allow-plaintext-token
                       send the token without TLS to a non-loopback ADDR   TETHER_ALLOW_PLAINTEXT_TOKEN=true
                       (refused otherwise: anyone on the path could read it)
  TETHER_TLS_CERT and TETHER_TLS_KEY (tether-server's own certificate and key)
  are still read for the client when neither TETHER_CLIENT_TLS_* is set, with a
  warning: that use is deprecated.

Exit codes: 0 ok, 1 I/O or connection failure, 2 bad input, 3 the simulation failed.
)";

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool ParseDouble(std::string_view text, double* out) {
  std::string s(text);
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size();
}

// The flags that say how --server is reached: flag, environment variable,
// Options field (the client::ConnectOptions field of the same name), what
// the value is.
struct ConnectFlag {
  const char* flag;
  const char* env;
  const char* field;
  std::string Options::*member;
  const char* expected;
};
const ConnectFlag kConnectFlags[] = {
    {"--tls-ca", "TETHER_TLS_CA", "tls_ca", &Options::tls_ca, "a PEM file of CA certificates"},
    {"--tls-cert", "TETHER_CLIENT_TLS_CERT", "tls_cert", &Options::tls_cert,
     "a PEM certificate chain file"},
    {"--tls-key", "TETHER_CLIENT_TLS_KEY", "tls_key", &Options::tls_key, "a PEM private key file"},
    {"--tls-server-name", "TETHER_TLS_SERVER_NAME", "tls_server_name", &Options::tls_server_name,
     "a host name"},
    {"--token", "TETHER_TOKEN", "token", &Options::token, "a token"},
    {"--token-file", "TETHER_TOKEN_FILE", "token_file", &Options::token_file, "a file name"},
};
constexpr const char* kAllowPlaintextToken = "--allow-plaintext-token";
constexpr const char* kAllowPlaintextTokenEnv = "TETHER_ALLOW_PLAINTEXT_TOKEN";

const ConnectFlag* FindConnectFlag(std::string_view arg) {
  for (const ConnectFlag& f : kConnectFlags) {
    if (arg == f.flag) return &f;
  }
  return nullptr;
}

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// tether-server's own certificate and key, which clients once read as
// theirs (deprecated): the client's pair's field, its variable, the old
// variable and what the server means by it.
struct DeprecatedVariable {
  const char* field;
  const char* env;
  const char* old_env;
  const char* what;
};
constexpr DeprecatedVariable kDeprecatedVariables[] = {
    {"tls_cert", "TETHER_CLIENT_TLS_CERT", "TETHER_TLS_CERT", "certificate"},
    {"tls_key", "TETHER_CLIENT_TLS_KEY", "TETHER_TLS_KEY", "private key"},
};

// The old variable of `f`'s field that supplies it, or null: the old
// names are read only when neither new one is set (a pair is never half
// the client's and half the server's); a warning on stderr for each old
// variable set, used or not.
const char* DeprecatedEnv(const ConnectFlag& f) {
  const char* winner = nullptr;  // the new variable set, if any
  for (const DeprecatedVariable& d : kDeprecatedVariables) {
    if (winner == nullptr && Env(d.env)) winner = d.env;
  }
  const char* used = nullptr;
  for (const DeprecatedVariable& d : kDeprecatedVariables) {
    if (std::strcmp(d.field, f.field) != 0 || !Env(d.old_env)) continue;
    std::cerr << "tether: " << d.old_env << " is deprecated for clients";
    if (winner != nullptr) {
      std::cerr << " and ignored: " << (Env(d.env) ? d.env : winner) << " is set and wins";
    } else {
      std::cerr << ": use " << d.env;
      used = d.old_env;
    }
    std::cerr << " (" << d.old_env << " is tether-server's own " << d.what << ")\n";
  }
  return used;
}

// The connect options not given as flags, from the environment (with
// --server only); 0, or a usage error's exit code.
int ConnectOptionsFromEnvironment(Options* o) {
  if (!o->server) return 0;
  // --token and --token-file override both variables.
  const bool token_flag = o->sources.count("token") || o->sources.count("token_file");
  if (!token_flag && Env("TETHER_TOKEN") && Env("TETHER_TOKEN_FILE")) {
    return BadUsage("TETHER_TOKEN, TETHER_TOKEN_FILE: set one, not both");
  }
  for (const ConnectFlag& f : kConnectFlags) {
    const bool token = std::string_view(f.field).substr(0, 5) == "token";
    if (o->sources.count(f.field) || (token && token_flag)) continue;
    const char* env = DeprecatedEnv(f);
    if (env == nullptr && Env(f.env)) env = f.env;
    if (env != nullptr) {
      o->*f.member = Env(env);
      o->sources[f.field] = env;
    }
  }
  if (!o->sources.count("allow_plaintext_token")) {
    if (const char* v = Env(kAllowPlaintextTokenEnv)) {
      if (std::strcmp(v, "true") != 0 && std::strcmp(v, "false") != 0) {
        return BadUsage(std::string(kAllowPlaintextTokenEnv) + ": expected true or false, found '" +
                        v + "'");
      }
      o->allow_plaintext_token = std::strcmp(v, "true") == 0;
      o->sources["allow_plaintext_token"] = kAllowPlaintextTokenEnv;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value = [&](std::string_view name) -> const char* {
      (void)name;
      // "--steps --quiet" is a missing value, not the value "--quiet".
      if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0) return nullptr;
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (arg == "--version") {
      std::cout << "tether 0.1.0\n";
      return 0;
    } else if (arg == "--server") {
      const char* v = value(arg);
      if (!v || !*v) return BadUsage("--server: expected an address host:port");
      o.server = v;
    } else if (arg == "--steps") {
      const char* v = value(arg);
      uint64_t n = 0;
      if (!v || !ParseUnsigned(v, &n) || n == 0) {
        return BadUsage(std::string("--steps: expected a positive integer, found '") +
                        (v ? v : "") + "'");
      }
      o.steps = n;
    } else if (arg == "--until") {
      const char* v = value(arg);
      double t = 0;
      if (!v || !ParseDouble(v, &t) || !std::isfinite(t)) {
        return BadUsage(std::string("--until: expected a finite time, found '") + (v ? v : "") +
                        "'");
      }
      o.until = t;
    } else if (arg == "--every") {
      const char* v = value(arg);
      uint64_t n = 0;
      if (!v || !ParseUnsigned(v, &n) || n == 0) {
        return BadUsage(std::string("--every: expected a positive integer, found '") +
                        (v ? v : "") + "'");
      }
      o.every = n;
    } else if (arg == "--output-interval") {
      // Range (> 0, resolvable at t0) is the engine's check, offline and
      // remote alike.
      const char* v = value(arg);
      double dt = 0;
      if (!v || !ParseDouble(v, &dt)) {
        return BadUsage(std::string("--output-interval: expected a time interval in s, found '") +
                        (v ? v : "") + "'");
      }
      o.output_interval = dt;
    } else if (arg == "--format") {
      const char* v = value(arg);
      if (!v || (std::strcmp(v, "jsonl") != 0 && std::strcmp(v, "csv") != 0)) {
        return BadUsage(std::string("--format: expected jsonl or csv, found '") + (v ? v : "") +
                        "'");
      }
      o.format = v;
    } else if (arg == "--output" || arg == "-o") {
      const char* v = value(arg);
      if (!v || !*v) return BadUsage("--output: expected a file name");
      o.output = v;
    } else if (arg == "--fmi") {
      const char* v = value(arg);
      if (!v || (std::strcmp(v, "2") != 0 && std::strcmp(v, "3") != 0)) {
        return BadUsage(std::string("--fmi: expected 2 (or 3, not supported yet), found '") +
                        (v ? v : "") + "'");
      }
      o.fmi_version = v[0] - '0';
    } else if (arg == "--timeout") {
      const char* v = value(arg);
      double s = 0;
      if (!v || !ParseDouble(v, &s) || !(s > 0) || !std::isfinite(s)) {
        return BadUsage(std::string("--timeout: expected seconds > 0, found '") + (v ? v : "") +
                        "'");
      }
      o.timeout_seconds = s;
    } else if (const ConnectFlag* f = FindConnectFlag(arg)) {
      const char* v = value(arg);
      // The value is not echoed: it may be the token.
      if (!v || !*v) return BadUsage(std::string(f->flag) + ": expected " + f->expected);
      o.*(f->member) = v;
      o.sources[f->field] = f->flag;
    } else if (arg == kAllowPlaintextToken) {
      o.allow_plaintext_token = true;
      o.sources["allow_plaintext_token"] = kAllowPlaintextToken;
    } else if (arg == "--no-certificate") {
      o.certificate = false;
    } else if (arg == "--quiet" || arg == "-q") {
      o.quiet = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return BadUsage("unknown option '" + std::string(arg) + "'");
    } else if (o.command.empty()) {
      o.command = arg;
    } else {
      o.args.emplace_back(arg);
    }
  }
  if (o.command.empty())
    return BadUsage(
        "expected a command: validate, evaluate, run, fmu, health, sessions or snapshots");
  if (!o.server && !o.sources.empty()) {
    return BadUsage(o.sources.begin()->second + ": needs --server ADDR");
  }
  if (o.sources.count("token") && o.sources.count("token_file")) {
    return BadUsage("--token, --token-file: give one, not both");
  }
  if (int code = ConnectOptionsFromEnvironment(&o); code != 0) return code;

  const bool remote_only =
      o.command == "health" || o.command == "sessions" || o.command == "snapshots";
  if (o.command != "validate" && o.command != "evaluate" && o.command != "run" &&
      o.command != "fmu" && !remote_only) {
    return BadUsage("unknown command '" + o.command +
                    "'; expected validate, evaluate, run, fmu, health, sessions or snapshots");
  }
  if (o.fmi_version && o.command != "fmu") return BadUsage("--fmi: only with the fmu command");
  if (remote_only && !o.server) return BadUsage(o.command + ": needs --server ADDR");
  if (!remote_only && o.args.size() != 1) {
    return BadUsage(o.command + ": expected exactly one description file, found " +
                    std::to_string(o.args.size()));
  }
  if (o.command == "fmu") {
    // No call is made: --server is baked into the FMU as its tether.server
    // parameter's start value (the remote mode's default address).
    return tether::cli::WriteFmu(o);
  }
  if (!o.server) return tether::cli::RunCommand(o, *tether::cli::MakeOfflineBackend());
#ifdef TETHER_HAVE_REMOTE
  if (int code = tether::cli::CheckConnectOptions(o); code != 0) return code;
  if (remote_only) return tether::cli::RunRemoteCommand(o);
  return tether::cli::RunCommand(o, *tether::cli::MakeRemoteBackend(o));
#else
  std::cerr << "tether: this build has no gRPC client (configure with TETHER_BUILD_SERVICE=ON)\n";
  return tether::cli::kExitFailure;
#endif
}
