// tether-server's settings (server/service/server_options.*) against its
// flag table, row by row: the default --help shows is the ServerOptions
// default; the environment variable and the flag (both spellings) each set
// the setting, the flag winning; bad values are rejected with a message
// naming the flag or variable; unknown flags are rejected. A new row in
// kFlags (ServerFlags()) fails here until it has a line in kSamples below.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "service/secret_files.h"
#include "service/server_options.h"

namespace tether::service {
namespace {

// Per flag: a valid non-default value (spelled as `show` spells it) and
// values the parser must reject. The log level and format take any text
// here; ConfigureLogging checks them later (server_options.h).
struct Sample {
  std::string good;
  std::vector<std::string> bad;
};
const std::map<std::string, Sample> kSamples = {
    {"listen", {"0.0.0.0:7000", {"127.0.0.1:65536", "127.0.0.1:port", "127.0.0.1", ":80", ""}}},
    {"workers",
     {"3", {"0", "1025", "three", "-1", "2.5", "", "18446744073709551617", "nan", "inf", "+3"}}},
    {"worker-spin",
     {"250", {"1000001", "fast", "-1", "1e3", "", "18446744073709551616", "nan", "inf"}}},
    {"max-sessions",
     {"7", {"0", "10000001", "many", "", "-3", "1e300", "nan", "99999999999999999999"}}},
    {"max-message-bytes",
     {"65536", {"4095", "2147483648", "big", "", "-1", "nan", "99999999999999999999"}}},
    // 1e10 s overflowed the store's clock (every session expired at once);
    // 1e300 and 1e-9 (rounding to 0 ms) silently meant "never".
    {"session-idle-timeout",
     {"2.5",
      {"-1", "inf", "nan", "soon", "", "1e10", "1e300", "1e-9", "0.0004", "2592000.5", "-inf",
       "NaN", "1e-320"}}},
    {"stream-stall-timeout",
     {"1.5", {"-1", "inf", "nan", "slow", "", "86400.5", "1e300", "1e-9", "0.0004"}}},
    {"compile-workers", {"2", {"0", "1025", "two", "", "-1", "1.5", "nan"}}},
    {"max-queued-compiles", {"8", {"0", "100001", "many", "", "-1", "2.5"}}},
    {"tenant-max-queued-compiles", {"3", {"-1", "100001", "some", "", "1.5", "nan"}}},
    {"keepalive-time", {"30", {"0", "0.5", "-1", "86400.5", "inf", "nan", "", "often"}}},
    {"keepalive-timeout", {"5", {"0", "-1", "3600.5", "inf", "nan", "", "1e-9"}}},
    {"max-connection-idle", {"600", {"-1", "604800.5", "inf", "nan", "", "1e-9", "idle"}}},
    {"max-streams-per-connection", {"16", {"0", "100001", "-1", "1.5", "", "many"}}},
    {"max-extra-workers", {"2", {"-1", "1025", "many", "", "0.5", "nan"}}},
    {"max-snapshots", {"5", {"0", "100001", "lots", "", "-1", "2.5"}}},
    {"state-dir", {"/var/lib/tether", {""}}},
    {"checkpoint-interval", {"2.5", {"-1", "0.001", "86400.5", "often", "", "nan", "inf"}}},
    {"session-store",
     {"redis://127.0.0.1:6379",
      {"", "127.0.0.1:6379", "redis://", "redis://h:99999", "etcd://h:2379"}}},
    {"lease-ttl", {"2.5", {"0.05", "61", "-1", "", "nan", "long"}}},
    {"write-through", {"true", {"yes", "", "2"}}},
    {"ensemble-max-instances", {"5000", {"0", "100000001", "many", "", "-1", "2.5", "nan"}}},
    {"ensemble-max-instance-steps",
     {"1000000", {"0", "1000000000000001", "lots", "", "-1", "1e9", "nan"}}},
    {"ensemble-max-compilations", {"12", {"0", "1000001", "some", "", "-1", "2.5", "nan"}}},
    {"max-compile-nodes", {"5000", {"999", "1000000001", "many", "-1", "", "nan", "inf"}}},
    {"max-derivative-nodes", {"7000", {"999", "10000000001", "lots", "", "nan"}}},
    {"max-tape-length", {"9000", {"999", "1000000001", "long", "", "nan"}}},
    {"max-dense-kkt-work", {"50000000", {"999", "1000000000001", "much", "", "-1", "nan"}}},
    {"compile-memory-budget",
     {"33554432", {"1048575", "68719476737", "big", "", "-1", "1e9", "nan"}}},
    {"compile-time-budget", {"0.5", {"3601", "-1", "inf", "soon", "", "nan", "1e300"}}},
    {"shutdown-grace", {"0.25", {"3601", "-0.5", "inf", "later", "", "1e300", "nan", "-1e-300"}}},
    {"tenant-max-sessions", {"20", {"-1", "10000001", "some", "", "1.5", "nan"}}},
    {"tenant-max-streams", {"4", {"-1", "10000001", "few", "", "2.5"}}},
    {"memory-budget", {"536870912", {"-1", "1048575", "4398046511105", "1G", "", "2.5"}}},
    {"tenant-max-memory", {"1048576", {"-1", "1000", "4398046511105", "lots", "", "1e9"}}},
    {"tokens-file", {"/etc/tether/tokens", {""}}},
    {"tokens-reload-interval", {"0.5", {"0.05", "3600.5", "-1", "", "nan", "soon", "inf"}}},
    {"tls-cert", {"/etc/tether/tls.crt", {}}},
    {"tls-key", {"/etc/tether/tls.key", {}}},
    {"tls-client-ca", {"/etc/tether/ca.crt", {}}},
    {"insecure", {"true", {"yes", "2", "", "TRUE"}}},
    {"strict-file-modes", {"false", {"no", "2", "", "FALSE"}}},
    {"log-level", {"debug", {}}},
    {"log-format", {"json", {}}},
};

// Every member of ServerOptions, compared directly (not through `show`).
bool SameOptions(const ServerOptions& a, const ServerOptions& b) {
  return a.listen == b.listen && a.service.workers == b.service.workers &&
         a.service.worker_spin == b.service.worker_spin &&
         a.service.max_sessions == b.service.max_sessions &&
         a.service.tenant_max_sessions == b.service.tenant_max_sessions &&
         a.service.tenant_max_streams == b.service.tenant_max_streams &&
         a.service.memory_budget == b.service.memory_budget &&
         a.service.tenant_max_memory == b.service.tenant_max_memory &&
         a.tokens_file == b.tokens_file && a.tokens_text == b.tokens_text &&
         a.tokens_reload_interval == b.tokens_reload_interval &&
         a.service.max_message_bytes == b.service.max_message_bytes &&
         a.service.session_idle_timeout == b.service.session_idle_timeout &&
         a.service.stream_stall_timeout == b.service.stream_stall_timeout &&
         a.service.compile_workers == b.service.compile_workers &&
         a.service.max_queued_compiles == b.service.max_queued_compiles &&
         a.service.tenant_max_queued_compiles == b.service.tenant_max_queued_compiles &&
         a.service.max_extra_workers == b.service.max_extra_workers &&
         a.service.max_snapshots == b.service.max_snapshots &&
         a.service.state_dir == b.service.state_dir &&
         a.service.checkpoint_interval == b.service.checkpoint_interval &&
         a.service.session_store == b.service.session_store &&
         a.service.lease_ttl == b.service.lease_ttl &&
         a.service.write_through == b.service.write_through &&
         a.service.ensemble_max_instances == b.service.ensemble_max_instances &&
         a.service.ensemble_max_instance_steps == b.service.ensemble_max_instance_steps &&
         a.service.ensemble_max_compilations == b.service.ensemble_max_compilations &&
         a.service.compile.max_nodes == b.service.compile.max_nodes &&
         a.service.compile.max_derivative_nodes == b.service.compile.max_derivative_nodes &&
         a.service.compile.max_tape_length == b.service.compile.max_tape_length &&
         a.service.compile.max_dense_kkt_work == b.service.compile.max_dense_kkt_work &&
         a.service.compile.max_bytes == b.service.compile.max_bytes &&
         a.service.compile.time_budget == b.service.compile.time_budget &&
         a.shutdown_grace == b.shutdown_grace && a.keepalive_time == b.keepalive_time &&
         a.keepalive_timeout == b.keepalive_timeout &&
         a.max_connection_idle == b.max_connection_idle &&
         a.max_streams_per_connection == b.max_streams_per_connection &&
         a.log_level == b.log_level && a.log_format == b.log_format && a.tls_cert == b.tls_cert &&
         a.tls_key == b.tls_key && a.tls_client_ca == b.tls_client_ca && a.insecure == b.insecure &&
         a.strict_file_modes == b.strict_file_modes;
}

// Parses `args` (after the program name) into `*options`.
bool Parse(std::vector<std::string> args, ServerOptions* options, std::string* error,
           bool* help = nullptr) {
  args.insert(args.begin(), "tether-server");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  bool ignored = false;
  return ParseServerOptions(static_cast<int>(argv.size()), argv.data(), options,
                            help ? help : &ignored, error);
}

// The options with every flag at its sample value (all non-default).
ServerOptions AllSamples() {
  ServerOptions o;
  for (const ServerFlag& flag : ServerFlags()) {
    std::string expected;
    EXPECT_TRUE(flag.set(kSamples.at(flag.name).good, &o, &expected)) << flag.name;
  }
  return o;
}

// The usage line of `flag` (the first of its lines).
std::string UsageLine(const std::string& usage, const ServerFlag& flag) {
  const std::string start = std::string("  --") + flag.name + " " + flag.value_name + " ";
  auto at = usage.find(start);
  if (at == std::string::npos) return "";
  return usage.substr(at, usage.find('\n', at) - at);
}

class ServerOptionsTest : public ::testing::Test {
 protected:
  // No TETHER_* setting of the developer's (or of another test) leaks in.
  void SetUp() override { ClearEnvironment(); }
  void TearDown() override { ClearEnvironment(); }
  static void ClearEnvironment() {
    for (const ServerFlag& flag : ServerFlags()) unsetenv(flag.env);
    unsetenv(kTokensEnv);
  }
};

TEST_F(ServerOptionsTest, EveryFlagHasSamplesAndDistinctNames) {
  std::map<std::string, int> names, envs;
  for (const ServerFlag& flag : ServerFlags()) {
    EXPECT_TRUE(kSamples.count(flag.name)) << "no sample values for --" << flag.name;
    EXPECT_EQ(++names[flag.name], 1) << "--" << flag.name << " twice";
    EXPECT_EQ(++envs[flag.env], 1) << flag.env << " twice";
    EXPECT_EQ(std::string(flag.env).rfind("TETHER_", 0), 0u) << flag.env;
  }
  EXPECT_EQ(names.size(), kSamples.size()) << "a sample names no flag";
}

TEST_F(ServerOptionsTest, HelpShowsTheServerOptionsDefault) {
  const std::string usage = ServerUsage();
  const ServerOptions defaults;
  for (const ServerFlag& flag : ServerFlags()) {
    SCOPED_TRACE(std::string("--") + flag.name);
    const std::string line = UsageLine(usage, flag);
    ASSERT_FALSE(line.empty()) << "--help has no line for it:\n" << usage;
    ASSERT_NE(line.find(flag.env), std::string::npos) << line;
    const std::string help = flag.help;
    const auto placeholder = help.find("{default}");
    if (placeholder == std::string::npos && flag.show(defaults).empty()) {
      continue;  // no default (the TLS files): nothing to show
    }
    if (placeholder == std::string::npos) {
      // Only --workers states its default in words: 0, one per hardware
      // thread, which is not a value the flag accepts.
      EXPECT_STREQ(flag.name, "workers");
      EXPECT_EQ(defaults.service.workers, 0u);
      EXPECT_NE(line.find("hardware threads"), std::string::npos) << line;
      continue;
    }
    // The shown default is what lies between the help's text before and
    // after "{default}" (on the first help line).
    const std::string before = help.substr(0, placeholder);
    ASSERT_EQ(before.find('\n'), std::string::npos) << "{default} on a continuation line";
    std::string after = help.substr(placeholder + 9);
    after = after.substr(0, after.find('\n'));
    // (searched for after the variable's column, where the help starts).
    const auto from = line.find(before, line.find(flag.env) + std::string(flag.env).size());
    ASSERT_NE(from, std::string::npos) << line;
    const auto value_at = from + before.size();
    const auto to = after.empty() ? line.size() : line.find(after, value_at);
    ASSERT_NE(to, std::string::npos) << line;
    const std::string shown = line.substr(value_at, to - value_at);
    ASSERT_FALSE(shown.empty()) << line;
    // Given as the flag, the shown text turns every-sample options back
    // into the default for that member (and touches nothing else).
    ServerOptions options = AllSamples();
    std::string error, unused;
    ASSERT_TRUE(Parse({std::string("--") + flag.name + "=" + shown}, &options, &error))
        << "--help shows '" << shown << "', which the flag rejects: " << error;
    // expected: the samples with this flag's member at its default.
    ServerOptions reset = defaults;
    for (const ServerFlag& other : ServerFlags()) {
      if (&other == &flag) continue;
      ASSERT_TRUE(other.set(kSamples.at(other.name).good, &reset, &unused));
    }
    EXPECT_TRUE(SameOptions(options, reset))
        << "--help shows '" << shown << "', which is not the ServerOptions default";
  }
}

TEST_F(ServerOptionsTest, FlagAndEnvironmentEachSetTheSetting) {
  const ServerOptions defaults;
  for (const ServerFlag& flag : ServerFlags()) {
    SCOPED_TRACE(std::string("--") + flag.name);
    const std::string good = kSamples.at(flag.name).good;
    ASSERT_NE(good, flag.show(defaults)) << "the sample must differ from the default";
    const std::string name = std::string("--") + flag.name;
    std::vector<std::vector<std::string>> spellings = {{name + "=" + good}, {name, good}};
    for (const auto& args : spellings) {
      ServerOptions o;
      std::string error;
      ASSERT_TRUE(Parse(args, &o, &error)) << error;
      EXPECT_EQ(flag.show(o), good) << args[0];
      EXPECT_FALSE(SameOptions(o, defaults)) << args[0] << " changed no member";
      // Only this setting moved.
      ServerOptions only = defaults;
      std::string unused;
      ASSERT_TRUE(flag.set(good, &only, &unused));
      EXPECT_TRUE(SameOptions(o, only)) << args[0];
    }
    // The environment variable alone.
    ASSERT_EQ(setenv(flag.env, good.c_str(), 1), 0);
    ServerOptions from_env;
    std::string error;
    ASSERT_TRUE(Parse({}, &from_env, &error)) << error;
    EXPECT_EQ(flag.show(from_env), good) << flag.env;
    EXPECT_FALSE(SameOptions(from_env, defaults)) << flag.env << " changed no member";
    // The flag wins over the variable: a flag giving the default back.
    ServerOptions both;
    if (std::string(flag.help).find("{default}") != std::string::npos) {
      ASSERT_TRUE(Parse({name + "=" + flag.show(defaults)}, &both, &error)) << error;
      EXPECT_EQ(flag.show(both), flag.show(defaults)) << "the flag must win over " << flag.env;
    }
    // An empty variable is not read.
    ASSERT_EQ(setenv(flag.env, "", 1), 0);
    ServerOptions from_empty;
    ASSERT_TRUE(Parse({}, &from_empty, &error)) << error;
    EXPECT_TRUE(SameOptions(from_empty, defaults)) << "empty " << flag.env << " was read";
    unsetenv(flag.env);
  }
}

TEST_F(ServerOptionsTest, BadValuesAreRejectedNamingTheFlag) {
  int checked = 0;
  for (const ServerFlag& flag : ServerFlags()) {
    for (const std::string& bad : kSamples.at(flag.name).bad) {
      SCOPED_TRACE(std::string("--") + flag.name + " '" + bad + "'");
      const std::string name = std::string("--") + flag.name;
      for (const auto& args :
           std::vector<std::vector<std::string>>{{name + "=" + bad}, {name, bad}}) {
        ServerOptions o;
        std::string error;
        EXPECT_FALSE(Parse(args, &o, &error)) << "accepted";
        EXPECT_NE(error.find("invalid value '" + bad + "' for " + name + ": expected"),
                  std::string::npos)
            << error;
        ++checked;
      }
      if (bad.empty()) continue;  // an empty variable is not read (above)
      ASSERT_EQ(setenv(flag.env, bad.c_str(), 1), 0);
      ServerOptions o;
      std::string error;
      EXPECT_FALSE(Parse({}, &o, &error)) << flag.env << " accepted";
      EXPECT_NE(error.find("invalid value '" + bad + "' for " + flag.env + ": expected"),
                std::string::npos)
          << error;
      unsetenv(flag.env);
    }
  }
  EXPECT_GT(checked, 0);
}

TEST_F(ServerOptionsTest, IdleTimeoutRangeEndsAreAccepted) {
  const std::vector<std::pair<std::string, std::chrono::milliseconds>> cases = {
      {"0", std::chrono::milliseconds(0)},
      {"0.001", std::chrono::milliseconds(1)},
      {"2592000", std::chrono::hours(24 * 30)},
  };
  for (const auto& [value, want] : cases) {
    ServerOptions o;
    std::string error;
    EXPECT_TRUE(Parse({"--session-idle-timeout", value}, &o, &error)) << value << ": " << error;
    EXPECT_EQ(o.service.session_idle_timeout, want) << value;
  }
}

TEST_F(ServerOptionsTest, UnknownFlagsAndMalformedArgumentsAreRejected) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--no-such-flag=1"}, "unknown flag --no-such-flag"},
      {{"--no-such-flag", "1"}, "unknown flag --no-such-flag"},
      {{"--Workers=2"}, "unknown flag --Workers"},
      {{"--workers"}, "flag --workers needs a value"},
      {{"workers=2"}, "unexpected argument 'workers=2'"},
      {{"-w", "2"}, "unexpected argument '-w'"},
  };
  for (const Case& c : cases) {
    ServerOptions o;
    std::string error;
    EXPECT_FALSE(Parse(c.args, &o, &error)) << c.args[0] << " accepted";
    EXPECT_EQ(error, c.message) << c.args[0];
  }
}

