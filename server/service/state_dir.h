// Sessions that survive a restart (--state-dir DIR): one file per session,
// written atomically, read back at start-up under the same ids.
//
// A file DIR/<id>.session holds a short text header and the session's
// portable bytes (engine/session_export.h: description and state, with
// their own SHA-256):
//
//   TETHER-SESSION-FILE 1
//   id <32 hex digits>
//   tenant <name>
//   status READY|FAILED
//   error <the FAILED message on one line>
//   display_name <hex of the label's bytes>
//   header-sha256 <hex SHA-256 of the lines above, newlines included>
//   <the export envelope, to the end of the file>
//
// Writes go to a temporary file in DIR, fsync, rename over the old file,
// fsync DIR: a crash leaves the old file or the new one, never a torn one.
// Snapshots are kept in memory only (not written).
//
// Threading: Write and Remove may run on any thread at once for different
// ids (the checkpoint thread, the shutdown drain, DeleteSession); the same
// id is written by one thread at a time (ServiceCore serializes them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/status.h"
#include "service/session_store.h"

namespace tether::service {

class StateDir {
 public:
  // DIR, created when missing (one level); nullptr with *error naming it
  // when it is not a writable directory.
  static std::unique_ptr<StateDir> Open(const std::string& path, std::string* error);

  const std::string& path() const { return path_; }

  // Writes `session`'s published state (Session::PersistedForm).
  Status Write(const Session& session, const Session::Persisted& persisted);
  // Removes the session's file (a deleted or expired session).
  void Remove(const std::string& id);

  // A file read back: what Add needs.
  struct Record {
    std::string file;
    std::string id, tenant, display_name, error;
    bool failed = false;
    std::string data;  // the export envelope
  };
  // Every DIR/*.session. A file that cannot be read or whose header is
  // damaged is renamed to *.corrupt and named in `problems` ("FILE: what is
  // wrong"), never loaded.
  std::vector<Record> ReadAll(std::vector<std::string>* problems);

 private:
  explicit StateDir(std::string path) : path_(std::move(path)) {}
  std::string FileOf(const std::string& id) const { return path_ + "/" + id + ".session"; }
  const std::string path_;
};

}  // namespace tether::service
