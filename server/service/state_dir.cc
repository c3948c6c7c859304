#include "service/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>

#include "engine/session_export.h"

namespace tether::service {
namespace {

constexpr char kMagicLine[] = "TETHER-SESSION-FILE 3";
// The format before seq and create_time were written.
constexpr char kMagicLineV2[] = "TETHER-SESSION-FILE 2";
// The format before snapshots were written: seven header lines, the export
// envelope to the end of the file.
constexpr char kMagicLineV1[] = "TETHER-SESSION-FILE 1";

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

constexpr char kCheckpointTimeFile[] = "checkpoint-time";
constexpr char kCheckpointTimeMagic[] = "TETHER-CHECKPOINT-TIME 1";

// The bytes of the regular file `file`, at most `cap` of them. false with
// *problem when it is not a regular file (opened without blocking, so a
// fifo cannot hang start-up), is larger than `cap`, or cannot be read.
bool ReadCapped(const std::string& file, std::size_t cap, std::string* out, std::string* problem) {
  int fd = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) {
    *problem = Errno("cannot open");
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *problem = Errno("cannot stat");
    ::close(fd);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *problem = std::string("not a regular file (found a ") +
               (S_ISDIR(st.st_mode)    ? "directory"
                : S_ISFIFO(st.st_mode) ? "fifo"
                : S_ISCHR(st.st_mode)  ? "character device"
                : S_ISBLK(st.st_mode)  ? "block device"
                : S_ISSOCK(st.st_mode) ? "socket"
                                       : "special file") +
               ")";
    ::close(fd);
    return false;
  }
  if (static_cast<uint64_t>(st.st_size) > cap) {
    *problem = std::to_string(st.st_size) + " bytes, more than the cap of " + std::to_string(cap);
    ::close(fd);
    return false;
  }
  out->clear();
  out->resize(static_cast<std::size_t>(st.st_size));
  std::size_t at = 0;
  // Reads to the end, but never past the cap (a file growing meanwhile).
  for (;;) {
    if (at == out->size()) {
      if (out->size() > cap) break;
      out->resize(std::min(cap + 1, out->size() + 65536));
    }
    ssize_t n = ::read(fd, out->data() + at, out->size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *problem = Errno("cannot read");
      ::close(fd);
      return false;
    }
    if (n == 0) break;
    at += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (at > cap) {
    *problem = "more than the cap of " + std::to_string(cap) + " bytes (it grew while read)";
    return false;
  }
  out->resize(at);
  return true;
}

// "<length> <sha256>" of a section line.
bool ParseSection(std::string_view text, std::size_t* length, std::string* sha) {
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos || space == 0 || space > 12) return false;
  std::size_t n = 0;
  for (char c : text.substr(0, space)) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::size_t>(c - '0');
  }
  *sha = std::string(text.substr(space + 1));
  if (sha->size() != 64) return false;
  *length = n;
  return true;
}

