// Snapshots and portable state (engine level): SaveState / RestoreState and
// the export envelope. A restored simulation must continue bit for bit as
// the saved one did, for every method and both certificate modes; a
// damaged export must be refused naming what is wrong.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <openssl/sha.h>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "method_table.h"
#include "test_util.h"

namespace tether {
namespace {

using testing::SpecFromJson;

// The pendulum with a force input, an output, and gains that make every
// step's certificate work; `method` and the certificate mode vary (an
// adaptive method chooses its first step).
v1::SimulationSpec ForcedPendulum(const std::string& method, const std::string& mode) {
  const double h = testing::IsAdaptive(method) ? 0 : 1e-3;
  return SpecFromJson(
      R"J({"system":{"coordinates":["x","y"],"parameters":[{"name":"l","value":1},)J"
      R"J({"name":"grav","value":9.81}],"inputs":[{"name":"Fx","defaultValue":0.25}],)J"
      R"J("masses":{"values":[1,1]},"potentialEnergy":"grav*y","generalizedForces":["Fx","0"],)J"
      R"J("constraints":[{"name":"rod","expression":"(x^2 + y^2 - l^2)/2"}],)J"
      R"J("baumgarte":{"alpha":10,"beta":10},)J"
      R"J("outputs":[{"name":"angle","expression":"atan2(x, -y)"}]},)J"
      R"J("initial":{"q":[0.6,-0.8],"v":[0.4,0.3]},)J"
      R"J("integrator":{"method":")J" +
      method + R"J(","stepSize":)J" + std::to_string(h) + R"J(,"rtol":1e-8},)J" +
      R"J("certificate":{"mode":")J" + mode + R"J("}})J");
}

struct Window {
  std::string frames;       // every frame, serialized
  std::string certificate;  // the window's certificate, serialized
  uint64_t step = 0;
};

// One run of `steps` steps (every step emitted, the start too) and its
// certificate, as bytes to compare bit for bit.
Window RunWindow(Simulation* sim, uint64_t steps) {
  Window w;
  RunOptions options;
  options.steps = steps;
  options.emit_start = true;
  Status s = sim->BeginRun(options);
  EXPECT_TRUE(s.ok()) << s.ToString();
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  while (s.ok() && sim->run_active()) s = sim->Advance(7, &frames);
  EXPECT_TRUE(s.ok()) << s.ToString();
  for (const auto& f : frames) w.frames += f.SerializeAsString();
  v1::Certificate c;
  sim->GetCertificate(&c);
  w.certificate = c.SerializeAsString();
  w.step = sim->step();
  EXPECT_FALSE(w.certificate.empty());
  return w;
}

void ExpectSameWindow(const Window& a, const Window& b, const std::string& what) {
  EXPECT_EQ(a.step, b.step) << what;
  EXPECT_TRUE(a.frames == b.frames) << what << ": frames differ";
  EXPECT_TRUE(a.certificate == b.certificate) << what << ": certificates differ";
}

struct Case {
  std::string method, mode;
};

class RestoreTest : public ::testing::TestWithParam<Case> {};

TEST_P(RestoreTest, RestoreThenRunIsBitIdenticalInPlaceInACopyAndAfterExport) {
  const v1::SimulationSpec spec = ForcedPendulum(GetParam().method, GetParam().mode);
  auto sim = testing::CreateOrFail(spec);
  ASSERT_TRUE(sim);
  // Some history: a run, a changed input, another run.
  RunWindow(sim.get(), 23);
  ASSERT_TRUE(sim->SetInput("Fx", -0.7).ok());
  RunWindow(sim.get(), 11);
  v1::SimulationState saved;
  sim->SaveState(&saved);
  const std::string exported = ExportSimulation(*sim, "label");
  const Window first = RunWindow(sim.get(), 40);
  ASSERT_GT(first.step, saved.step());

  // Rollback in place, after the session went on with another input.
  ASSERT_TRUE(sim->SetInput("Fx", 3.0).ok());
  RunWindow(sim.get(), 5);
  ASSERT_TRUE(sim->RestoreState(saved).ok());
  ExpectSameWindow(first, RunWindow(sim.get(), 40), "restored in place");

  // Into a fresh simulation of the same description.
  auto copy = testing::CreateOrFail(spec);
  ASSERT_TRUE(copy);
  ASSERT_TRUE(copy->RestoreState(saved).ok());
  ExpectSameWindow(first, RunWindow(copy.get(), 40), "restored into a new simulation");

  // Through the portable bytes.
  std::string name;
  auto imported = ImportSimulation(exported, {}, &name);
  ASSERT_TRUE(imported.ok()) << imported.status().ToString();
  EXPECT_EQ(name, "label");
  ExpectSameWindow(first, RunWindow(imported->get(), 40), "imported");
}

