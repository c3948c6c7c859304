// Formats 1 to 3 of the --state-dir session files: read only
// (service/state_dir_legacy.h). Moved here from state_dir.cc, which wrote
// them, when format 4 replaced them; since then the check of the id
// against the file name is StateDir::ReadAll's (for every format), and the
// header's lines are bounded by the file's size.
#include "service/state_dir_legacy.h"

#include <openssl/sha.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>

namespace tether::service::legacy_state {
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

}  // namespace

bool IsLegacySessionFile(std::string_view bytes) {
  for (const char* magic : {kMagicLine, kMagicLineV2, kMagicLineV1}) {
    const std::string line = std::string(magic) + "\n";
    if (bytes.substr(0, line.size()) == line) return true;
  }
  return false;
}

// One function of about 160 lines on purpose: the grammar of a frozen
// format (versions 1 to 3, never written again), read top to bottom as the
// file is laid out; splitting it would scatter the layout it documents.
bool ParseLegacySessionFile(const std::string& bytes, StateDir::Record* r, std::string* problem,
                            std::vector<std::string>* snapshot_problems) {
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
    // Bounded memory: a real header has a line per ~150 bytes of file at
    // most (a snapshot's); a file of newlines must not make millions.
    if (lines.size() > 64 + bytes.size() / 16) {
      *problem = "more header lines than a session file of its size holds";
      return false;
    }
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

}  // namespace tether::service::legacy_state
