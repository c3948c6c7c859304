#include "cli/command_line.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/driver.h"

namespace tether::cli {
namespace {

bool ParseUnsigned(std::string_view text, uint64_t* out) {
  if (text.empty()) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool ParseDouble(const std::string& text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

// NAME=VALUE with a non-empty NAME and a finite VALUE, appended to *out.
bool AddNamedValue(const std::string& text, std::vector<std::pair<std::string, double>>* out) {
  const std::size_t eq = text.find('=');
  double value = 0;
  if (eq == std::string::npos || eq == 0 || !ParseDouble(text.substr(eq + 1), &value) ||
      !std::isfinite(value)) {
    return false;
  }
  out->emplace_back(text.substr(0, eq), value);
  return true;
}

// NAME=START:STOP:COUNT.
bool AddSweep(const std::string& text, std::vector<Options::Sweep>* out) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  Options::Sweep s;
  s.name = text.substr(0, eq);
  const std::string rest = text.substr(eq + 1);
  const std::size_t c1 = rest.find(':');
  const std::size_t c2 = c1 == std::string::npos ? c1 : rest.find(':', c1 + 1);
  if (c2 == std::string::npos) return false;
  if (!ParseDouble(rest.substr(0, c1), &s.start) ||
      !ParseDouble(rest.substr(c1 + 1, c2 - c1 - 1), &s.stop) || !std::isfinite(s.start) ||
      !std::isfinite(s.stop)) {
    return false;
  }
  uint64_t n = 0;
  if (!ParseUnsigned(rest.substr(c2 + 1), &n) || n == 0 || n > UINT32_MAX) return false;
  s.count = static_cast<uint32_t>(n);
  out->push_back(std::move(s));
  return true;
}

// NAME=uniform:A:B or NAME=normal:MU:SIGMA (the engine checks A < B and
// SIGMA >= 0, offline and remote alike).
bool AddRandom(const std::string& text, std::vector<Options::Random>* out) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  Options::Random r;
  r.name = text.substr(0, eq);
  const std::string rest = text.substr(eq + 1);
  const std::size_t c1 = rest.find(':');
  const std::size_t c2 = c1 == std::string::npos ? c1 : rest.find(':', c1 + 1);
  if (c2 == std::string::npos) return false;
  const std::string kind = rest.substr(0, c1);
  if (kind != "uniform" && kind != "normal") return false;
  r.normal = kind == "normal";
  if (!ParseDouble(rest.substr(c1 + 1, c2 - c1 - 1), &r.a) ||
      !ParseDouble(rest.substr(c2 + 1), &r.b) || !std::isfinite(r.a) || !std::isfinite(r.b)) {
    return false;
  }
  out->push_back(std::move(r));
  return true;
}

bool SetPositive(const std::string& value, std::optional<uint64_t>* out) {
  uint64_t n = 0;
  if (!ParseUnsigned(value, &n) || n == 0) return false;
  *out = n;
  return true;
}

// Text that may not be empty (a file name, an address, the token) into a
// std::string or std::optional<std::string> field.
template <auto kField>
bool SetText(const std::string& value, Options* o) {
  o->*kField = value;
  return !value.empty();
}

// A switch: sets `kField` to `kValue`.
template <bool Options::*kField, bool kValue = true>
bool Switch(const std::string&, Options* o) {
  o->*kField = kValue;
  return true;
}

// One flag. Its value follows it as the next argument ("--steps 10"); an
// argument starting with "--" there is a missing value, not the value.
struct Flag {
  const char* name;             // "--steps"
  const char* alias = nullptr;  // "-o"
  // What the help calls its value ("N"); nullptr for a switch.
  const char* value = nullptr;
  // The commands it is for, as names ("run"), "remote" (every command that
  // calls a server: ServerUse kOptional or kRequired) or "all". The
  // parser refuses a flag given with a command that no row of its name
  // lists (TakenBy).
  const char* commands;
  const char* help;  // '\n' starts a continuation line
  // What a good value is, for messages: "a positive integer".
  const char* expected = nullptr;
  // Sets the option from `value` (a switch: "true", or its variable's
  // value); false when the value is bad. nullptr: this row only documents
  // the flag for `commands`, where it means something else to the user;
  // the row of the same name with a setter parses it.
  bool (*set)(const std::string& value, Options* options) = nullptr;
  // With --server, the environment variable read when the flag is not
  // given (a switch's: true or false). Such a flag needs --server, and
  // where its value came from is kept in Options::sources under its field
  // name ("--tls-ca": "tls_ca").
  const char* env = nullptr;
  // A bad value is repeated in the message ("found '0'"): not a secret's,
  // nor where the only fault can be a missing value.
  bool echo = true;
};

// A connect option (client::ConnectOptions' field of the same name) for
// every command that calls a server, from its flag else its variable; its
// value is never echoed: one may be the token.
constexpr Flag ConnectFlag(const char* name, const char* value, const char* help,
                           const char* expected, bool (*set)(const std::string&, Options*),
                           const char* env) {
  return {.name = name,
          .value = value,
          .commands = "remote",
          .help = help,
          .expected = expected,
          .set = set,
          .env = env,
          .echo = false};
}

const Flag kFlags[] = {
    {.name = "--steps",
     .value = "N",
     .commands = "run sessions",
     .help = "stop after N steps",
     .expected = "a positive integer",
     .set = [](const std::string& v, Options* o) { return SetPositive(v, &o->steps); }},
    {.name = "--until",
     .value = "T",
     .commands = "ensemble",
     .help = "every instance's end time (required)"},
    {.name = "--until",
     .value = "T",
     .commands = "run sessions",
     .help = "stop at time T (the last step lands on it exactly)\n"
             "(neither given: --steps {default steps})",
     .expected = "a finite time",
     .set =
         [](const std::string& v, Options* o) {
           double t = 0;
           if (!ParseDouble(v, &t) || !std::isfinite(t)) return false;
           o->until = t;
           return true;
         }},
    {.name = "--every",
     .value = "K",
     .commands = "run sessions",
     .help = "write every K-th step, and the last (default 1; with\n"
             "--output-interval: none but the last unless given)",
     .expected = "a positive integer",
     .set = [](const std::string& v, Options* o) { return SetPositive(v, &o->every); }},
    // Its range (> 0, resolvable at t0) is the engine's check, offline and
    // remote alike.
    {.name = "--output-interval",
     .value = "DT",
     .commands = "run sessions ensemble",
     .help = "also write frames at t0 + k*DT (s), interpolated inside\n"
             "steps and evaluated there (any method; ensemble: each\n"
             "instance's, in its jsonl line)",
     .expected = "a time interval in s",
     .set =
         [](const std::string& v, Options* o) {
           double dt = 0;
           if (!ParseDouble(v, &dt)) return false;
           o->output_interval = dt;
           return true;
         }},
    {.name = "--format",
     .value = "jsonl|csv",
     .commands = "ensemble",
     .help = "jsonl: one EnsembleInstanceResult a line (default);\n"
             "csv: a header, then one row an instance"},
    {.name = "--format",
     .value = "jsonl|csv",
     .commands = "run sessions",
     .help = "jsonl: one Frame a line, then {\"certificate\": ...} (default);\n"
             "csv: a header, then one row a frame",
     .expected = "jsonl or csv",
     .set =
         [](const std::string& v, Options* o) {
           o->format = v;
           return v == "jsonl" || v == "csv";
         }},
    {.name = "--output",
     .value = "SPEC.json",
     .commands = "urdf",
     .help = "write the description there instead of standard output"},
    {.name = "--output",
     .value = "FILE",
     .commands = "expand",
     .help = "write the description there instead of standard output"},
    {.name = "--quiet", .commands = "urdf", .help = "no warnings or summary on stderr"},
    // sessions has its own row (export and run), so its help lists one.
    {.name = "--output",
     .alias = "-o",
     .value = "FILE",
     .commands = "run ensemble",
     .help = "write there instead of standard output (ensemble: a\n"
             "name ending in .csv means --format csv)",
     .expected = "a file name",
     .set = SetText<&Options::output>,
     .echo = false},
    {.name = "--no-certificate",
     .commands = "run sessions ensemble",
     .help = "do not compute the residual certificate",
     .set = Switch<&Options::certificate, false>},
    {.name = "--constraints",
     .value = "N|all",
     .commands = "run sessions",
     .help = "the certificate summary lists the N constraints with the\n"
             "largest drift bounds (default 10; all: every one)",
     .expected = "a positive integer or all",
     .set =
         [](const std::string& v, Options* o) {
           if (v == "all") {
             o->summary_constraints = 0;
             return true;
           }
           std::optional<uint64_t> n;
           if (!SetPositive(v, &n)) return false;
           o->summary_constraints = *n;
           return true;
         }},
    {.name = "--quiet",
     .alias = "-q",
     .commands = "run sessions",
     .help = "no warnings, progress bar or certificate summary on stderr",
     .set = Switch<&Options::quiet>},
    {.name = "--sweep",
     .value = "NAME=START:STOP:COUNT",
     .commands = "ensemble",
     .help = "a grid axis: COUNT values from START to STOP of a\n"
             "parameter, coordinate x (initial q), der(x) (initial v)\n"
             "or input NAME (repeat: a grid, the first slowest)",
     .expected = "NAME=START:STOP:COUNT with finite START, STOP and COUNT >= 1",
     .set = [](const std::string& v, Options* o) { return AddSweep(v, &o->sweeps); }},
    {.name = "--instances",
     .value = "FILE.csv|FILE.jsonl",
     .commands = "ensemble",
     .help = "explicit instances (varying slowest): csv, a header of\n"
             "names (as --sweep's) then a row of values per instance;\n"
             "jsonl, an object {\"NAME\": value, ...} per instance",
     .expected = "a file name",
     .set = SetText<&Options::instances_file>},
    {.name = "--reduce",
     .commands = "ensemble",
     .help = "with --output-interval: a last jsonl line with the mean,\n"
             "std, min and max over the instances per output time,\n"
             "and no frames in the instances' lines",
     .set = Switch<&Options::reduce>},
    {.name = "--random",
     .value = "NAME=uniform:A:B|normal:MU:SIGMA",
     .commands = "ensemble",
     .help = "a seeded random draw of NAME per instance (repeat for\n"
             "more; --count draws per grid point)",
     .expected = "NAME=uniform:A:B or NAME=normal:MU:SIGMA with finite numbers",
     .set = [](const std::string& v, Options* o) { return AddRandom(v, &o->randoms); }},
    {.name = "--count",
     .value = "N",
     .commands = "ensemble",
     .help = "random draws per grid point (with --random)",
     .expected = "a positive integer",
     .set = [](const std::string& v, Options* o) { return SetPositive(v, &o->count); }},
    {.name = "--seed",
     .value = "S",
     .commands = "ensemble",
     .help = "the random draws' seed (default 0; written in every line)",
     .expected = "an integer in 0..2^64-1",
     .set = [](const std::string& v, Options* o) { return ParseUnsigned(v, &o->seed); }},
    {.name = "--workers",
     .value = "N",
     .commands = "ensemble",
     .help = "offline: threads running instances (default 1; the\n"
             "results are the same bits whatever N)",
     .expected = "a positive integer up to 1024",
     .set = [](const std::string& v,
               Options* o) { return SetPositive(v, &o->workers) && *o->workers <= 1024; }},
    {.name = "--functions",
     .value = "exact|fast",
     .commands = "ensemble",
     .help = "the lane path's sin, cos, exp, ...: exact (default), the C\n"
             "library's, every instance a plain run's bits; fast,\n"
             "vectorised, within docs/ENSEMBLES.md's bound of them",
     .expected = "exact or fast",
     .set =
         [](const std::string& v, Options* o) {
           o->fast_functions = v == "fast";
           return v == "fast" || v == "exact";
         }},
    {.name = "--quiet",
     .alias = "-q",
     .commands = "ensemble",
     .help = "no summary line (instances, failures, seed) on stderr"},
    {.name = "--no-lanes",
     .commands = "ensemble",
     .help = "offline: every instance on the scalar engine, none on\n"
             "the lane path (the results are the same bits; for checks)",
     .set = Switch<&Options::lanes, false>},
    {.name = "--output",
     .value = "NAME.fmu",
     .commands = "fmu",
     .help = "the FMU to write (required); NAME gives its modelIdentifier"},
    {.name = "--fmi",
     .value = "2|3",
     .commands = "fmu",
     .help = "the FMI version: 2 (FMI 2.0, the default) or 3 (FMI 3.0)",
     .expected = "2 or 3",
     .set =
         [](const std::string& v, Options* o) {
           if (v != "2" && v != "3") return false;
           o->fmi_version = v[0] - '0';
           return true;
         }},
    {.name = "--server",
     .value = "ADDR",
     .commands = "fmu",
     .help = "bake ADDR in as the tether.server parameter: the FMU then\n"
             "runs a session on ADDR by default (no call is made now)"},
    {.name = "--quiet",
     .commands = "fmu",
     .help = "no warnings and no summary of the FMU on stderr"},
    {.name = "--output",
     .value = "FILE",
     .commands = "sessions",
     .help = "export: the file the bytes are written to (required);\n"
             "run: the file the frames are written to"},
    {.name = "--parameter",
     .value = "NAME=VALUE",
     .commands = "sessions",
     .help = "update: set the parameter NAME (repeat for more)",
     .expected = "NAME=VALUE with a finite VALUE",
     .set = [](const std::string& v, Options* o) { return AddNamedValue(v, &o->parameters); }},
    {.name = "--input",
     .value = "NAME=VALUE",
     .commands = "sessions",
     .help = "update: set the input NAME's default and current value",
     .expected = "NAME=VALUE with a finite VALUE",
     .set = [](const std::string& v, Options* o) { return AddNamedValue(v, &o->inputs); }},
    {.name = "--gains",
     .value = "ALPHA,BETA",
     .commands = "sessions",
     .help = "update: the description's Baumgarte gains (1/s)",
     .expected = "two finite numbers ALPHA,BETA",
     .set =
         [](const std::string& v, Options* o) {
           const std::size_t comma = v.find(',');
           double alpha = 0, beta = 0;
           if (comma == std::string::npos || !ParseDouble(v.substr(0, comma), &alpha) ||
               !ParseDouble(v.substr(comma + 1), &beta) || !std::isfinite(alpha) ||
               !std::isfinite(beta)) {
             return false;
           }
           o->gains = {alpha, beta};
           return true;
         }},
    {.name = "--certificate",
     .value = "sampled|enclosed|off",
     .commands = "sessions",
     .help = "update: the certificate of the session's later runs",
     .expected = "sampled, enclosed or off",
     .set =
         [](const std::string& v, Options* o) {
           o->certificate_mode = v;
           return v == "sampled" || v == "enclosed" || v == "off";
         }},
    {.name = "--server",
     .value = "ADDR",
     .commands = "remote",
     .help = "run the command on a tether-server (host:port)",
     .expected = "an address host:port",
     .set = SetText<&Options::server>,
     .echo = false},
    {.name = "--timeout",
     .value = "S",
     .commands = "remote",
     .help = "deadline for remote calls, seconds",
     .expected = "seconds > 0",
     .set =
         [](const std::string& v, Options* o) {
           double s = 0;
           if (!ParseDouble(v, &s) || !(s > 0) || !std::isfinite(s)) return false;
           o->timeout_seconds = s;
           return true;
         }},
    ConnectFlag("--tls-ca", "FILE", "TLS, trusting the root certificates in FILE (PEM)",
                "a PEM file of CA certificates", SetText<&Options::tls_ca>, "TETHER_TLS_CA"),
    ConnectFlag("--tls-cert", "FILE", "client certificate chain for mTLS (PEM)",
                "a PEM certificate chain file", SetText<&Options::tls_cert>,
                "TETHER_CLIENT_TLS_CERT"),
    ConnectFlag("--tls-key", "FILE", "its private key (PEM), with --tls-cert",
                "a PEM private key file", SetText<&Options::tls_key>, "TETHER_CLIENT_TLS_KEY"),
    ConnectFlag("--tls-server-name", "NAME",
                "the name checked in the server's certificate\n"
                "(default: the host of ADDR); any --tls-* flag means TLS",
                "a host name", SetText<&Options::tls_server_name>, "TETHER_TLS_SERVER_NAME"),
    ConnectFlag("--token", "TOKEN",
                "send \"authorization: Bearer TOKEN\" on every call\n"
                "(visible in a process listing: prefer --token-file)",
                "a token", SetText<&Options::token>, "TETHER_TOKEN"),
    ConnectFlag("--token-file", "FILE", "the token read from FILE (trailing newline dropped)",
                "a file name", SetText<&Options::token_file>, "TETHER_TOKEN_FILE"),
    {.name = "--allow-plaintext-token",
     .commands = "remote",
     .help = "send the token without TLS to a non-loopback ADDR\n"
             "(refused otherwise: anyone on the path could read it)",
     .expected = "true or false",
     .set =
         [](const std::string& v, Options* o) {
           o->allow_plaintext_token = v == "true";
           return v == "true" || v == "false";
         },
     .env = "TETHER_ALLOW_PLAINTEXT_TOKEN"},
    {.name = "--help",
     .alias = "-h",
     .commands = "all",
     .help = "this help; after a command, that command's alone",
     .set = Switch<&Options::help>},
    {.name = "--version",
     .commands = "all",
     .help = "the version",
     .set = Switch<&Options::version>},
};

constexpr const char* kVersion = "tether 0.1.0";
constexpr const char* kExitCodes =
    "Exit codes: 0 ok, 1 I/O or connection failure, 2 bad input, 3 the simulation failed.\n";

// The row of `arg` ("--output" or "-o") that parses it, or null.
const Flag* FindFlag(std::string_view arg) {
  for (const Flag& f : kFlags) {
    if (f.set != nullptr && (arg == f.name || (f.alias != nullptr && arg == f.alias))) return &f;
  }
  return nullptr;
}

// The Options::sources key of a flag with a variable: "--tls-ca" -> "tls_ca".
std::string Field(const Flag& f) {
  std::string field(f.name + 2);
  std::replace(field.begin(), field.end(), '-', '_');
  return field;
}

// "found 'VALUE'" unless the flag keeps its value to itself.
std::string BadValue(const Flag& f, const std::string& source, const std::string& value) {
  std::string message = source + ": expected " + f.expected;
  if (f.echo) message += ", found '" + value + "'";
  return message;
}

bool CallsServer(const Command& c) {
  return c.server == ServerUse::kOptional || c.server == ServerUse::kRequired;
}

// Whether `list` (space-separated) names `word`.
bool Names(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    const std::size_t end = std::min(list.find(' '), list.size());
    if (list.substr(0, end) == word) return true;
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return false;
}

// Whether a row named `name` is for command `c`: it lists c, or "all", or
// "remote" and c calls a server. A flag given with a command none of its
// rows lists is refused: it would do nothing there, and a user who gave it
// believes it did something.
bool TakenBy(std::string_view name, const Command& c) {
  for (const Flag& f : kFlags) {
    if (name != f.name) continue;
    if (Names(f.commands, c.name) || Names(f.commands, "all") ||
        (Names(f.commands, "remote") && CallsServer(c))) {
      return true;
    }
  }
  return false;
}

const Command* FindCommand(std::span<const Command> commands, std::string_view name) {
  for (const Command& c : commands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// "A, B or C" ("and" for `last`) of the names of the commands `pick` keeps.
std::string CommandList(std::span<const Command> commands, const char* last = " or ",
                        const std::function<bool(const Command&)>& pick = nullptr) {
  std::vector<const char*> names;
  for (const Command& c : commands) {
    if (!pick || pick(c)) names.push_back(c.name);
  }
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? last : ", ";
    out += names[i];
  }
  return out;
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

// The old variable that supplies `field`, or null: the old names are read
// only when neither new one is set (a pair is never half the client's and
// half the server's); a warning on stderr for each old variable set, used
// or not.
const char* DeprecatedEnv(const std::string& field) {
  const char* winner = nullptr;  // the new variable set, if any
  for (const DeprecatedVariable& d : kDeprecatedVariables) {
    if (winner == nullptr && Env(d.env)) winner = d.env;
  }
  const char* used = nullptr;
  for (const DeprecatedVariable& d : kDeprecatedVariables) {
    if (field != d.field || !Env(d.old_env)) continue;
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

// The flags with a variable that were not given, from the environment
// (with --server only); 0, or a usage error's exit code.
int FromEnvironment(Options* o) {
  if (!o->server) return 0;
  // --token and --token-file override both variables.
  const bool token_flag = o->sources.count("token") || o->sources.count("token_file");
  if (!token_flag && Env("TETHER_TOKEN") && Env("TETHER_TOKEN_FILE")) {
    return BadUsage("TETHER_TOKEN, TETHER_TOKEN_FILE: set one, not both");
  }
  for (const Flag& f : kFlags) {
    if (f.env == nullptr || f.set == nullptr) continue;
    const std::string field = Field(f);
    if (o->sources.count(field) || (field.starts_with("token") && token_flag)) continue;
    const char* env = DeprecatedEnv(field);
    if (env == nullptr && Env(f.env)) env = f.env;
    if (env == nullptr) continue;
    if (!f.set(Env(env), o)) return BadUsage(BadValue(f, env, Env(env)));
    o->sources[field] = env;
  }
  return 0;
}

// ---------------------------------------------------------------------------
// The help, from the tables.

// The help's columns: names from 2, their help from 23, a flag's
// variable after its first help line, from 76.
constexpr std::size_t kHelpColumn = 23, kEnvColumn = 76;

// `text`'s lines ('\n'), the first after `label` and the others below it
// at kHelpColumn; `right` ends the first line at kEnvColumn.
void AppendColumns(std::string* out, std::string label, const std::string& text,
                   const std::string& right = "") {
  std::string line = "  " + label;
  if (line.size() + 1 > kHelpColumn) {
    *out += line + "\n";
    line.clear();
  }
  std::size_t start = 0;
  for (bool first = true; start <= text.size(); first = false) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    line.resize(kHelpColumn, ' ');
    line += text.substr(start, end - start);
    if (first && !right.empty()) {
      line.resize(std::max(line.size() + 2, kEnvColumn), ' ');
      line += right;
    }
    *out += line + "\n";
    line.clear();
    start = end + 1;
  }
}

// Words of `text` on lines of at most 78 characters, from column 2.
void AppendParagraph(std::string* out, const std::string& text) {
  std::string line = " ";
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find(' ', start), text.size());
    const std::string word = text.substr(start, end - start);
    if (line.size() + 1 + word.size() > 78) {
      *out += line + "\n";
      line = " ";
    }
    line += " " + word;
    start = end + 1;
  }
  *out += line + "\n";
}

std::string Expand(std::string help) {
  constexpr std::string_view kSteps = "{default steps}";
  if (auto at = help.find(kSteps); at != std::string::npos) {
    help.replace(at, kSteps.size(), std::to_string(kDefaultSteps));
  }
  return help;
}

void AppendFlag(std::string* out, const Flag& f) {
  std::string label = f.name;
  if (const Flag* parser = FindFlag(f.name); parser != nullptr && parser->alias != nullptr) {
    label = std::string(parser->alias) + ", " + label;
  }
  if (f.value != nullptr) label += std::string(" ") + f.value;
  std::string env = f.env != nullptr ? f.env : "";
  if (!env.empty() && f.value == nullptr) env += "=true|false";
  AppendColumns(out, label, Expand(f.help), env);
}

// The rows whose commands are exactly `group` ("remote", "all") or, for a
// command, name it; "" when there are none.
std::string FlagsFor(std::string_view group) {
  std::string out;
  for (const Flag& f : kFlags) {
    if (Names(f.commands, group)) AppendFlag(&out, f);
  }
  return out;
}

// The name and the synopsis (its alternatives one a line), then the help
// (saying when the command needs --server).
void AppendCommand(std::string* out, const Command& c) {
  const std::string indent(std::strlen(c.name) + 3, ' ');
  std::string label = c.name;
  if (*c.synopsis != '\0') label += " ";
  for (const char* p = c.synopsis; *p != '\0'; ++p) {
    label += *p == '\n' ? "\n" + indent : std::string(1, *p);
  }
  if (label.find('\n') != std::string::npos) {
    *out += "  " + label + "\n";
    label.clear();
  }
  const char* prefix = c.server == ServerUse::kRequired ? "(with --server) " : "";
  AppendColumns(out, label, prefix + std::string(c.help));
}

// The flags of every command that calls a server, and what else they read.
std::string RemoteFlags() {
  std::string out = FlagsFor("remote");
  std::string old, now;
  for (const DeprecatedVariable& d : kDeprecatedVariables) {
    old += std::string(old.empty() ? "" : " and ") + d.old_env;
    now += std::string(now.empty() ? "" : " nor ") + d.env;
  }
  AppendParagraph(&out, old + " (tether-server's own) are still read for the client when neither " +
                            now + " is set, with a warning: that use is deprecated.");
  return out;
}

// The flags that name `c`, and its notes; "" when it has neither.
std::string OptionsOf(const Command& c) {
  std::string out = FlagsFor(c.name);
  if (c.notes != nullptr) AppendParagraph(&out, c.notes);
  return out;
}

// What every help ends with.
std::string OtherOptions() { return "\nOther options:\n" + FlagsFor("all") + "\n" + kExitCodes; }

std::string Usage(std::span<const Command> commands) {
  std::string out =
      "usage: tether [--server ADDR] COMMAND [ARGS] [OPTIONS]\n"
      "       tether COMMAND --help   that command's arguments and options\n"
      "\nCommands:\n";
  for (const Command& c : commands) AppendCommand(&out, c);
  for (const Command& c : commands) {
    const std::string options = OptionsOf(c);
    if (!options.empty()) out += std::string("\nOptions for ") + c.name + ":\n" + options;
  }
  out += "\nWith --server, for " + CommandList(commands, " and ", CallsServer) +
         "\n(each flag not given is read from its environment variable):\n" + RemoteFlags();
  return out + OtherOptions();
}

std::string CommandUsage(const Command& c) {
  std::string out = "usage: " + UsageLine(c) + "\n\n  ";
  for (const char* p = c.help; *p != '\0'; ++p) {
    out += *p == '\n' ? std::string("\n  ") : std::string(1, *p);
  }
  out += "\n";
  if (const std::string options = OptionsOf(c); !options.empty()) {
    out += "\nOptions:\n" + options;
  }
  if (CallsServer(c)) {
    out += "\nWith --server (each flag not given is read from its environment variable):\n" +
           RemoteFlags();
  }
  return out + OtherOptions();
}

}  // namespace

std::string UsageLine(const Command& c) {
  std::string line = "tether ";
  if (c.server == ServerUse::kRequired) line += "--server ADDR ";
  if (c.server == ServerUse::kOptional || c.server == ServerUse::kAddress) {
    line += "[--server ADDR] ";
  }
  line += c.name;
  std::string synopsis = c.synopsis;
  for (std::size_t at; (at = synopsis.find('\n')) != std::string::npos;) {
    synopsis.replace(at, 1, " | ");
  }
  if (!synopsis.empty()) line += " " + synopsis;
  if (!FlagsFor(c.name).empty() || CallsServer(c)) line += " [OPTIONS]";
  return line;
}

int ParseCommandLine(int argc, char** argv, std::span<const Command> commands, Options* o,
                     const Command** command) {
  std::vector<const Flag*> given;
  for (int i = 1; i < argc && !o->help && !o->version; ++i) {
    const std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (o->command.empty()) {
        o->command = arg;
        const Command* c = FindCommand(commands, arg);
        if (c != nullptr && c->forwards_arguments) {
          // `tether plot --help` is the table's help, as for any command.
          o->help = i + 1 < argc && (std::strcmp(argv[i + 1], "--help") == 0 ||
                                     std::strcmp(argv[i + 1], "-h") == 0);
          o->args.assign(argv + i + 1, argv + argc);
          break;
        }
      } else {
        o->args.push_back(arg);
      }
      continue;
    }
    const Flag* f = FindFlag(arg);
    if (f == nullptr) return BadUsage("unknown option '" + arg + "'");
    std::string value = "true";
    if (f->value != nullptr) {
      const bool missing = i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0;
      value = missing ? "" : argv[++i];
    }
    if (!f->set(value, o)) return BadUsage(BadValue(*f, f->name, value));
    if (f->env != nullptr) o->sources[Field(*f)] = f->name;
    given.push_back(f);
  }
  if (o->help) {
    const Command* c = FindCommand(commands, o->command);
    std::cout << (c != nullptr ? CommandUsage(*c) : Usage(commands));
    return kExitOk;
  }
  if (o->version) {
    std::cout << kVersion << "\n";
    return kExitOk;
  }
  if (o->command.empty()) return BadUsage("expected a command: " + CommandList(commands));
  if (!o->server && !o->sources.empty()) {
    return BadUsage(o->sources.begin()->second + ": needs --server ADDR");
  }
  if (o->sources.count("token") && o->sources.count("token_file")) {
    return BadUsage("--token, --token-file: give one, not both");
  }
  if (int code = FromEnvironment(o); code != 0) return code;
  *command = FindCommand(commands, o->command);
  if (*command == nullptr) {
    return BadUsage("unknown command '" + o->command + "'; expected " + CommandList(commands));
  }
  if ((*command)->server == ServerUse::kRequired && !o->server) {
    return BadUsage(o->command + ": needs --server ADDR");
  }
  if ((*command)->server == ServerUse::kNone && o->server) {
    return BadUsage(o->command + ": runs in this process; not with --server");
  }
  for (const Flag* f : given) {
    if (!TakenBy(f->name, **command)) {
      return BadUsage(
          std::string(f->name) + ": not an option of " + o->command + "; it is for " +
          CommandList(commands, " and ", [f](const Command& c) { return TakenBy(f->name, c); }));
    }
  }
  return kParsed;
}

}  // namespace tether::cli
