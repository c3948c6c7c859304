#include "service/secret_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

namespace tether::service {
namespace {

// True when the process's effective or a supplementary group is `gid`.
bool ServerInGroup(gid_t gid) {
  if (gid == getegid()) return true;
  const int n = getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  const int got = getgroups(n, groups.data());
  for (int i = 0; i < got; ++i) {
    if (groups[static_cast<std::size_t>(i)] == gid) return true;
  }
  return false;
}

}  // namespace

std::string SecretModeProblem(const std::string& flag, const std::string& path, mode_t mode,
                              bool server_in_group) {
  const mode_t perms = mode & 0777;
  const char* who = nullptr;
  if ((perms & S_IRWXO) != 0) {
    who = "others";
  } else if ((perms & (S_IWGRP | S_IXGRP)) != 0) {
    who = "its group beyond reading (write or execute)";
  } else if ((perms & S_IRGRP) != 0 && !server_in_group) {
    who = "its group, which is not a group of the server's";
  }
  if (who == nullptr) return {};
  return fmt::format(
      "{} {}: UNPROTECTED SECRET FILE: mode {:04o} makes it accessible to {}; expected 0600 "
      "(or 0640 with the server's group): chmod 0600 {} (or --strict-file-modes false)",
      flag, path, static_cast<unsigned>(perms), who, path);
}

bool CheckSecretFileModes(const ServerOptions& options, std::string* error) {
  const std::pair<const char*, const std::string*> files[] = {
      {"--tls-key", &options.tls_key}, {"--tokens-file", &options.tokens_file}};
  for (const auto& [flag, path] : files) {
    if (path->empty()) continue;
    struct stat st;
    if (stat(path->c_str(), &st) != 0) continue;  // the reader names the missing file
    std::string problem = SecretModeProblem(flag, *path, st.st_mode, ServerInGroup(st.st_gid));
    if (problem.empty()) continue;
    if (options.strict_file_modes) {
      *error = problem;
      return false;
    }
    spdlog::warn("{} (allowed by --strict-file-modes false)", problem);
  }
  return true;
}

}  // namespace tether::service
