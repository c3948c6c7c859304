#include "service/state_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "engine/session_export.h"
#include "engine/wire_walk.h"
#include "service/state_dir_legacy.h"
#include "tether/internal/v1/state_file.pb.h"

namespace tether::service {
namespace {

namespace pb = google::protobuf;
namespace state_file = tether::internal::v1;
using pb::internal::WireFormatLite;

// Format 4: this line, then a state_file::SessionFile to the end of the file.
constexpr std::string_view kMagic = "TETHER-SESSION-FILE 4\n";

std::string Sha256(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
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

// The file whose lock says a server serves the directory (StateDir::Open).
constexpr char kLockFile[] = "lock";

// Enough of a file to tell a session file by its first line.
constexpr std::size_t kPrefixBytes = 64;
constexpr std::string_view kNotASessionFile =
    "not a Tether session file (expected the line 'TETHER-SESSION-FILE 4', or 1 to 3 of earlier "
    "servers)";

constexpr char kCheckpointTimeFile[] = "checkpoint-time";
constexpr char kCheckpointTimeMagic[] = "TETHER-CHECKPOINT-TIME 1";

// The bytes of the regular file `file`, at most `cap` of them. false with
// *problem when it is not a regular file (opened without blocking, so a
// fifo cannot hang start-up), is larger than `cap`, or cannot be read.
// prefix > 0: only its first `prefix` bytes (or all of a shorter file).
bool ReadCapped(const std::string& file, std::size_t cap, std::string* out, std::string* problem,
                std::size_t prefix = 0) {
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
  if (prefix > 0) st.st_size = std::min<off_t>(st.st_size, static_cast<off_t>(prefix));
  out->clear();
  // Room for the end-of-file check below (one more read of up to 64 KiB):
  // without it, the resize after a whole file was read reallocated and
  // held the file twice (1.04 GB for a 500 MiB file).
  out->reserve(std::min<std::size_t>(cap + 1, static_cast<std::size_t>(st.st_size) + 65536));
  out->resize(static_cast<std::size_t>(st.st_size));
  std::size_t at = 0;
  // Reads to the end, but never past the cap (a file growing meanwhile).
  for (;;) {
    if (at == out->size()) {
      if (prefix > 0 || out->size() > cap) break;
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

// Appends field `field` of a SessionFile: a Section of `content` and its
// SHA-256, framed as protobuf frames a field (tag, length). The file is
// written a section at a time so that no one message holds all of it
// (protobuf refuses messages over 2 GiB; a session with large snapshots
// may need more). false when the section alone is over 2 GiB.
bool AppendSection(std::string* out, int field, std::string content) {
  state_file::Section section;
  section.set_sha256(Sha256(content));
  section.set_content(std::move(content));
  const std::size_t size = section.ByteSizeLong();
  if (size > INT_MAX) return false;
  uint8_t frame[20];
  uint8_t* end = pb::io::CodedOutputStream::WriteVarint32ToArray(
      WireFormatLite::MakeTag(field, WireFormatLite::WIRETYPE_LENGTH_DELIMITED), frame);
  end = pb::io::CodedOutputStream::WriteVarint64ToArray(size, end);
  out->append(reinterpret_cast<const char*>(frame), static_cast<std::size_t>(end - frame));
  return section.AppendToString(out);
}

// A varint at *at, which moves past it; false when the bytes end first.
bool ReadVarint(std::string_view bytes, std::size_t* at, uint64_t* value) {
  *value = 0;
  for (int shift = 0; shift < 64 && *at < bytes.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(bytes[(*at)++]);
    *value |= uint64_t{byte & 0x7fu} << shift;
    if (!(byte & 0x80)) return true;
  }
  return false;
}

// One field of a SessionFile: its number and its bytes (a Section).
struct RawSection {
  uint64_t field = 0;
  std::string_view bytes;
  bool cut = false;  // the file ends inside it: `bytes` is what is there
};

// The sections of a SessionFile one at a time, by their framing alone: a
// file cut short loses its last sections only, and a file may be larger
// than protobuf reads as one message.
class SectionReader {
 public:
  explicit SectionReader(std::string_view bytes) : bytes_(bytes) {}
  // The next section; false at the end of the file, or when what follows
  // is not framed as a SessionFile's field (damaged() then).
  bool Next(RawSection* s) {
    if (at_ == bytes_.size() || cut_) return false;
    uint64_t tag = 0, length = 0;
    if (!ReadVarint(bytes_, &at_, &tag)) return false;  // cut inside the tag
    s->field = tag >> 3;
    if (s->field == 0 || (tag & 7) != WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
      damaged_ = true;
      return false;
    }
    cut_ = !ReadVarint(bytes_, &at_, &length) || length > bytes_.size() - at_;
    s->cut = cut_;
    s->bytes = bytes_.substr(at_, cut_ ? std::string_view::npos : length);
    at_ += s->bytes.size();
    return true;
  }
  bool damaged() const { return damaged_; }

 private:
  const std::string_view bytes_;
  std::size_t at_ = 0;
  bool cut_ = false, damaged_ = false;
};

// The objects the parse of a file of `size` bytes may make (WalkWire): one per
// 16 bytes, and 1024. A real file makes one per 50 bytes or fewer: three
// per snapshot (its header entry, v1::Snapshot and create_time) for some
// 170 bytes or more (its metadata, state and checksum).
int64_t ObjectBudget(std::size_t size) { return 1024 + static_cast<int64_t>(size / 16); }
constexpr std::string_view kOverBudget = "holds more fields than a session file of its size can";

// `s` parsed as a Section whose content matches its SHA-256: its content
// in *content. Otherwise what is wrong with it, to follow its name.
std::optional<std::string> OpenSection(const RawSection& s, int64_t* budget, std::string* content) {
  if (s.cut) return "is cut short (the file ends inside it)";
  state_file::Section section;
  switch (WalkWire(state_file::Section::descriptor(), s.bytes, budget)) {
    case WireFit::kFits: break;
    case WireFit::kMalformed: return "does not parse";
    case WireFit::kOverBudget: return std::string(kOverBudget);
  }
  if (!section.ParseFromArray(s.bytes.data(), static_cast<int>(s.bytes.size()))) {
    return "does not parse";
  }
  if (section.sha256() != Sha256(section.content())) return "does not match its SHA-256";
  *content = std::move(*section.mutable_content());
  return std::nullopt;
}

// What start-up does with a file it has read.
enum class Verdict {
  kServe,     // served (perhaps without the snapshots named)
  kKeep,      // not served, the file kept (its session's state is damaged)
  kSetAside,  // renamed to *.corrupt (its header is damaged)
};

// Reads a SessionFile (a file of format 4 after its magic line) into *r
// (all but r->file). *problem says why when the verdict is not kServe;
// *notes names the snapshots left out.
Verdict ParseRecord(std::string_view bytes, StateDir::Record* r, std::string* problem,
                    std::vector<std::string>* notes) {
  int64_t budget = ObjectBudget(bytes.size());
  SectionReader sections(bytes);
  RawSection raw;
  // The header comes first.
  std::string content;
  if (!sections.Next(&raw)) {
    *problem = "the header section is missing";
    return Verdict::kSetAside;
  }
  if (raw.field != state_file::SessionFile::kHeaderFieldNumber) {
    *problem = "the first section is not the header";
    return Verdict::kSetAside;
  }
  if (auto wrong = OpenSection(raw, &budget, &content)) {
    *problem = "the header section " + *wrong;
    return Verdict::kSetAside;
  }
  state_file::SessionHeader header;
  const WireFit fit = WalkWire(state_file::SessionHeader::descriptor(), content, &budget);
  if (fit == WireFit::kOverBudget) {
    *problem = "the header section " + std::string(kOverBudget);
    return Verdict::kSetAside;
  }
  if (fit != WireFit::kFits || !header.ParseFromString(content)) {
    *problem = "the header section matches its SHA-256 but does not parse";
    return Verdict::kSetAside;
  }
  if (header.status() != v1::READY && header.status() != v1::FAILED) {
    *problem = "expected status READY or FAILED, found " +
               std::to_string(static_cast<int>(header.status()));
    return Verdict::kSetAside;
  }
  if (header.seq() == 0 || header.create_time_unix_nanos() <= 0) {
    *problem = "the header has no seq or create_time";
    return Verdict::kSetAside;
  }
  r->id = header.id();
  r->tenant = header.tenant();
  r->failed = header.status() == v1::FAILED;
  r->error = header.error();
  r->display_name = header.display_name();
  r->next_snapshot_id = header.next_snapshot_id();
  r->seq = header.seq();
  r->create_time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::nanoseconds(header.create_time_unix_nanos())));

  // The other sections, each checked alone.
  const std::size_t snapshots = static_cast<std::size_t>(header.snapshots_size());
  bool have_data = false;
  std::optional<std::string> data_problem = "is missing (the file is cut short)";
  std::vector<std::optional<std::string>> spec_problems;
  std::vector<std::string> states;
  std::vector<std::optional<std::string>> state_problems;
  while (sections.Next(&raw)) {
    switch (raw.field) {
      case state_file::SessionFile::kHeaderFieldNumber:
        *problem = "a second header section";
        return Verdict::kSetAside;
      case state_file::SessionFile::kDataFieldNumber:
        if (have_data) {
          *problem = "a second data section";
          return Verdict::kSetAside;
        }
        have_data = true;
        data_problem = OpenSection(raw, &budget, &r->data);
        break;
      case state_file::SessionFile::kSpecsFieldNumber:
        // Each is some snapshot's: no more of them than snapshots.
        if (r->specs.size() == snapshots) {
          *problem = "more spec sections than snapshots";
          return Verdict::kSetAside;
        }
        r->specs.emplace_back();
        spec_problems.push_back(OpenSection(raw, &budget, &r->specs.back()));
        break;
      case state_file::SessionFile::kSnapshotStatesFieldNumber:
        if (states.size() == snapshots) {
          *problem = "more snapshot sections than the header lists";
          return Verdict::kSetAside;
        }
        states.emplace_back();
        state_problems.push_back(OpenSection(raw, &budget, &states.back()));
        break;
      default:  // a later addition: skipped
        break;
    }
  }
  if (sections.damaged()) {
    *problem = "the framing of its sections is damaged";
    return Verdict::kSetAside;
  }
  if (data_problem) {
    *problem = "the data section (the session's description and state) " + *data_problem;
    return Verdict::kKeep;
  }
  for (std::size_t k = 0; k < spec_problems.size(); ++k) {
    if (spec_problems[k]) {
      notes->push_back("the description of snapshots (spec section " + std::to_string(k + 1) +
                       ") " + *spec_problems[k] + ": those snapshots are left out");
    }
  }
  for (std::size_t i = 0; i < snapshots; ++i) {
    const state_file::SnapshotHeader& entry = header.snapshots(static_cast<int>(i));
    const std::string name = "snapshot " + std::to_string(entry.meta().snapshot_id());
    const std::size_t spec = entry.spec();
    if (spec > r->specs.size()) {
      notes->push_back(name + ": its description (spec section " + std::to_string(spec) +
                       ") is missing (the file is cut short): left out");
    } else if (spec > 0 && spec_problems[spec - 1]) {
      // Named with its description above.
    } else if (i >= states.size()) {
      notes->push_back(name + " is missing (the file is cut short): left out");
    } else if (state_problems[i]) {
      notes->push_back(name + " " + *state_problems[i] + ": left out");
    } else {
      r->snapshots.push_back({entry.meta(), spec, std::move(states[i])});
    }
  }
  return Verdict::kServe;
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
  // One server a directory: two would serve the same sessions and write
  // over each other's files (the second's steps were lost at the next
  // restart; a session one deleted kept its file). An advisory lock on
  // DIR/lock, held until the process ends (a killed server's with it).
  const std::string lock = path + "/" + kLockFile;
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = Errno("--state-dir " + path + ": cannot open its lock file " + lock);
    return nullptr;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *error = errno == EWOULDBLOCK
                 ? "--state-dir " + path + ": in use by another server (it holds " + lock +
                       "); expected one server per directory"
                 : Errno("--state-dir " + path + ": cannot lock " + lock);
    ::close(fd);
    return nullptr;
  }
  return std::unique_ptr<StateDir>(new StateDir(path, max_file_bytes, fd));
}

StateDir::~StateDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

StatusOr<std::string> StateDir::Encode(const Session& session, const Session::Persisted& p) {
  v1::SessionExport payload;
  *payload.mutable_spec() = *p.spec;
  *payload.mutable_state() = p.state;
  payload.set_display_name(session.display_name());
  state_file::SessionHeader header;
  header.set_id(session.id());
  header.set_tenant(session.owner().name());
  header.set_status(p.status == v1::FAILED ? v1::FAILED : v1::READY);
  header.set_error(p.error);
  header.set_display_name(session.display_name());
  header.set_next_snapshot_id(p.next_snapshot_id);
  header.set_seq(session.seq());
  header.set_create_time_unix_nanos(
      std::chrono::duration_cast<std::chrono::nanoseconds>(session.create_time().time_since_epoch())
          .count());
  // The descriptions snapshots were taken under, other than the session's
  // own (an UpdateSession since), once each; a snapshot refers to its own
  // by index (0: the session's).
  std::vector<const v1::SimulationSpec*> specs;
  for (const Session::SavedSnapshot& s : p.snapshots) {
    std::size_t spec = 0;
    if (s.spec.get() != p.spec.get()) {
      auto it = std::find(specs.begin(), specs.end(), s.spec.get());
      if (it == specs.end()) it = specs.insert(specs.end(), s.spec.get());
      spec = static_cast<std::size_t>(it - specs.begin()) + 1;
    }
    state_file::SnapshotHeader* entry = header.add_snapshots();
    *entry->mutable_meta() = s.meta;
    entry->set_spec(static_cast<uint32_t>(spec));
  }
  using File = state_file::SessionFile;
  std::string bytes(kMagic);
  bool fits =
      AppendSection(&bytes, File::kHeaderFieldNumber, header.SerializeAsString()) &&
      AppendSection(&bytes, File::kDataFieldNumber, EncodeSessionExport(std::move(payload)));
  for (const v1::SimulationSpec* spec : specs) {
    fits = fits && AppendSection(&bytes, File::kSpecsFieldNumber, spec->SerializeAsString());
  }
  for (const Session::SavedSnapshot& s : p.snapshots) {
    fits = fits &&
           AppendSection(&bytes, File::kSnapshotStatesFieldNumber, s.state.SerializeAsString());
  }
  if (!fits) {
    return Status(StatusCode::kResourceExhausted, "a section would be over 2 GiB");
  }
  return bytes;
}

Status StateDir::Write(const Session& session, const Session::Persisted& p) {
  const std::string file = FileOf(session.id());
  StatusOr<std::string> encoded = Encode(session, p);
  if (!encoded.ok()) {
    return Status(encoded.status().code(),
                  "--state-dir: " + file + ": " + encoded.status().message());
  }
  const std::string& bytes = *encoded;
  if (bytes.size() > max_file_bytes_) {
    // Start-up would skip it: refused here, so the failure is seen now.
    return Status(StatusCode::kResourceExhausted,
                  "--state-dir: " + file + " would be " + std::to_string(bytes.size()) +
                      " bytes, more than the cap of " + std::to_string(max_file_bytes_) +
                      " (--max-message-bytes times (1 + 2 * --max-snapshots) plus 1 MiB)");
  }
  return WriteAtomically(file, bytes);
}

Status StateDir::WriteAtomically(const std::string& file, std::string_view bytes) {
  const std::string tmp = file + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return IoError(Errno("--state-dir: cannot write " + tmp));
  bool ok = WriteAll(fd, bytes) && ::fsync(fd) == 0;
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
                         std::string(kCheckpointTimeMagic) + "\n" + std::to_string(ms) + "\n");
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

bool StateDir::Decode(std::string_view bytes, Record* r, std::string* problem,
                      std::vector<std::string>* notes) {
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    *problem = "not a Tether session record (expected the line 'TETHER-SESSION-FILE 4')";
    return false;
  }
  if (ParseRecord(bytes.substr(kMagic.size()), r, problem, notes) != Verdict::kServe) return false;
  if (!IsSessionId(r->id)) {
    *problem = "the id in the header is not a session id";
    return false;
  }
  return true;
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
    // Its size, then its first line: never more than max_file_bytes_ is read
    // or parsed, and a file that is not a session file is set aside without
    // reading the rest.
    if (!ReadCapped(file, max_file_bytes_, &bytes, &problem, kPrefixBytes)) {
      problems->push_back(file + ": " + problem + "; skipped (the file is kept)");
      continue;
    }
    if (std::string_view(bytes).substr(0, kMagic.size()) != kMagic &&
        !legacy_state::IsLegacySessionFile(bytes)) {
      problems->push_back(file + ": " + std::string(kNotASessionFile) + " (renamed to .corrupt)");
      ::rename(file.c_str(), (file + ".corrupt").c_str());
      continue;
    }
    if (!ReadCapped(file, max_file_bytes_, &bytes, &problem)) {
      problems->push_back(file + ": " + problem + "; skipped (the file is kept)");
      continue;
    }
    Record r;
    r.file = file;
    std::vector<std::string> notes;
    problem.clear();
    Verdict verdict = Verdict::kSetAside;
    if (std::string_view(bytes).substr(0, kMagic.size()) == kMagic) {
      verdict = ParseRecord(std::string_view(bytes).substr(kMagic.size()), &r, &problem, &notes);
    } else if (legacy_state::IsLegacySessionFile(bytes)) {
      verdict = legacy_state::ParseLegacySessionFile(bytes, &r, &problem, &notes)
                    ? Verdict::kServe
                    : Verdict::kSetAside;
    } else {
      problem = kNotASessionFile;  // it changed since its first line was read
    }
    if (verdict != Verdict::kSetAside && (!IsSessionId(r.id) || name != r.id + ".session")) {
      verdict = Verdict::kSetAside;
      problem = "the id in the header does not match the file name";
    }
    if (verdict == Verdict::kSetAside) {
      problems->push_back(file + ": " + problem + " (renamed to .corrupt)");
      ::rename(file.c_str(), (file + ".corrupt").c_str());
      continue;
    }
    if (verdict == Verdict::kKeep) {
      problems->push_back(file + ": " + problem + "; not served (the file is kept)");
      continue;
    }
    for (const auto& p : notes) problems->push_back(file + ": " + p);
    records.push_back(std::move(r));
  }
  // Creation order; files without one (format 1 and 2) last, by name.
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) {
    return (a.seq == 0 ? UINT64_MAX : a.seq) < (b.seq == 0 ? UINT64_MAX : b.seq);
  });
  return records;
}

}  // namespace tether::service
