// Fuzz target: the spec JSON reader (engine/spec_json.h).
//
// Any input either parses or is rejected with a Status; it never crashes,
// hangs or reads out of bounds. What parses is printed with ToJson, and that
// text must parse back to the same message (the CLI and the service print
// specs that users feed back in), up to the sign of zero: ToJson prints -0.0
// as -0, which protobuf's JSON reader reads as +0 (found by this target:
// regressions/spec_json_fuzz/negative_zero_atol.json); == on doubles, with
// NaN equal to NaN.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <google/protobuf/util/field_comparator.h>
#include <google/protobuf/util/message_differencer.h>

#include "engine/spec_json.h"
#include "fuzz_check.h"
#include "tether/v1/simulation.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kFuzzMaxInputBytes) return 0;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  tether::v1::SimulationSpec spec;
  const tether::Status status = tether::ParseSpecJson(json, &spec, "fuzz");
  if (!status.ok()) {
    TETHER_FUZZ_CHECK(!status.message().empty(), "a rejection without a message");
    return 0;
  }
  const std::string printed = tether::ToJson(spec);
  tether::v1::SimulationSpec reparsed;
  const tether::Status again = tether::ParseSpecJson(printed, &reparsed, "printed");
  TETHER_FUZZ_CHECK(again.ok(), "ToJson printed what ParseSpecJson rejects: %s\n%s",
                    again.message().c_str(), printed.c_str());
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  differencer.set_message_field_comparison(
      google::protobuf::util::MessageDifferencer::EQUIVALENT);  // unset == default
  TETHER_FUZZ_CHECK(differencer.Compare(reparsed, spec), "ToJson does not round-trip:\n%s\n%s",
                    printed.c_str(), tether::ToJson(reparsed).c_str());
  return 0;
}
