#include "engine/session_export.h"

#include <openssl/sha.h>

#include <array>
#include <cstring>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "engine/wire_walk.h"

namespace tether {

namespace {

constexpr char kMagic[8] = {'T', 'E', 'T', 'H', 'E', 'R', 'S', 'X'};
constexpr size_t kHeader = 16;
constexpr size_t kDigest = SHA256_DIGEST_LENGTH;  // 32

std::string Deterministic(const google::protobuf::MessageLite& message) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeWithCachedSizes(&coded);
  }
  return out;
}

std::string Sha256(std::string_view bytes) {
  std::string digest(kDigest, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
         reinterpret_cast<unsigned char*>(digest.data()));
  return digest;
}

void PutLe(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}
uint64_t GetLe(std::string_view in, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + static_cast<size_t>(i)]))
             << (8 * i);
  }
  return value;
}

Status Bad(std::string_view field, const std::string& what) {
  return InvalidArgument(std::string(field) + ": " + what, {{std::string(field), what}});
}

// The status with every field path put under `prefix`.
Status Prefixed(const Status& s, const std::string& prefix) {
  std::vector<FieldViolation> v = s.violations();
  for (auto& x : v) x.field = prefix + "." + x.field;
  return Status(s.code(), s.message(), std::move(v), s.subject());
}

}  // namespace

std::string SpecSha256(const v1::SimulationSpec& spec) {
  spec.ByteSizeLong();  // caches the sizes SerializeWithCachedSizes uses
  return Sha256(Deterministic(spec));
}

std::string EncodeSessionExport(v1::SessionExport payload) {
  payload.set_spec_sha256(SpecSha256(payload.spec()));
  payload.ByteSizeLong();
  const std::string body = Deterministic(payload);
  std::string out(kMagic, sizeof kMagic);
  PutLe(&out, kExportMajor, 2);
  PutLe(&out, kExportMinor, 2);
  PutLe(&out, body.size(), 4);
  out += body;
  out += Sha256(out);
  return out;
}

std::string ExportSimulation(const Simulation& simulation, std::string_view display_name) {
  v1::SessionExport payload;
  *payload.mutable_spec() = simulation.spec();
  simulation.SaveState(payload.mutable_state());
  payload.set_display_name(std::string(display_name));
  return EncodeSessionExport(std::move(payload));
}

Status DecodeSessionExport(std::string_view bytes, v1::SessionExport* out, std::string_view field) {
  if (bytes.size() < kHeader + kDigest) {
    return Bad(field, "expected a Tether session export of at least " +
                          std::to_string(kHeader + kDigest) + " bytes, found " +
                          std::to_string(bytes.size()) + " bytes (truncated?)");
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return Bad(field,
               "expected a Tether session export (starting with \"TETHERSX\"), found other bytes");
  }
  const uint64_t major = GetLe(bytes, 8, 2), minor = GetLe(bytes, 10, 2);
  if (major != kExportMajor) {
    return Bad(field, "expected export format major version " + std::to_string(kExportMajor) +
                          ", found " + std::to_string(major) + "." + std::to_string(minor) +
                          " (written by an incompatible server version)");
  }
  const uint64_t length = GetLe(bytes, 12, 4);
  if (length > kMaxExportPayload || kHeader + length + kDigest != bytes.size()) {
    return Bad(field, "the header gives a payload of " + std::to_string(length) +
                          " bytes, which does not agree with the " + std::to_string(bytes.size()) +
                          " bytes received (expected header 16 + payload + checksum 32): "
                          "truncated or extended");
  }
  const std::string_view covered = bytes.substr(0, kHeader + length);
  if (Sha256(covered) != bytes.substr(kHeader + length)) {
    return Bad(field, "the SHA-256 checksum does not match the contents: the bytes were corrupted");
  }
  // Counted before it is parsed (engine/wire_walk.h): a payload of empty
  // repeated messages makes protobuf allocate some 40 times its size.
  int64_t objects = kMaxMessageObjects;
  if (WalkWire(v1::SessionExport::descriptor(), bytes.substr(kHeader, length), &objects) ==
      WireFit::kOverBudget) {
    return Bad(field, "the payload holds more than " + std::to_string(kMaxMessageObjects) +
                          " messages, list elements and unknown fields; a session's export "
                          "needs far fewer");
  }
  if (!out->ParseFromArray(bytes.data() + kHeader, static_cast<int>(length))) {
    return Bad(field, "the payload is not a valid tether.v1.SessionExport message");
  }
  if (out->spec_sha256() != SpecSha256(out->spec())) {
    return Bad(std::string(field) + ".spec_sha256",
               "the spec does not match the hash recorded with its state: the state belongs to "
               "another description");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<Simulation>> ImportSimulation(std::string_view bytes,
                                                       const CompileOptions& options,
                                                       std::string* display_name,
                                                       std::string_view field) {
  v1::SessionExport payload;
  if (Status s = DecodeSessionExport(bytes, &payload, field); !s.ok()) return s;
  const std::string f(field);
  auto sim = Simulation::Create(payload.spec(), nullptr, options);
  if (!sim.ok()) {
    return sim.status().code() == StatusCode::kInvalidArgument ? Prefixed(sim.status(), f + ".spec")
                                                               : sim.status();
  }
  if (Status s = (*sim)->RestoreState(payload.state(), f + ".state"); !s.ok()) return s;
  if (display_name) *display_name = payload.display_name();
  return sim;
}

}  // namespace tether
