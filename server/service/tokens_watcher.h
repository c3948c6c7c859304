// Reads --tokens-file again when it changes, so that a token revoked (or
// added) in the file takes effect on a running server, without a restart.
//
// Polling, not inotify: a Kubernetes Secret volume updates its files by
// swapping a symlink (..data) to a new directory, which a watch on the
// path's inode never sees; and polling costs one small read per interval.
// The watcher reads the file every `interval` and compares its contents
// (not its mtime: the swap may keep it, a copy may keep it too) with those
// of the tokens in force (Authenticator::InForce); when they differ it checks the file's mode
// (service/secret_files.h, as at start-up) and hands the text to
// Authenticator::Reload. A file that cannot be read, is open to others
// (with --strict-file-modes), does not parse or has no token leaves the
// tokens in force as they are and logs an error naming the file and the
// line (never a token); it is read again at the next interval.
//
// The bound: a change to the file is in force for every new call and
// stream within `interval` (plus one read and parse, microseconds to
// milliseconds); a stream already open goes on (it was authenticated when
// it began). In Kubernetes the kubelet's own delay to update a mounted
// Secret (its sync period plus its cache's TTL, about a minute by default)
// comes before that.
//
// Threads and ownership: one thread of its own, started by the constructor
// and joined by the destructor. The Authenticator it reloads must outlive
// it (TetherServer declares it after the ServiceCore that owns the
// Authenticator, so it is destroyed first).
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "service/auth.h"
#include "service/server_options.h"

namespace tether::service {

class TokensWatcher {
 public:
  // Watches `options.tokens_file` every `options.tokens_reload_interval`
  // (which is not zero) for `auth`.
  TokensWatcher(Authenticator* auth, const ServerOptions& options);
  ~TokensWatcher();
  TokensWatcher(const TokensWatcher&) = delete;
  TokensWatcher& operator=(const TokensWatcher&) = delete;

  // One poll now (the thread's body; for tests): true when the tokens in
  // force changed.
  bool PollOnce();

 private:
  void Loop();

  Authenticator* const auth_;
  ServerOptions options_;  // the file, its mode rule, the interval
  const std::string source_;
  // Only the watcher's thread (or a test calling PollOnce with no thread
  // running) touches these two.
  std::string last_text_;   // the contents last seen (parsed or not)
  std::string last_error_;  // logged once per distinct failure
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace tether::service
