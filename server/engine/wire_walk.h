// A walk of protobuf wire bytes that counts the objects parsing them would
// make, before anything is parsed: the one bound on what protobuf allocates
// for bytes a client or a file hands the server (the service's requests
// and session files, the engine's session exports). Protobuf makes some 30 to
// 80 bytes of objects of every 2 bytes of empty repeated messages (a 4 MiB
// CreateSession of 2.1 million empty constraints held 328 MiB while it was
// parsed), so a byte limit alone does not bound memory.
//
// Threading: a plain function of its arguments.
#pragma once

#include <cstdint>
#include <string_view>

#include <google/protobuf/descriptor.h>

namespace tether {

enum class WireFit { kFits, kMalformed, kOverBudget };

// Whether protobuf's parse of `bytes` as a `type` makes at most *budget
// objects, which it takes from *budget: one per field of message type, per
// element of a repeated field, per packed repeated field and per unknown
// field (a scalar or string field of its own lives in its message; a packed
// field's values are as many bytes as the wire's). Nesting deeper than
// protobuf's own limit (100) is kMalformed, as protobuf would refuse it.
WireFit WalkWire(const google::protobuf::Descriptor* type, std::string_view bytes, int64_t* budget);

// The objects a message from a client may make (requests, and the session
// exports and FMU states inside them): 2^18, about 25 MB at the most. A
// valid one needs far fewer: a description's lists are bounded in the
// thousands (UpdateSession's test of 100,000 unknown names fits).
inline constexpr int64_t kMaxMessageObjects = int64_t{1} << 18;

}  // namespace tether