// Without the carried state (an adaptive method's proposed step, a fixed-
// step method's time base, the inputs) the continuation differs: the test
// above can fail. Every method of the table (kMethods).
TEST(CarriedStateTest, DroppingCarriedStateChangesTheRun) {
  for (const MethodDescriptor& d : kMethods) {
    const std::string method = v1::IntegratorSpec::Method_Name(d.method);
    auto sim = testing::CreateOrFail(ForcedPendulum(method, "SAMPLED"));
    ASSERT_TRUE(sim);
    ASSERT_TRUE(sim->SetInput("Fx", -0.7).ok());
    RunWindow(sim.get(), 30);
    v1::SimulationState saved;
    sim->SaveState(&saved);
    const Window first = RunWindow(sim.get(), 20);
    v1::SimulationState damaged = saved;
    damaged.set_inputs(0, 0.25);  // the default, not the value in force
    ASSERT_TRUE(sim->RestoreState(damaged).ok());
    EXPECT_FALSE(RunWindow(sim.get(), 20).frames == first.frames) << method;
    damaged = saved;
    if (d.adaptive) {
      damaged.set_next_step_size(0);
    } else {
      damaged.set_time_anchor(saved.state().t());
      damaged.set_anchor_steps(0);
    }
    ASSERT_TRUE(sim->RestoreState(damaged).ok());
    EXPECT_FALSE(RunWindow(sim.get(), 20).frames == first.frames) << method;
  }
}

// Every method of the table (kMethods) in both certificate modes: a new row
// is tested here without an edit.
std::vector<Case> EveryMethodAndMode() {
  std::vector<Case> cases;
  for (const std::string& method : testing::MethodNames()) {
    for (const char* mode : {"SAMPLED", "ENCLOSED"}) cases.push_back(Case{method, mode});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EveryMethod, RestoreTest, ::testing::ValuesIn(EveryMethodAndMode()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.method + "_" + info.param.mode;
                         });

TEST(RestoreStateTest, BadStatesAreRefusedNamingTheFieldAndLeaveTheSimulationAlone) {
  auto sim = testing::CreateOrFail(ForcedPendulum("RK4", "SAMPLED"));
  ASSERT_TRUE(sim);
  v1::SimulationState good;
  sim->SaveState(&good);
  struct Bad {
    std::function<void(v1::SimulationState*)> damage;
    std::string field;
  };
  const std::vector<Bad> cases = {
      {[](v1::SimulationState* s) { s->mutable_state()->add_q(1); }, "snap.state.q"},
      {[](v1::SimulationState* s) { s->mutable_state()->set_v(1, NAN); }, "snap.state.v[1]"},
      {[](v1::SimulationState* s) { s->mutable_state()->set_t(INFINITY); }, "snap.state.t"},
      {[](v1::SimulationState* s) { s->clear_inputs(); }, "snap.inputs"},
      {[](v1::SimulationState* s) { s->set_inputs(0, NAN); }, "snap.inputs[0]"},
      {[](v1::SimulationState* s) { s->set_time_anchor(NAN); }, "snap.time_anchor"},
      {[](v1::SimulationState* s) { s->set_next_step_size(0.01); }, "snap.next_step_size"},
      // Off the fixed-step grid the state is on (t = time_anchor +
      // anchor_steps h): steps would go to 1e6, 1e300, or backwards.
      {[](v1::SimulationState* s) { s->set_time_anchor(1e6); }, "snap.time_anchor"},
      {[](v1::SimulationState* s) { s->set_time_anchor(1e300); }, "snap.time_anchor"},
      {[](v1::SimulationState* s) { s->set_time_anchor(-1e6); }, "snap.time_anchor"},
      {[](v1::SimulationState* s) { s->set_time_anchor(0.0005); }, "snap.time_anchor"},
      {[](v1::SimulationState* s) { s->set_anchor_steps(1000000000); }, "snap.time_anchor"},
      // On its grid, but where doubles cannot place steps of h.
      {[](v1::SimulationState* s) {
         s->mutable_state()->set_t(1e13);
         s->set_time_anchor(1e13);
       },
       "snap.state.t"},
  };
  for (const auto& c : cases) {
    v1::SimulationState bad = good;
    c.damage(&bad);
    Status s = sim->RestoreState(bad, "snap");
    ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << c.field;
    ASSERT_FALSE(s.violations().empty());
    EXPECT_EQ(s.violations()[0].field, c.field) << s.ToString();
    EXPECT_NE(s.message().find("expected"), std::string::npos) << s.message();
    v1::SimulationState now;
    sim->SaveState(&now);
    EXPECT_EQ(now.SerializeAsString(), good.SerializeAsString()) << c.field;
  }
}

// An export's payload is counted before it is parsed (engine/wire_walk.h):
// 300,000 empty constraints in its description are refused, naming the
// field, with nothing parsed; the checksum and the hash are right, so
// nothing else would stop them before protobuf allocates some 30 MB.
TEST(SessionExportTest, APayloadOfTooManyObjectsIsRefusedBeforeItIsParsed) {
  auto sim = testing::CreateOrFail(ForcedPendulum("RK4", "SAMPLED"));
  ASSERT_TRUE(sim);
  v1::SessionExport payload;
  ASSERT_TRUE(DecodeSessionExport(ExportSimulation(*sim, "x"), &payload).ok());
  for (int k = 0; k < 300000; ++k) payload.mutable_spec()->mutable_system()->add_constraints();
  const std::string bytes = EncodeSessionExport(payload);
  v1::SessionExport out;
  Status s = DecodeSessionExport(bytes, &out, "blob");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  ASSERT_FALSE(s.violations().empty());
  EXPECT_EQ(s.violations()[0].field, "blob");
  EXPECT_NE(s.message().find("more than 262144 messages"), std::string::npos) << s.message();
  EXPECT_EQ(out.spec().system().constraints_size(), 0);  // nothing parsed
}

TEST(SessionExportTest, EveryFlippedByteAndEveryTruncationIsRefused) {
  auto sim = testing::CreateOrFail(ForcedPendulum("RK4", "SAMPLED"));
  ASSERT_TRUE(sim);
  RunWindow(sim.get(), 10);
  const std::string bytes = ExportSimulation(*sim, "x");
  v1::SessionExport out;
  ASSERT_TRUE(DecodeSessionExport(bytes, &out).ok());
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int bit : {0, 7}) {
      std::string damaged = bytes;
      damaged[i] = static_cast<char>(damaged[i] ^ (1 << bit));
      Status s = DecodeSessionExport(damaged, &out, "blob");
      ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << "byte " << i << " bit " << bit;
      ASSERT_FALSE(s.violations().empty());
      EXPECT_EQ(s.violations()[0].field.rfind("blob", 0), 0u) << s.violations()[0].field;
    }
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    Status s = DecodeSessionExport(std::string_view(bytes).substr(0, n), &out);
    ASSERT_EQ(s.code(), StatusCode::kInvalidArgument) << "truncated to " << n;
  }
  Status s = DecodeSessionExport(bytes + "x", &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // What each refusal says.
  EXPECT_NE(DecodeSessionExport(bytes.substr(0, 20), &out).message().find("truncated"),
            std::string::npos);
  std::string other = bytes;
  other[8] = 2;  // major version 2
  EXPECT_NE(DecodeSessionExport(other, &out).message().find("major version 1, found 2"),
            std::string::npos);
  std::string flipped = bytes;
  flipped[40] ^= 1;
  EXPECT_NE(DecodeSessionExport(flipped, &out).message().find("checksum"), std::string::npos);
}