std::string NeedsTlsAndTokens(const std::string& listen, const std::string& missing) {
  return "--listen " + listen +
         ": a non-loopback address needs TLS (--tls-cert, --tls-key) and tokens (--tokens-file or "
         "TETHER_TOKENS), or an explicit --insecure true (TETHER_INSECURE=true); missing: " +
         missing;
}

TEST_F(ServerOptionsTest, TransportIsCheckedBeforeListening) {
  struct Case {
    std::vector<std::string> args;
    std::string error;  // empty: accepted
  };
  const std::vector<Case> cases = {
      {{}, ""},
      {{"--listen=localhost:1"}, ""},
      {{"--listen=[::1]:1"}, ""},
      {{"--listen=127.0.0.2:1"}, ""},
      {{"--listen=0.0.0.0:1"}, NeedsTlsAndTokens("0.0.0.0:1", "TLS and tokens")},
      {{"--listen=[::]:1"}, NeedsTlsAndTokens("[::]:1", "TLS and tokens")},
      {{"--listen=0.0.0.0:1", "--insecure=true"}, ""},
      // TLS alone, or tokens alone, is not enough off loopback.
      {{"--listen=0.0.0.0:1", "--tls-cert=c", "--tls-key=k"},
       NeedsTlsAndTokens("0.0.0.0:1", "tokens")},
      {{"--listen=0.0.0.0:1", "--tokens-file=t"}, NeedsTlsAndTokens("0.0.0.0:1", "TLS")},
      {{"--listen=0.0.0.0:1", "--tls-cert=c", "--tls-key=k", "--tokens-file=t"}, ""},
      {{"--listen=0.0.0.0:1", "--tokens-file=t", "--insecure=true"}, ""},
      {{"--tls-cert=c"},
       "--tls-cert and --tls-key: expected both or neither, found only --tls-cert"},
      {{"--tls-key=k"}, "--tls-cert and --tls-key: expected both or neither, found only --tls-key"},
      {{"--tls-client-ca=ca"},
       "--tls-client-ca: expected --tls-cert and --tls-key too (mTLS needs TLS)"},
  };
  for (const Case& c : cases) {
    ServerOptions o;
    std::string error;
    ASSERT_TRUE(Parse(c.args, &o, &error)) << error;
    EXPECT_EQ(CheckTransport(o, &error), c.error.empty()) << testing::PrintToString(c.args);
    if (!c.error.empty()) {
      EXPECT_EQ(error, c.error);
    }
  }
}