// Parses a session file into *r. false with *problem when the header is
// damaged (the file is set aside); the snapshots whose bytes (or whose
// description's) do not match their checksums are left out and named in
// *snapshot_problems.
bool ParseFile(const std::string& bytes, const std::string& name, StateDir::Record* r,
               std::string* problem, std::vector<std::string>* snapshot_problems) {
  // The header: lines up to and including "header-sha256 ...".
  std::vector<std::string> lines;
  std::size_t at = 0, covered = 0;  // covered: the bytes the header hash covers
  for (;;) {
    const std::size_t nl = bytes.find('\n', at);
    if (nl == std::string::npos) {
      *problem = "truncated header";
      return false;
    }
    lines.push_back(bytes.substr(at, nl - at));
    if (lines.size() == 1 && lines[0] != kMagicLine && lines[0] != kMagicLineV2 &&
        lines[0] != kMagicLineV1) {
      *problem = "not a Tether session file (expected the line '" + std::string(kMagicLine) + "')";
      return false;
    }
    const bool last = lines.back().rfind("header-sha256 ", 0) == 0;
    if (last) covered = at;
    at = nl + 1;
    if (last) break;
  }
  const bool v1 = lines[0] == kMagicLineV1;
  if (Sha256Hex(std::string_view(bytes).substr(0, covered)) != lines.back().substr(14)) {
    *problem = "the header's SHA-256 does not match: the file was corrupted";
    return false;
  }
  std::size_t k = 1;
  auto value = [&](const char* key) -> std::optional<std::string> {
    const std::string prefix = std::string(key) + " ";
    if (k + 1 >= lines.size() || lines[k].rfind(prefix, 0) != 0) {
      *problem = std::string("expected the header line '") + key + " ...'";
      return std::nullopt;
    }
    return lines[k++].substr(prefix.size());
  };
  auto id = value("id");
  auto tenant = value("tenant");
  auto status = value("status");
  auto error = value("error");
  auto label = value("display_name");
  if (!id || !tenant || !status || !error || !label) return false;
  r->id = *id;
  r->tenant = *tenant;
  r->error = *error;
  if (!IsSessionId(r->id) || name != r->id + ".session") {
    *problem = "the id in the header does not match the file name";
    return false;
  }
  if (*status != "READY" && *status != "FAILED") {
    *problem = "expected status READY or FAILED, found '" + *status + "'";
    return false;
  }
  r->failed = *status == "FAILED";
  if (!Unhex(*label, &r->display_name)) {
    *problem = "bad display_name";
    return false;
  }
  if (v1) {
    if (k + 1 != lines.size()) {
      *problem = "unexpected header lines";
      return false;
    }
    r->data = bytes.substr(at);
    return true;
  }
  auto next = value("next_snapshot_id");
  if (!next) return false;
  char* end = nullptr;
  r->next_snapshot_id = std::strtoull(next->c_str(), &end, 10);
  if (next->empty() || *end != '\0') {
    *problem = "bad next_snapshot_id";
    return false;
  }
  if (lines[0] == kMagicLine) {
    auto seq = value("seq");
    if (!seq) return false;
    end = nullptr;
    r->seq = std::strtoull(seq->c_str(), &end, 10);
    if (seq->empty() || *end != '\0' || r->seq == 0) {
      *problem = "bad seq '" + *seq + "' (expected a positive integer)";
      return false;
    }
    auto created = value("create_time");
    if (!created) return false;
    end = nullptr;
    const long long ns = std::strtoll(created->c_str(), &end, 10);
    if (created->empty() || *end != '\0' || ns <= 0) {
      *problem = "bad create_time '" + *created + "' (expected nanoseconds since the epoch)";
      return false;
    }
    r->create_time = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(ns)));
  }
  // The sections, in the order of their lines. A section cut short by a
  // truncated file is read as what is there: its checksum then fails.
  std::string_view rest = std::string_view(bytes).substr(at);
  auto take = [&](std::size_t length) {
    std::string_view s = rest.substr(0, std::min(length, rest.size()));
    rest.remove_prefix(s.size());
    return std::string(s);
  };
  std::size_t length = 0;
  std::string sha;
  auto data = value("data");
  if (!data || !ParseSection(*data, &length, &sha)) {
    if (problem->empty()) *problem = "bad data line";
    return false;
  }
  // A damaged envelope is reported by ImportSimulation (its own checksum).
  r->data = take(length);
  std::vector<bool> spec_ok;
  while (k + 1 < lines.size() && lines[k].rfind("spec ", 0) == 0) {
    if (!ParseSection(std::string_view(lines[k]).substr(5), &length, &sha)) {
      *problem = "bad spec line";
      return false;
    }
    r->specs.push_back(take(length));
    spec_ok.push_back(Sha256Hex(r->specs.back()) == sha);
    if (!spec_ok.back()) {
      snapshot_problems->push_back("the description of snapshots (spec section " +
                                   std::to_string(r->specs.size()) +
                                   ") does not match its SHA-256: those snapshots are left out");
    }
    ++k;
  }
  while (k + 1 < lines.size() && lines[k].rfind("snapshot ", 0) == 0) {
    // "snapshot <spec> <meta hex> <length> <sha256>"
    std::istringstream words(lines[k].substr(9));
    std::string spec_word, meta_hex, length_word, meta_bytes;
    words >> spec_word >> meta_hex >> length_word >> sha;
    StateDir::SnapshotRecord s;
    end = nullptr;
    s.spec = std::strtoull(spec_word.c_str(), &end, 10);
    if (spec_word.empty() || *end != '\0' || s.spec > r->specs.size() ||
        !Unhex(meta_hex, &meta_bytes) || !s.meta.ParseFromString(meta_bytes) ||
        !ParseSection(length_word + " " + sha, &length, &sha)) {
      *problem = "bad snapshot line";
      return false;
    }
    s.state = take(length);
    if (Sha256Hex(s.state) != sha) {
      snapshot_problems->push_back("snapshot " + std::to_string(s.meta.snapshot_id()) +
                                   " does not match its SHA-256: left out");
    } else if (s.spec > 0 && !spec_ok[s.spec - 1]) {
      // Named with its description above.
    } else {
      r->snapshots.push_back(std::move(s));
    }
    ++k;
  }
  if (k + 1 != lines.size()) {
    *problem = "unexpected header line '" + lines[k].substr(0, 40) + "'";
    return false;
  }
  return true;
}
}  // namespace

std::unique_ptr<StateDir> StateDir::Open(const std::string& path, std::size_t max_file_bytes,
                                         std::string* error) {
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
  return std::unique_ptr<StateDir>(new StateDir(path, max_file_bytes));
}

