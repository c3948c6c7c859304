#include "service/run_response_encoder.h"

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

namespace tether::service {
namespace {

// Wire types (protobuf encoding): VARINT 0, I64 1, LEN 2.
constexpr uint8_t Tag(int field, int wire_type) {
  return static_cast<uint8_t>(field << 3 | wire_type);
}

std::size_t VarintSize(uint64_t x) {
  std::size_t n = 1;
  while (x >= 0x80) {
    x >>= 7;
    ++n;
  }
  return n;
}

uint8_t* PutVarint(uint64_t x, uint8_t* p) {
  while (x >= 0x80) {
    *p++ = static_cast<uint8_t>(x | 0x80);
    x >>= 7;
  }
  *p++ = static_cast<uint8_t>(x);
  return p;
}

uint8_t* PutDouble(double x, uint8_t* p) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(p, &x, sizeof x);
    return p + sizeof x;
  } else {
    const uint64_t bits = std::bit_cast<uint64_t>(x);
    for (int k = 0; k < 8; ++k) *p++ = static_cast<uint8_t>(bits >> (8 * k));
    return p;
  }
}

// Element by element: a frame's arrays hold a few doubles, for which a
// call to memcpy with a run-time length costs more than the copy.
uint8_t* PutDoubles(std::span<const double> xs, uint8_t* p) {
  for (double x : xs) p = PutDouble(x, p);
  return p;
}

// proto3 writes a double only when its bit pattern is not all zero.
bool Present(double x) { return std::bit_cast<uint64_t>(x) != 0; }

std::size_t PackedSize(std::span<const double> xs) {
  if (xs.empty()) return 0;
  return 1 + VarintSize(xs.size_bytes()) + xs.size_bytes();
}

uint8_t* PutPacked(int field, std::span<const double> xs, uint8_t* p) {
  if (xs.empty()) return p;
  *p++ = Tag(field, 2);
  p = PutVarint(xs.size_bytes(), p);
  return PutDoubles(xs, p);
}

// Residuals { repeated double position = 1; repeated double velocity = 2;
//             double dynamics = 3; double constraint = 4; }
std::size_t ResidualsSize(const FrameView& f) {
  return PackedSize(f.position) + PackedSize(f.velocity) + (Present(f.dynamics) ? 9 : 0) +
         (Present(f.constraint) ? 9 : 0);
}

// Frame { uint64 step = 1; double t = 2; repeated double q = 3, v = 4,
//         a = 5, lambda = 6; Residuals residuals = 7; repeated double
//         outputs = 8; }
std::size_t FrameSize(const FrameView& f, std::size_t residuals_size) {
  return (f.step != 0 ? 1 + VarintSize(f.step) : 0) + (Present(f.t) ? 9 : 0) + PackedSize(f.q) +
         PackedSize(f.v) + PackedSize(f.a) + PackedSize(f.lambda) + 1 + VarintSize(residuals_size) +
         residuals_size + PackedSize(f.outputs);
}

}  // namespace

std::size_t RunResponseEncoder::FrameEntrySize(const FrameView& frame) {
  const std::size_t body = FrameSize(frame, ResidualsSize(frame));
  return 1 + VarintSize(body) + body;
}

void RunResponseEncoder::Add(const FrameView& f) {
  const std::size_t residuals = ResidualsSize(f);
  const std::size_t body = FrameSize(f, residuals);
  const std::size_t entry = 1 + VarintSize(body) + body;
  const std::size_t start = out_.size();
  out_.resize(start + entry);
  uint8_t* p = reinterpret_cast<uint8_t*>(out_.data()) + start;
  uint8_t* const end = p + entry;
  *p++ = Tag(1, 2);  // RunResponse.frames
  p = PutVarint(body, p);
  if (f.step != 0) {
    *p++ = Tag(1, 0);
    p = PutVarint(f.step, p);
  }
  if (Present(f.t)) {
    *p++ = Tag(2, 1);
    p = PutDouble(f.t, p);
  }
  p = PutPacked(3, f.q, p);
  p = PutPacked(4, f.v, p);
  p = PutPacked(5, f.a, p);
  p = PutPacked(6, f.lambda, p);
  *p++ = Tag(7, 2);
  p = PutVarint(residuals, p);
  p = PutPacked(1, f.position, p);
  p = PutPacked(2, f.velocity, p);
  if (Present(f.dynamics)) {
    *p++ = Tag(3, 1);
    p = PutDouble(f.dynamics, p);
  }
  if (Present(f.constraint)) {
    *p++ = Tag(4, 1);
    p = PutDouble(f.constraint, p);
  }
  p = PutPacked(8, f.outputs, p);
  // The sizes above and the writes must agree; a mismatch would corrupt the
  // stream, so it is checked in every build.
  if (p != end) std::abort();
  if (frames_ == 0) first_entry_size_ = entry;
  ++frames_;
}

void RunResponseEncoder::AddCertificate(const v1::Certificate& certificate) {
  const std::string body = certificate.SerializeAsString();
  const std::size_t start = out_.size();
  out_.resize(start + 1 + VarintSize(body.size()));
  uint8_t* p = reinterpret_cast<uint8_t*>(out_.data()) + start;
  *p++ = Tag(2, 2);  // RunResponse.certificate
  PutVarint(body.size(), p);
  out_ += body;
}

void RunResponseEncoder::Clear() {
  out_.clear();
  frames_ = 0;
  first_entry_size_ = 0;
}

}  // namespace tether::service
