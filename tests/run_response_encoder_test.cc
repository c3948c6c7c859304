// RunResponseEncoder writes exactly the bytes protobuf serializes for the
// same RunResponse, for every shape of frame.
#include "service/run_response_encoder.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"
#include "tether/v1/simulator.pb.h"

namespace tether::service {
namespace {

// Owns the arrays a FrameView points into.
struct FrameData {
  uint64_t step = 0;
  double t = 0;
  std::vector<double> q, v, a, lambda, position, velocity, outputs;
  double dynamics = 0, constraint = 0;
  FrameView View() const {
    FrameView f;
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

// Values that exercise every encoding path: zero (omitted as a scalar),
// negative zero (written: proto3 compares bit patterns), subnormals,
// extremes, non-finite values and ordinary numbers.
double Pick(std::mt19937_64& rng) {
  static const double kSpecial[] = {0.0,
                                    -0.0,
                                    1.0,
                                    -9.81,
                                    std::numeric_limits<double>::denorm_min(),
                                    std::numeric_limits<double>::max(),
                                    std::numeric_limits<double>::lowest(),
                                    std::numeric_limits<double>::infinity(),
                                    std::numeric_limits<double>::quiet_NaN()};
  std::uniform_int_distribution<int> which(0, 11);
  const int k = which(rng);
  if (k < 9) return kSpecial[k];
  return std::uniform_real_distribution<double>(-1e6, 1e6)(rng);
}

FrameData RandomFrame(std::mt19937_64& rng) {
  // Lengths 0..40: packed lengths above 127 bytes need a two-byte varint.
  std::uniform_int_distribution<int> len(0, 40), small(0, 3);
  auto fill = [&](int n) {
    std::vector<double> x(static_cast<size_t>(n));
    for (double& e : x) e = Pick(rng);
    return x;
  };
  FrameData f;
  const uint64_t steps[] = {
      0, 1, 127, 128, 16383, 16384, uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()};
  f.step = steps[std::uniform_int_distribution<int>(0, 7)(rng)];
  f.t = Pick(rng);
  const int d = len(rng), nc = small(rng) == 0 ? 0 : len(rng) / 4;
  f.q = fill(d);
  f.v = fill(d);
  f.a = fill(d);
  f.lambda = fill(nc);
  f.position = fill(nc);
  f.velocity = fill(nc);
  f.dynamics = Pick(rng);
  f.constraint = Pick(rng);
  f.outputs = fill(small(rng));
  return f;
}

TEST(RunResponseEncoderTest, BytesEqualProtobufSerialization) {
  std::mt19937_64 rng(20261201);
  RunResponseEncoder encoder;
  for (int message = 0; message < 200; ++message) {
    encoder.Clear();
    v1::RunResponse expected;
    const int frames = std::uniform_int_distribution<int>(0, 6)(rng);
    std::size_t first_entry = 0;
    for (int k = 0; k < frames; ++k) {
      const FrameData f = RandomFrame(rng);
      const std::size_t before = encoder.bytes().size();
      encoder.Add(f.View());
      const std::size_t entry = encoder.bytes().size() - before;
      EXPECT_EQ(entry, RunResponseEncoder::FrameEntrySize(f.View()));
      if (k == 0) first_entry = entry;
      FrameToProto(f.View(), expected.add_frames());
    }
    if (message % 3 == 0) {
      v1::Certificate c;
      c.set_t_start(0.5);
      c.set_t_end(message);
      c.set_steps(static_cast<uint64_t>(message) * 1000);
      c.set_defect_bound(-0.0);
      c.add_constraints()->set_name("rod");
      encoder.AddCertificate(c);
      *expected.mutable_certificate() = c;
    }
    ASSERT_EQ(encoder.frames(), static_cast<std::size_t>(frames));
    EXPECT_EQ(encoder.first_entry_size(), first_entry);
    const std::string want = expected.SerializeAsString();
    ASSERT_EQ(encoder.bytes().size(), want.size()) << "message " << message;
    ASSERT_TRUE(encoder.bytes() == want) << "message " << message;
    // And protobuf reads it back.
    v1::RunResponse parsed;
    ASSERT_TRUE(parsed.ParseFromString(encoder.bytes()));
    EXPECT_EQ(parsed.frames_size(), frames);
  }
}

TEST(RunResponseEncoderTest, EngineFramesRoundTrip) {
  // A real run (certificate on): the encoder fed by Advance equals the
  // frames Advance builds as messages, bit for bit.
  auto spec = testing::CirclePendulum(10, 10, "RK4", 1e-3, 1.01, 0, 0, 0.5);
  std::unique_ptr<Simulation> a = testing::CreateOrFail(spec), b = testing::CreateOrFail(spec);
  ASSERT_TRUE(a && b);
  RunOptions run;
  run.steps = 500;
  run.every = 7;
  ASSERT_TRUE(a->BeginRun(run).ok());
  ASSERT_TRUE(b->BeginRun(run).ok());
  v1::RunResponse expected;
  RunResponseEncoder encoder;
  while (!a->run_done()) ASSERT_TRUE(a->Advance(64, expected.mutable_frames()).ok());
  while (!b->run_done()) ASSERT_TRUE(b->Advance(64, &encoder).ok());
  ASSERT_EQ(expected.frames_size(), 500 / 7 + 2);
  a->GetCertificate(expected.mutable_certificate());
  v1::Certificate c;
  b->GetCertificate(&c);
  encoder.AddCertificate(c);
  EXPECT_TRUE(encoder.bytes() == expected.SerializeAsString());
}

}  // namespace
}  // namespace tether::service