Status StateDir::Write(const Session& session, const Session::Persisted& p) {
  v1::SessionExport payload;
  *payload.mutable_spec() = *p.spec;
  *payload.mutable_state() = p.state;
  payload.set_display_name(session.display_name());
  std::string body = EncodeSessionExport(std::move(payload));
  std::string header = std::string(kMagicLine) + "\n";
  header += "id " + session.id() + "\n";
  header += "tenant " + session.owner().name() + "\n";
  header += std::string("status ") + (p.status == v1::FAILED ? "FAILED" : "READY") + "\n";
  header += "error " + OneLine(p.error) + "\n";
  header += "display_name " + Hex(session.display_name()) + "\n";
  header += "next_snapshot_id " + std::to_string(p.next_snapshot_id) + "\n";
  header += "seq " + std::to_string(session.seq()) + "\n";
  header += "create_time " +
            std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(
                               session.create_time().time_since_epoch())
                               .count()) +
            "\n";
  auto section = [](std::string_view bytes) {
    return std::to_string(bytes.size()) + " " + Sha256Hex(bytes);
  };
  header += "data " + section(body) + "\n";
  // The descriptions snapshots were taken under, other than the session's
  // own (an UpdateSession since), once each; a snapshot refers to its own
  // by index (0: the session's).
  std::vector<const v1::SimulationSpec*> specs;
  std::vector<std::size_t> spec_of(p.snapshots.size(), 0);
  for (std::size_t i = 0; i < p.snapshots.size(); ++i) {
    const v1::SimulationSpec* spec = p.snapshots[i].spec.get();
    if (spec == p.spec.get()) continue;
    auto it = std::find(specs.begin(), specs.end(), spec);
    if (it == specs.end()) it = specs.insert(specs.end(), spec);
    spec_of[i] = static_cast<std::size_t>(it - specs.begin()) + 1;
  }
  for (const v1::SimulationSpec* spec : specs) {
    const std::string bytes = spec->SerializeAsString();
    header += "spec " + section(bytes) + "\n";
    body += bytes;
  }
  for (std::size_t i = 0; i < p.snapshots.size(); ++i) {
    const std::string bytes = p.snapshots[i].state.SerializeAsString();
    header += "snapshot " + std::to_string(spec_of[i]) + " " +
              Hex(p.snapshots[i].meta.SerializeAsString()) + " " + section(bytes) + "\n";
    body += bytes;
  }
  header += "header-sha256 " + Sha256Hex(header) + "\n";
  const std::string file = FileOf(session.id());
  if (header.size() + body.size() > max_file_bytes_) {
    // Start-up would skip it: refused here, so the failure is seen now.
    return Status(StatusCode::kResourceExhausted,
                  "--state-dir: " + file + " would be " +
                      std::to_string(header.size() + body.size()) +
                      " bytes, more than the cap of " + std::to_string(max_file_bytes_) +
                      " (--max-message-bytes times (1 + 2 * --max-snapshots) plus 1 MiB)");
  }
  return WriteAtomically(file, header, body);
}

Status StateDir::WriteAtomically(const std::string& file, const std::string& header,
                                 const std::string& body) {
  const std::string tmp = file + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return IoError(Errno("--state-dir: cannot write " + tmp));
  bool ok = WriteAll(fd, header) && WriteAll(fd, body) && ::fsync(fd) == 0;
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

bool StateDir::Exists(const std::string& id) const {
  struct stat st {};
  return ::stat(FileOf(id).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

Status StateDir::WriteCheckpointTime(std::chrono::system_clock::time_point t) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  return WriteAtomically(path_ + "/" + kCheckpointTimeFile,
                         std::string(kCheckpointTimeMagic) + "\n" + std::to_string(ms) + "\n", "");
}

std::optional<std::chrono::system_clock::time_point> StateDir::ReadCheckpointTime() const {
  std::string bytes, problem;
  if (!ReadCapped(path_ + "/" + kCheckpointTimeFile, 256, &bytes, &problem)) return std::nullopt;
  const std::string prefix = std::string(kCheckpointTimeMagic) + "\n";
  if (bytes.rfind(prefix, 0) != 0) return std::nullopt;
  char* end = nullptr;
  const std::string digits = bytes.substr(prefix.size());
  const long long ms = std::strtoll(digits.c_str(), &end, 10);
  if (digits.empty() || *end != '\n' || ms <= 0) return std::nullopt;
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::milliseconds(ms)));
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
    std::string bytes, problem;
    if (!ReadCapped(file, max_file_bytes_, &bytes, &problem)) {
      problems->push_back(file + ": " + problem + "; skipped (the file is kept)");
      continue;
    }
    Record r;
    r.file = file;
    std::vector<std::string> snapshot_problems;
    problem.clear();
    if (!ParseFile(bytes, name, &r, &problem, &snapshot_problems)) {
      problems->push_back(file + ": " + problem + " (renamed to .corrupt)");
      ::rename(file.c_str(), (file + ".corrupt").c_str());
      continue;
    }
    for (const auto& p : snapshot_problems) problems->push_back(file + ": " + p);
    records.push_back(std::move(r));
  }
  // Creation order; files without one (format 1 and 2) last, by name.
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return (a.seq == 0 ? UINT64_MAX : a.seq) < (b.seq == 0 ? UINT64_MAX : b.seq);
  });
  return records;
}

}  // namespace tether::service
