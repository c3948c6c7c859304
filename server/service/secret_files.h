// The modes of the files holding secrets: the TLS private key (--tls-key)
// and the tokens file (--tokens-file). Like OpenSSH's "UNPROTECTED PRIVATE
// KEY FILE", tether-server refuses to start (exit 2) when such a file is
// open to others, unless --strict-file-modes false.
//
// The rule: no permission at all for others, nothing beyond read for the
// group, and group read only when the file's group is one the server runs
// in (0600 or 0400 for a file the server's user owns; 0640 or 0440 for
// one owned by, e.g., root with the server's group, as a Kubernetes Secret
// volume with fsGroup and defaultMode 0440 mounts it). Public files (the
// certificate, the client CA) are not checked.
//
// Threads: plain functions, no state.
#pragma once

#include <sys/types.h>
#include <string>

#include "service/server_options.h"

namespace tether::service {

// Why `mode` (st_mode) is too open for the secret file that `flag` names at
// `path`; empty when it is not. `server_in_group`: the server runs in the
// file's group (its effective or a supplementary group).
std::string SecretModeProblem(const std::string& flag, const std::string& path, mode_t mode,
                              bool server_in_group);

// Checks --tls-key and --tokens-file (when set) with stat(2); true when both
// are protected, or when options.strict_file_modes is false (then only a
// warning is logged for each open file). A file that cannot be stat'ed is
// left to the reader that opens it (which names it). False with `*error`
// naming the flag, the file, its mode and what is expected otherwise.
bool CheckSecretFileModes(const ServerOptions& options, std::string* error);

}  // namespace tether::service
