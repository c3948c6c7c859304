#include "service/tokens_watcher.h"

#include <fstream>
#include <sstream>

#include <spdlog/spdlog.h>

#include "service/secret_files.h"

namespace tether::service {
namespace {

bool ReadWhole(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return false;
  *out = text.str();
  return true;
}

}  // namespace

TokensWatcher::TokensWatcher(Authenticator* auth, const ServerOptions& options)
    : auth_(auth), options_(options), source_("--tokens-file " + options.tokens_file) {
  // The contents read at start-up are the ones in force: the first poll
  // that differs from them reloads. (Read again here: the file may have
  // changed between Authenticator::Load and now; then the first poll
  // applies it, as it should.)
  if (!ReadWhole(options_.tokens_file, &last_text_)) last_text_.clear();
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
  if (!ReadWhole(options_.tokens_file, &text)) {
    return fail(source_ + ": cannot read the file to reload it");
  }
  if (text == last_text_ && last_error_.empty()) return false;
  if (!CheckSecretFileModes(options_, &error)) return fail(error);
  if (!auth_->Reload(text, source_, &error)) {
    last_text_ = text;  // tried; the next change is tried again
    return fail(error);
  }
  last_text_ = std::move(text);
  last_error_.clear();
  spdlog::info("{}: reloaded, {} token(s) of {} tenant(s) in force", source_, auth_->token_count(),
               auth_->tenant_count());
  return true;
}

}  // namespace tether::service
