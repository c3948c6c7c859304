#include "service/tokens_watcher.h"

#include <spdlog/spdlog.h>

#include "service/secret_files.h"

namespace tether::service {

TokensWatcher::TokensWatcher(Authenticator* auth, const ServerOptions& options)
    : auth_(auth), options_(options), source_("--tokens-file " + options.tokens_file) {
  // Only the file's mode matters here, not --tls-key's.
  options_.tls_key.clear();
  thread_ = std::thread([this] { Loop(); });
}

TokensWatcher::~TokensWatcher() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void TokensWatcher::Loop() {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, options_.tokens_reload_interval, [this] { return stop_; })) {
    lock.unlock();
    PollOnce();
    lock.lock();
  }
}

bool TokensWatcher::PollOnce() {
  std::string text;
  std::string error;
  auto fail = [&](const std::string& why) {
    if (why != last_error_) {
      spdlog::error("{}; keeping the {} token(s) in force", why, auth_->token_count());
      last_error_ = why;
    }
    return false;
  };
  if (!ReadTokensFile(options_.tokens_file, &text)) {
    return fail(source_ + ": cannot read the file to reload it");
  }
  // Unchanged (compared with the text the tokens in force came from, so a
  // change made between start-up and the first poll is seen too).
  if (auth_->InForce(text)) {
    last_error_.clear();
    return false;
  }
  if (!CheckSecretFileModes(options_, &error)) return fail(error);
  // A file that fails is tried again at every poll (its error logged once).
  if (!auth_->Reload(text, source_, &error)) return fail(error);
  last_error_.clear();
  spdlog::info("{}: reloaded, {} token(s) of {} tenant(s) in force", source_, auth_->token_count(),
               auth_->tenant_count());
  return true;
}

}  // namespace tether::service