TEST(SessionExportTest, AStateWithAnotherSpecIsRefusedEvenWithAValidChecksum) {
  auto sim = testing::CreateOrFail(ForcedPendulum("RK4", "SAMPLED"));
  ASSERT_TRUE(sim);
  v1::SessionExport payload;
  sim->SaveState(payload.mutable_state());
  *payload.mutable_spec() = sim->spec();
  v1::SimulationSpec other = sim->spec();
  other.mutable_system()->mutable_parameters(0)->set_value(2.0);
  payload.set_spec_sha256(SpecSha256(other));
  ASSERT_NE(payload.spec_sha256(), SpecSha256(sim->spec()));
  // An envelope built by hand around it, with a correct checksum: the
  // checksum cannot vouch for it, the spec hash refuses it.
  const std::string body = payload.SerializeAsString();
  std::string forged = "TETHERSX";
  forged += std::string("\x01\x00\x00\x00", 4);
  for (int i = 0; i < 4; ++i) forged.push_back(static_cast<char>((body.size() >> (8 * i)) & 0xff));
  forged += body;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(forged.data()), forged.size(), digest);
  forged.append(reinterpret_cast<const char*>(digest), sizeof digest);
  v1::SessionExport out;
  Status s = DecodeSessionExport(forged, &out, "data");
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.violations().at(0).field, "data.spec_sha256") << s.ToString();
  // The same envelope with the right hash decodes: the refusal was the hash.
  payload.set_spec_sha256(SpecSha256(sim->spec()));
  EXPECT_TRUE(DecodeSessionExport(EncodeSessionExport(payload), &out).ok());
}

TEST(SessionExportTest, ImportNamesTheSpecAndStateFields) {
  auto sim = testing::CreateOrFail(ForcedPendulum("RK4", "SAMPLED"));
  ASSERT_TRUE(sim);
  v1::SessionExport payload;
  *payload.mutable_spec() = sim->spec();
  sim->SaveState(payload.mutable_state());
  payload.mutable_state()->mutable_state()->add_q(0);  // three coordinates
  auto imported = ImportSimulation(EncodeSessionExport(payload));
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().violations().at(0).field, "data.state.state.q");
  payload.mutable_state()->mutable_state()->mutable_q()->RemoveLast();
  payload.mutable_spec()->mutable_system()->mutable_constraints(0)->set_expression("x +");
  imported = ImportSimulation(EncodeSessionExport(payload));
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(imported.status().violations().at(0).field.rfind("data.spec.system.constraints[0]", 0),
            0u)
      << imported.status().ToString();
}

}  // namespace
}  // namespace tether
