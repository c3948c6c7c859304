#include "engine/wire_walk.h"

#include <climits>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format.h>
#include <google/protobuf/wire_format_lite.h>

namespace tether {
namespace {

namespace pb = google::protobuf;
using pb::internal::WireFormatLite;

// protobuf's default recursion limit (io::CodedInputStream).
constexpr int kMaxDepth = 100;

WireFit Walk(const pb::Descriptor* type, std::string_view bytes, int64_t* budget, int depth) {
  if (bytes.size() > INT_MAX || depth > kMaxDepth) return WireFit::kMalformed;
  pb::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                              static_cast<int>(bytes.size()));
  while (const uint32_t tag = in.ReadTag()) {
    const auto wire = WireFormatLite::GetTagWireType(tag);
    if (wire == WireFormatLite::WIRETYPE_START_GROUP) return WireFit::kMalformed;
    const pb::FieldDescriptor* f = type->FindFieldByNumber(WireFormatLite::GetTagFieldNumber(tag));
    const bool known = f && wire == pb::internal::WireFormat::WireTypeForField(f);
    const bool message = known && f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE;
    if ((!known || message || f->is_repeated()) && --*budget < 0) return WireFit::kOverBudget;
    if (!message) {
      if (!WireFormatLite::SkipField(&in, tag)) return WireFit::kMalformed;
      continue;
    }
    uint32_t length = 0;
    if (!in.ReadVarint32(&length) ||
        length > bytes.size() - static_cast<std::size_t>(in.CurrentPosition())) {
      return WireFit::kMalformed;
    }
    const WireFit inner = Walk(f->message_type(),
                               bytes.substr(static_cast<std::size_t>(in.CurrentPosition()), length),
                               budget, depth + 1);
    if (inner != WireFit::kFits) return inner;
    in.Skip(static_cast<int>(length));
  }
  return in.ConsumedEntireMessage() ? WireFit::kFits : WireFit::kMalformed;
}

}  // namespace

WireFit WalkWire(const pb::Descriptor* type, std::string_view bytes, int64_t* budget) {
  return Walk(type, bytes, budget, 0);
}

}  // namespace tether
