// The --state-dir session files of formats 1 to 3, which servers before
// format 4 (service/state_dir.h) wrote: read only, so that the sessions of
// a server that is upgraded are served again. Nothing writes them any more;
// a session read from one is written in format 4 when it next changes.
//
// A file of format 3 holds a text header, then the sections it lists, in
// its order:
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
// `data` is the export envelope; its line's SHA-256 is not checked here
// (ImportSimulation checks the envelope's own). A `spec` section is a
// v1::SimulationSpec, a `snapshot` section a v1::SimulationState; a
// snapshot line carries the v1::Snapshot as hex of its bytes and the
// description it belongs to (0 the session's, k the k-th `spec` section).
// Lengths are decimal byte counts, sha256 the hex SHA-256 of the section.
// Format 2 has no seq and create_time (its sessions are served after the
// others, created at start-up); format 1 no next_snapshot_id either, and
// data runs to the end of the file, without snapshots.
//
// Threading: plain functions of their arguments.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "service/state_dir.h"

namespace tether::service::legacy_state {

// Whether `bytes` starts with the magic line of format 1, 2 or 3.
bool IsLegacySessionFile(std::string_view bytes);

// Reads a file of format 1, 2 or 3 into *r (all but r->file). false with
// *problem when its header is damaged (the file is set aside); the
// snapshots whose bytes (or whose description's) do not match their
// checksums are left out and named in *snapshot_problems.
bool ParseLegacySessionFile(const std::string& bytes, StateDir::Record* r, std::string* problem,
                            std::vector<std::string>* snapshot_problems);

}  // namespace tether::service::legacy_state