TEST_F(ServerOptionsTest, TokensTextComesFromTheEnvironmentOnly) {
  ServerOptions o;
  std::string error;
  ASSERT_TRUE(Parse({}, &o, &error)) << error;
  EXPECT_FALSE(o.has_tokens());
  ASSERT_EQ(setenv(kTokensEnv, "acme 0123456789abcdef", 1), 0);
  ASSERT_TRUE(Parse({}, &o, &error)) << error;
  EXPECT_EQ(o.tokens_text, "acme 0123456789abcdef");
  EXPECT_TRUE(o.has_tokens());
  // No flag carries the text itself (it would show in `ps`).
  ServerOptions p;
  EXPECT_FALSE(Parse({"--tokens", "acme 0123456789abcdef"}, &p, &error));
  EXPECT_NE(ServerUsage().find(kTokensEnv), std::string::npos);
}

TEST_F(ServerOptionsTest, HelpStopsParsing) {
  for (const char* spelling : {"--help", "-h"}) {
    ServerOptions o;
    std::string error;
    bool help = false;
    EXPECT_TRUE(Parse({spelling, "--no-such-flag"}, &o, &error, &help)) << error;
    EXPECT_TRUE(help) << spelling;
  }
}

TEST(IsLoopbackListenTest, DecidesOnTheResolvedAddressesNotTheSpelling) {
  // Numeric loopback addresses, with and without a port or prefix.
  for (const char* listen : {"127.0.0.1:50051", "127.0.0.2", "127.255.255.254:1", "[::1]:1", "::1",
                             "[::1]", "ipv4:127.0.0.1:1", "ipv6:[::1]:1", "[::ffff:127.0.0.1]:1"}) {
    EXPECT_TRUE(IsLoopbackListen(listen)) << listen;
  }
  // localhost resolves (through /etc/hosts) to loopback addresses only.
  EXPECT_TRUE(IsLoopbackListen("localhost:1"));
  EXPECT_TRUE(IsLoopbackListen("localhost"));
  // Not loopback: every address, other addresses, and names that only
  // look like loopback (they do not resolve, or resolve elsewhere).
  for (const char* listen :
       {"0.0.0.0:1", "[::]:1", ":1", "", "10.0.0.1:1", "128.0.0.1:1", "[::2]:1",
        "::", "[::ffff:10.0.0.1]:1", "127.example.invalid:1", "127.0.0.1.example.invalid:1",
        "localhost.example.invalid:1", "[127.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopbackListen(listen)) << listen;
  }
}

// The secret files' rule (service/secret_files.h): nothing for others,
// group read only in the server's own group, never group write.
TEST_F(ServerOptionsTest, SecretFileModesAreOwnerOnlyOrServerGroupRead) {
  for (mode_t ok : {0600, 0400, 0700}) {
    EXPECT_EQ(SecretModeProblem("--tls-key", "/k", S_IFREG | ok, false), "") << std::oct << ok;
  }
  for (mode_t ok : {0640, 0440}) {
    EXPECT_EQ(SecretModeProblem("--tls-key", "/k", S_IFREG | ok, true), "") << std::oct << ok;
  }
  const std::vector<std::pair<mode_t, std::string>> refused = {
      {0644, "accessible to others"},
      {0604, "accessible to others"},
      {0601, "accessible to others"},
      {0660, "accessible to its group beyond reading"},
      {0640, "accessible to its group, which is not a group of the server's"},
  };
  for (const auto& [mode, who] : refused) {
    const std::string problem =
        SecretModeProblem("--tokens-file", "/etc/t", S_IFREG | mode, mode != 0640);
    EXPECT_NE(problem.find("--tokens-file /etc/t: UNPROTECTED SECRET FILE"), std::string::npos)
        << problem;
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", static_cast<unsigned>(mode));
    EXPECT_NE(problem.find(std::string("mode ") + octal + " makes it " + who), std::string::npos)
        << problem;
    EXPECT_NE(problem.find("chmod 0600 /etc/t"), std::string::npos) << problem;
  }
}

}  // namespace
}  // namespace tether::service
