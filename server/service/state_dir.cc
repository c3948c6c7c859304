#include "service/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "engine/session_export.h"

namespace tether::service {
namespace {

constexpr char kMagicLine[] = "TETHER-SESSION-FILE 1";

std::string Hex(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}

bool Unhex(std::string_view hex, std::string* out) {
  if (hex.size() % 2) return false;
  out->clear();
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = digit(hex[i]), lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return Hex(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

std::string OneLine(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Status IoError(std::string message) { return Status(StatusCode::kUnavailable, std::move(message)); }

bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

bool FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

bool IsSessionId(const std::string& id) {
  return id.size() == 32 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

std::unique_ptr<StateDir> StateDir::Open(const std::string& path, std::string* error) {
  if (path.empty()) {
    *error = "--state-dir: expected a directory, found an empty name";
    return nullptr;
  }
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = Errno("--state-dir " + path + ": cannot create the directory");
    return nullptr;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = "--state-dir " + path + ": not a directory";
    return nullptr;
  }
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    *error = Errno("--state-dir " + path + ": not writable");
    return nullptr;
  }
  return std::unique_ptr<StateDir>(new StateDir(path));
}

Status StateDir::Write(const Session& session, const Session::Persisted& p) {
  v1::SessionExport payload;
  *payload.mutable_spec() = *p.spec;
  *payload.mutable_state() = p.state;
  payload.set_display_name(session.display_name());
  const std::string data = EncodeSessionExport(std::move(payload));
  std::string header = std::string(kMagicLine) + "\n";
  header += "id " + session.id() + "\n";
  header += "tenant " + session.owner().name() + "\n";
  header += std::string("status ") + (p.status == v1::FAILED ? "FAILED" : "READY") + "\n";
  header += "error " + OneLine(p.error) + "\n";
  header += "display_name " + Hex(session.display_name()) + "\n";
  header += "header-sha256 " + Sha256Hex(header) + "\n";

  const std::string file = FileOf(session.id());
  const std::string tmp = file + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return IoError(Errno("--state-dir: cannot write " + tmp));
  bool ok = WriteAll(fd, header) && WriteAll(fd, data) && ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), file.c_str()) != 0) {
    Status s = IoError(Errno("--state-dir: cannot write " + file));
    ::unlink(tmp.c_str());
    return s;
  }
  if (!FsyncDir(path_)) return IoError(Errno("--state-dir: cannot sync " + path_));
  return Status::Ok();
}

void StateDir::Remove(const std::string& id) {
  ::unlink(FileOf(id).c_str());
  (void)FsyncDir(path_);
}

std::vector<StateDir::Record> StateDir::ReadAll(std::vector<std::string>* problems) {
  std::vector<Record> records;
  DIR* dir = ::opendir(path_.c_str());
  if (!dir) {
    problems->push_back(Errno(path_ + ": cannot list"));
    return records;
  }
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".session") == 0) {
      names.push_back(name);
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string file = path_ + "/" + name;
    std::ifstream in(file, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Record r;
    r.file = file;
    std::string problem;
    // The seven header lines.
    std::vector<std::string> lines;
    std::size_t at = 0, covered = 0;  // covered: the bytes the header hash covers
    for (int k = 0; k < 7 && problem.empty(); ++k) {
      if (k == 6) covered = at;
      std::size_t nl = bytes.find('\n', at);
      if (nl == std::string::npos) {
        problem = "truncated header";
        break;
      }
      lines.push_back(bytes.substr(at, nl - at));
      at = nl + 1;
    }
    auto value = [&](int k, const char* key) -> std::string {
      const std::string prefix = std::string(key) + " ";
      if (problem.empty() && lines[static_cast<std::size_t>(k)].rfind(prefix, 0) != 0) {
        problem = std::string("expected the header line '") + key + " ...'";
      }
      return problem.empty() ? lines[static_cast<std::size_t>(k)].substr(prefix.size()) : "";
    };
    if (problem.empty() && lines[0] != kMagicLine) {
      problem = "not a Tether session file (expected the line '" + std::string(kMagicLine) + "')";
    }
    r.id = value(1, "id");
    r.tenant = value(2, "tenant");
    const std::string status = value(3, "status");
    r.error = value(4, "error");
    const std::string label = value(5, "display_name");
    const std::string digest = value(6, "header-sha256");
    if (problem.empty()) {
      if (Sha256Hex(std::string_view(bytes).substr(0, covered)) != digest) {
        problem = "the header's SHA-256 does not match: the file was corrupted";
      }
    }
    if (problem.empty() && (!IsSessionId(r.id) || name != r.id + ".session")) {
      problem = "the id in the header does not match the file name";
    }
    if (problem.empty() && status != "READY" && status != "FAILED") {
      problem = "expected status READY or FAILED, found '" + status + "'";
    }
    if (problem.empty() && !Unhex(label, &r.display_name)) problem = "bad display_name";
    if (!problem.empty()) {
      problems->push_back(file + ": " + problem + " (renamed to .corrupt)");
      ::rename(file.c_str(), (file + ".corrupt").c_str());
      continue;
    }
    r.failed = status == "FAILED";
    r.data = bytes.substr(at);
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace tether::service
