// Fuzz target: the Run frame encoder (service/run_response_encoder.h).
//
// The input bytes describe up to three RunResponse messages of up to seven
// frames each (lengths, steps and the bits of every double; reads past the
// end give zeros). Each message is written by RunResponseEncoder and, from
// the same frames, built as a v1::RunResponse: the encoder's bytes must be
// exactly RunResponse::SerializeAsString's (as in
// tests/run_response_encoder_test.cc), its per-frame sizes must match
// FrameEntrySize, and protobuf must read the bytes back.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "engine/simulation.h"
#include "fuzz_check.h"
#include "service/run_response_encoder.h"
#include "tether/v1/simulator.pb.h"

namespace {

// Hands out the input's bytes; zeros once they run out.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t Byte() { return pos_ < size_ ? data_[pos_++] : 0; }

  // A quarter of the byte values pick a value that exercises an encoding
  // path (zero is omitted, -0.0 is written, subnormals, extremes, non-finite
  // values); the others take the next 8 bytes as the bit pattern.
  double Double() {
    static const double kSpecial[] = {0.0,
                                      -0.0,
                                      1.0,
                                      -9.81,
                                      std::numeric_limits<double>::denorm_min(),
                                      std::numeric_limits<double>::max(),
                                      std::numeric_limits<double>::lowest(),
                                      std::numeric_limits<double>::infinity(),
                                      std::numeric_limits<double>::quiet_NaN()};
    const uint8_t b = Byte();
    if (b < 0x40) return kSpecial[b % std::size(kSpecial)];
    return std::bit_cast<double>(Raw64());
  }

  // Half the byte values pick a step at a varint length boundary.
  uint64_t Step() {
    static const uint64_t kSteps[] = {
        0, 1, 127, 128, 16383, 16384, uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()};
    const uint8_t b = Byte();
    if (b < 0x80) return kSteps[b % std::size(kSteps)];
    return Raw64();
  }

 private:
  uint64_t Raw64() {
    uint64_t x = 0;
    for (int i = 0; i < 8; ++i) x = x << 8 | Byte();
    return x;
  }

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Owns the arrays a FrameView points into.
struct FrameData {
  uint64_t step = 0;
  double t = 0;
  std::vector<double> q, v, a, lambda, position, velocity, outputs;
  double dynamics = 0, constraint = 0;

  tether::FrameView View() const {
    tether::FrameView f;
    f.step = step;
    f.t = t;
    f.q = q;
    f.v = v;
    f.a = a;
    f.lambda = lambda;
    f.position = position;
    f.velocity = velocity;
    f.dynamics = dynamics;
    f.constraint = constraint;
    f.outputs = outputs;
    return f;
  }
};

// A frame of the shape the engine emits: d coordinates (0..40: packed
// arrays above 127 bytes need a two-byte length), nc constraints, a few
// outputs.
FrameData ReadFrame(ByteReader& in) {
  const int d = in.Byte() % 41, nc = in.Byte() % 11, outputs = in.Byte() % 5;
  auto fill = [&](int n) {
    std::vector<double> x(static_cast<size_t>(n));
    for (double& e : x) e = in.Double();
    return x;
  };
  FrameData f;
  f.step = in.Step();
  f.t = in.Double();
  f.q = fill(d);
  f.v = fill(d);
  f.a = fill(d);
  f.lambda = fill(nc);
  f.position = fill(nc);
  f.velocity = fill(nc);
  f.dynamics = in.Double();
  f.constraint = in.Double();
  f.outputs = fill(outputs);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > kFuzzMaxInputBytes) return 0;
  ByteReader in(data, size);
  tether::service::RunResponseEncoder encoder;
  const int messages = 1 + in.Byte() % 3;
  for (int message = 0; message < messages; ++message) {
    encoder.Clear();  // the same encoder, as a Run stream reuses it
    tether::v1::RunResponse expected;
    const int frames = in.Byte() % 8;
    size_t first_entry = 0;
    for (int k = 0; k < frames; ++k) {
      const FrameData f = ReadFrame(in);
      const size_t before = encoder.bytes().size();
      encoder.Add(f.View());
      const size_t entry = encoder.bytes().size() - before;
      TETHER_FUZZ_CHECK(entry == tether::service::RunResponseEncoder::FrameEntrySize(f.View()),
                        "frame %d: Add wrote %zu bytes, FrameEntrySize says %zu", k, entry,
                        tether::service::RunResponseEncoder::FrameEntrySize(f.View()));
      if (k == 0) first_entry = entry;
      tether::FrameToProto(f.View(), expected.add_frames());
    }
    if (in.Byte() & 1) {
      tether::v1::Certificate c;
      c.set_t_start(in.Double());
      c.set_t_end(in.Double());
      c.set_steps(in.Step());
      c.set_defect_bound(in.Double());
      c.add_constraints()->set_name("rod");
      encoder.AddCertificate(c);
      *expected.mutable_certificate() = c;
    }
    TETHER_FUZZ_CHECK(encoder.frames() == static_cast<size_t>(frames),
                      "message %d: frames() is %zu after %d frames", message, encoder.frames(),
                      frames);
    TETHER_FUZZ_CHECK(encoder.first_entry_size() == first_entry,
                      "message %d: first_entry_size() is %zu, the first entry had %zu bytes",
                      message, encoder.first_entry_size(), first_entry);
    const std::string want = expected.SerializeAsString();
    TETHER_FUZZ_CHECK(encoder.bytes() == want,
                      "message %d: the encoder wrote %zu bytes that differ from protobuf's %zu",
                      message, encoder.bytes().size(), want.size());
    tether::v1::RunResponse parsed;
    TETHER_FUZZ_CHECK(parsed.ParseFromString(encoder.bytes()),
                      "message %d: protobuf cannot read the encoder's bytes", message);
  }
  return 0;
}
