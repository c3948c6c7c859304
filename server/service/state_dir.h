// Sessions that survive a restart (--state-dir DIR): one file per session,
// written atomically, read back at start-up under the same ids.
//
// A file DIR/<id>.session (format 4) is the line "TETHER-SESSION-FILE 4",
// then a tether.internal.v1.SessionFile to the end of the file
// (proto/tether/internal/v1/state_file.proto): its sections, each a
// Section of bytes and their SHA-256, in this order:
//
//   header           a SessionHeader: id, tenant, status (READY or FAILED)
//                    and error, display_name, next_snapshot_id, seq (the
//                    creation order: ListSessions'), create_time, and per
//                    snapshot (oldest first) its v1::Snapshot and the
//                    description it belongs to (0 the session's, k the k-th
//                    of `specs`)
//   data             the session's portable bytes (engine/session_export.h:
//                    description and state, with their own SHA-256)
//   specs            (zero or more) each a description some snapshot was
//                    taken under other than the session's own (an
//                    UpdateSession since), as a v1::SimulationSpec
//   snapshot_states  (one per snapshot) its v1::SimulationState
//
// The sections are read one by one by their framing (protobuf's for a
// field: tag, length), each parsed and checked alone: a file cut short
// loses its last sections only, and a file may be larger than the 2 GiB
// protobuf parses as one message. Before protobuf parses a section, a walk
// of its wire format checks that the objects it would make stay within one
// per 16 bytes of the file, so that a hostile file (millions of empty
// fields) cannot make start-up allocate more than a small multiple of its
// size. Files of formats 1 to 3 (a text header) are read too
// (service/state_dir_legacy.h); only format 4 is written.
//
// Start-up reads only regular files (a directory, fifo, device or a
// symlink to one is skipped with a warning naming it), of at most
// max_file_bytes (a larger one is skipped, named with its size; never read
// past the cap), and a file that cannot be read is named and skipped:
// start-up never fails on a file. Files skipped so are kept.
//
// DIR/checkpoint-time holds the wall time of the last completed
// checkpoint ("TETHER-CHECKPOINT-TIME 1\n<ms since the Unix epoch>\n",
// written like a session file), so that a restart does not postpone a
// checkpoint that was due (ServiceCore::CheckpointLoop).
//
// A damaged header (its SHA-256; a file that is not a SessionFile) sets the
// file aside (renamed *.corrupt); a damaged `data` section keeps the
// session from being served (the file is kept); a damaged snapshot or spec
// section drops the snapshots that need it, and the session is served
// without them. Each is logged naming the file and the section.
//
// Writes go to a temporary file in DIR, fsync, rename over the old file,
// fsync DIR: a crash leaves the old file or the new one, never a torn one.
//
// Threading: Write and Remove may run on any thread at once for different
// ids (the checkpoint thread, the shutdown drain, DeleteSession); the same
// id is written by one thread at a time (ServiceCore serializes them).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"
#include "service/session_store.h"

namespace tether::service {

class StateDir {
 public:
  // DIR, created when missing (one level), locked for this process (DIR/lock,
  // flock); nullptr with *error naming it when it is not a writable
  // directory or another server holds it. `max_file_bytes`: the largest
  // session file written or read (ServiceCore derives it from
  // --max-message-bytes and --max-snapshots).
  static std::unique_ptr<StateDir> Open(const std::string& path, std::size_t max_file_bytes,
                                        std::string* error);

  const std::string& path() const { return path_; }
  std::size_t max_file_bytes() const { return max_file_bytes_; }

  // The bytes of a session file of `session`'s published state
  // (Session::PersistedForm): what Write writes and, as one record per
  // session, a shared session store holds (service/cluster_sessions.h).
  // RESOURCE_EXHAUSTED when a section would be over 2 GiB.
  static StatusOr<std::string> Encode(const Session& session, const Session::Persisted& persisted);
  // Writes `session`'s published state (Session::PersistedForm).
  Status Write(const Session& session, const Session::Persisted& persisted);
  // Removes the session's file (a deleted or expired session).
  void Remove(const std::string& id);
  // Whether the session's file is there (a checkpoint rewrites an
  // unchanged session whose file went, e.g. with the directory).
  bool Exists(const std::string& id) const;
  // DIR/checkpoint-time: writes `t` (an error when DIR cannot be written:
  // it doubles as the checkpoint's test that DIR is writable) and reads it
  // back (nullopt when absent or unreadable).
  Status WriteCheckpointTime(std::chrono::system_clock::time_point t);
  std::optional<std::chrono::system_clock::time_point> ReadCheckpointTime() const;

  // A snapshot read back: its metadata, the description it belongs to (0
  // the session's, k Record::specs[k - 1]) and its SimulationState bytes.
  struct SnapshotRecord {
    v1::Snapshot meta;
    std::size_t spec = 0;
    std::string state;
  };
  // A file read back: what Add needs.
  struct Record {
    std::string file;
    std::string id, tenant, display_name, error;
    bool failed = false;
    std::string data;                       // the export envelope
    std::vector<std::string> specs;         // v1::SimulationSpec bytes
    std::vector<SnapshotRecord> snapshots;  // oldest first, checksums checked
    uint64_t next_snapshot_id = 1;
    uint64_t seq = 0;                                     // 0: not recorded (format 1 and 2)
    std::chrono::system_clock::time_point create_time{};  // the epoch: not recorded
  };
  // Every DIR/*.session, in creation order (seq; then by name). A file
  // whose header is damaged is renamed to *.corrupt and named in
  // `problems` ("FILE: what is wrong"), never loaded; one whose data
  // section is damaged, that is not a regular file, is larger than
  // max_file_bytes or cannot be read is named in `problems` and kept. A
  // snapshot whose bytes (or whose description's) do not match their
  // checksum is left out and named in `problems`.
  std::vector<Record> ReadAll(std::vector<std::string>* problems);
  // Encode's bytes (format 4 only) read back into *r (all but r->file),
  // checked as ReadAll checks a file: false with *problem when the session
  // cannot be served from them; *notes names snapshots left out.
  static bool Decode(std::string_view bytes, Record* r, std::string* problem,
                     std::vector<std::string>* notes);

  ~StateDir();
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

 private:
  StateDir(std::string path, std::size_t max_file_bytes, int lock_fd)
      : path_(std::move(path)), max_file_bytes_(max_file_bytes), lock_fd_(lock_fd) {}
  std::string FileOf(const std::string& id) const { return path_ + "/" + id + ".session"; }
  // Writes `bytes` to `file` atomically (temporary file, fsync, rename,
  // fsync DIR).
  Status WriteAtomically(const std::string& file, std::string_view bytes);
  const std::string path_;
  const std::size_t max_file_bytes_;
  const int lock_fd_;  // DIR/lock, flock()ed while this server serves DIR
};

}  // namespace tether::service
