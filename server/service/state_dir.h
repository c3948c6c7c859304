// Sessions that survive a restart (--state-dir DIR): one file per session,
// written atomically, read back at start-up under the same ids.
//
// A file DIR/<id>.session holds a short text header, then the sections the
// header lists, in its order:
//
//   TETHER-SESSION-FILE 3
//   id <32 hex digits>
//   tenant <name>
//   status READY|FAILED
//   error <the FAILED message on one line>
//   display_name <hex of the label's bytes>
//   next_snapshot_id <n>
//   seq <n>                     (the creation order: ListSessions' order)
//   create_time <nanoseconds since the Unix epoch>
//   data <length> <sha256>
//   spec <length> <sha256>                       (zero or more)
//   snapshot <spec> <meta hex> <length> <sha256> (zero or more, oldest first)
//   header-sha256 <hex SHA-256 of the lines above, newlines included>
//   <the sections' bytes>
//
// `data` is the session's portable bytes (engine/session_export.h:
// description and state, with their own SHA-256). A `spec` section is a
// description some snapshot was taken under other than the session's own
// (an UpdateSession since), as a v1::SimulationSpec. A `snapshot` section
// is a v1::SimulationState; its line carries the v1::Snapshot (id, step, t,
// time, label) as hex of its bytes and the description it belongs to: 0 the
// session's, k the k-th `spec` section. Lengths are decimal byte counts,
// sha256 the hex SHA-256 of the section. Files of format 2 (no seq and
// create_time: served after the others, created at start-up) and format 1
// (no next_snapshot_id either, data to the end of the file, no snapshots)
// are read too.
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
// A damaged header (its hash) sets the file aside; a damaged `data` section
// keeps the session from being served (the file is kept); a damaged
// snapshot or spec section drops the snapshots that need it, and the
// session is served without them.
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
#include <vector>

#include "engine/status.h"
#include "service/session_store.h"

namespace tether::service {

class StateDir {
 public:
  // DIR, created when missing (one level); nullptr with *error naming it
  // when it is not a writable directory. `max_file_bytes`: the largest
  // session file written or read (ServiceCore derives it from
  // --max-message-bytes and --max-snapshots).
  static std::unique_ptr<StateDir> Open(const std::string& path, std::size_t max_file_bytes,
                                        std::string* error);

  const std::string& path() const { return path_; }
  std::size_t max_file_bytes() const { return max_file_bytes_; }

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
  // `problems` ("FILE: what is wrong"), never loaded; one that is not a
  // regular file, is larger than max_file_bytes or cannot be read is named
  // in `problems` and kept. A snapshot whose bytes (or whose description's)
  // do not match their checksum is left out and named in `problems`.
  std::vector<Record> ReadAll(std::vector<std::string>* problems);

 private:
  StateDir(std::string path, std::size_t max_file_bytes)
      : path_(std::move(path)), max_file_bytes_(max_file_bytes) {}
  std::string FileOf(const std::string& id) const { return path_ + "/" + id + ".session"; }
  // Writes `bytes` to `file` atomically (temporary file, fsync, rename,
  // fsync DIR).
  Status WriteAtomically(const std::string& file, const std::string& header,
                         const std::string& body);
  const std::string path_;
  const std::size_t max_file_bytes_;
};

}  // namespace tether::service
