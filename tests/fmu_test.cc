// The FMU that `tether fmu` writes, imported as an FMI 2.0 master imports
// it: unzipped with libzip into a directory whose name needs percent-
// encoding in a URI, modelDescription.xml read with tinyxml2, the shared
// library dlopen()ed and its fmi2* functions found with dlsym, then the
// standard calling sequence. Its values are compared bit for bit with
// fmu_reference (the engine API driven with the same until_time sequence,
// in another process: this one must not link the engine the FMU holds).
//
// FmuTest runs every behaviour on both backends (fmu_test_fixture.h): in
// process, and remote, the FMU stepping a session on a tether-server (a
// child process on a loopback port), which must give the in-process bits.
// FmuRemoteTest holds what only the remote mode has (its server's
// sessions, the parameter over the environment variable, TLS, a dropped
// snapshot) and the comparisons of the two modes; FmuPackageTest the FMU's
// files, the same whichever backend runs it.
//
// Deliberately links neither the engine nor protobuf.
#include <dlfcn.h>
#include <tinyxml2.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fmu/fmi2.h"
#include "fmu_schedule.h"
#include "fmu_test_fixture.h"
#ifdef TETHER_SERVER
#include "support/pki.h"
#include "support/server_process.h"
#endif

namespace tether::fmu_test {
namespace {

namespace fs = std::filesystem;
using fmu_import::FileUri;

class FmuPackageTest : public FmuFixture {};

// ------------------------------------------------------- model description

TEST_F(FmuPackageTest, ModelDescriptionHasTheRequiredAttributes) {
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(pendulum_->xml_text.c_str()), tinyxml2::XML_SUCCESS);
  const auto* root = doc.FirstChildElement("fmiModelDescription");
  ASSERT_NE(root, nullptr);
  EXPECT_STREQ(root->Attribute("fmiVersion"), "2.0");
  EXPECT_STREQ(root->Attribute("modelName"), "pendulum");
  ASSERT_NE(root->Attribute("guid"), nullptr);
  EXPECT_EQ(std::string(root->Attribute("guid")).size(), 38u);  // {8-4-4-4-12}
  const auto* cs = root->FirstChildElement("CoSimulation");
  ASSERT_NE(cs, nullptr);
  EXPECT_EQ(root->FirstChildElement("ModelExchange"), nullptr);
  EXPECT_STREQ(cs->Attribute("modelIdentifier"), "pendulum");
  EXPECT_STREQ(cs->Attribute("canHandleVariableCommunicationStepSize"), "true");
  EXPECT_STREQ(cs->Attribute("canGetAndSetFMUstate"), "true");
  EXPECT_STREQ(cs->Attribute("canSerializeFMUstate"), "true");
  EXPECT_STREQ(cs->Attribute("canBeInstantiatedOnlyOncePerProcess"), "false");
  EXPECT_STREQ(cs->Attribute("needsExecutionTool"), "false");
  EXPECT_STREQ(cs->Attribute("providesDirectionalDerivative"), "true");
  const auto* de = root->FirstChildElement("DefaultExperiment");
  ASSERT_NE(de, nullptr);
  EXPECT_EQ(de->DoubleAttribute("startTime", -1), 0.0);
  EXPECT_EQ(de->DoubleAttribute("stepSize", -1), 0.001);  // the spec's step size
  EXPECT_TRUE(fs::is_regular_file(pendulum_->dir / "resources" / "spec.json"));
  EXPECT_TRUE(fs::is_regular_file(pendulum_->dir / "binaries" / "linux64" / "pendulum.so"));
  EXPECT_TRUE(fs::is_regular_file(pendulum_->dir / "binaries" / "linux64" / "libtether-fmi2.so.1"));
  // The engine library (loaded by the first fmi2Instantiate) exports the
  // FMI functions and nothing of the engine.
  fmi2Component c = Instantiate("exports", *pendulum_);
  ASSERT_NE(c, nullptr);
  void* engine = dlopen("libtether-fmi2.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(engine, nullptr);
  EXPECT_NE(dlsym(engine, "fmi2DoStep"), nullptr);
  EXPECT_EQ(dlsym(engine, "_ZN6tether10SimulationD1Ev"), nullptr);
  EXPECT_EQ(dlsym(engine, "_ZN6tether10Simulation7AdvanceEmPNS_9FrameSinkEm"), nullptr);
  dlclose(engine);
  F().fmi2FreeInstance(c);
  EXPECT_STREQ(F().fmi2GetVersion(), "2.0");
  EXPECT_STREQ(F().fmi2GetTypesPlatform(), "default");
}

TEST_F(FmuPackageTest, ModelDescriptionVariablesFollowTheFmi2Rules) {
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(pendulum_->xml_text.c_str()), tinyxml2::XML_SUCCESS);
  const auto* root = doc.FirstChildElement("fmiModelDescription");
  std::set<unsigned> refs;
  std::set<std::string> names;
  std::vector<int> outputs;  // 1-based indices
  int index = 0;
  for (const auto* sv =
           root->FirstChildElement("ModelVariables")->FirstChildElement("ScalarVariable");
       sv != nullptr; sv = sv->NextSiblingElement("ScalarVariable")) {
    ++index;
    const std::string name = sv->Attribute("name") ? sv->Attribute("name") : "";
    SCOPED_TRACE(name);
    ASSERT_NE(sv->Attribute("valueReference"), nullptr);
    EXPECT_TRUE(refs.insert(sv->UnsignedAttribute("valueReference")).second) << "duplicate vr";
    EXPECT_TRUE(names.insert(name).second) << "duplicate name";
    const std::string causality = sv->Attribute("causality") ? sv->Attribute("causality") : "local";
    const std::string variability =
        sv->Attribute("variability") ? sv->Attribute("variability") : "continuous";
    const char* initial = sv->Attribute("initial");
    if (const auto* str = sv->FirstChildElement("String"); str != nullptr) {
      // The remote mode's address ("" = in process) and the certificate
      // (the description's: sampled): fixed parameters.
      EXPECT_TRUE(name == "tether.server" || name == "tether.certificate");
      EXPECT_EQ(causality, "parameter");
      EXPECT_EQ(variability, "fixed");
      ASSERT_NE(initial, nullptr);
      EXPECT_STREQ(initial, "exact");
      ASSERT_NE(str->Attribute("start"), nullptr);
      EXPECT_STREQ(str->Attribute("start"), name == "tether.server" ? "" : "sampled");
      continue;
    }
    if (const auto* b = sv->FirstChildElement("Boolean"); b != nullptr) {
      // Whether to project an inconsistent start: a fixed parameter, off.
      EXPECT_EQ(name, "tether.project_start");
      EXPECT_EQ(causality, "parameter");
      EXPECT_EQ(variability, "fixed");
      ASSERT_NE(initial, nullptr);
      EXPECT_STREQ(initial, "exact");
      EXPECT_STREQ(b->Attribute("start"), "false");
      continue;
    }
    const auto* real = sv->FirstChildElement("Real");
    ASSERT_NE(real, nullptr);
    const bool has_start = real->Attribute("start") != nullptr;
    if (causality == "parameter") {
      EXPECT_TRUE(variability == "fixed" || variability == "tunable");
      ASSERT_NE(initial, nullptr);
      EXPECT_STREQ(initial, "exact");
      EXPECT_TRUE(has_start);
    } else if (causality == "input") {
      EXPECT_TRUE(has_start);
      EXPECT_EQ(initial, nullptr);  // inputs have no initial attribute
      EXPECT_NE(variability, "constant");
    } else if (causality == "output") {
      outputs.push_back(index);
      EXPECT_EQ(variability, "continuous");
      if (initial != nullptr) {
        EXPECT_STREQ(initial, "calculated");
      }
      EXPECT_FALSE(has_start);  // calculated: no start
    } else {
      ADD_FAILURE() << "unexpected causality " << causality;
    }
  }
  for (const char* n :
       {"l", "grav", "Fx", "angle", "omega", "q.x", "q.y", "v.x", "v.y", "lambda.rod",
        "certificate.max_position_residual", "certificate.position_bound", "tether.server",
        "tether.project_start", "q0.x", "q0.y", "v0.x", "v0.y"}) {
    EXPECT_EQ(names.count(n), 1u) << n;
  }
  const auto* ms = root->FirstChildElement("ModelStructure");
  ASSERT_NE(ms, nullptr);
  for (const char* list : {"Outputs", "InitialUnknowns"}) {
    std::vector<int> listed;
    for (const auto* u = ms->FirstChildElement(list)->FirstChildElement("Unknown"); u != nullptr;
         u = u->NextSiblingElement("Unknown")) {
      listed.push_back(u->IntAttribute("index"));
    }
    EXPECT_EQ(listed, outputs) << list;
  }
}

// ------------------------------------------------------ co-simulation runs

TEST_P(FmuTest, OutputsAreBitIdenticalToTheEngineRun) {
  fmi2Component c = Start("run", *pendulum_);
  ASSERT_NE(c, nullptr);
  // The parameter reads back: the backend's server, "" in process.
  const fmi2ValueReference ref = ServerRef(*pendulum_);
  fmi2String server = nullptr;
  ASSERT_EQ(F().fmi2GetString(c, &ref, 1, &server), fmi2OK);
  EXPECT_EQ(std::string(server), Server());
  double t = 0;
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[0]))
      << "fmu:" << Show(Values(*pendulum_, c, t)) << "\nref:" << Show((*reference_)[0]);
  for (int k = 0; k < kSteps; ++k) {
    ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK) << "step " << k << ": " << LastLog();
    const auto got = Values(*pendulum_, c, t);
    ASSERT_TRUE(SameBits(got, (*reference_)[static_cast<size_t>(k + 1)]))
        << "after step " << k << "\nfmu:" << Show(got)
        << "\nref:" << Show((*reference_)[static_cast<size_t>(k + 1)]);
  }
  // The certificate's figures are running maxima: never decreasing, and
  // the bound covers the residual.
  double residual = 0, bound = 0;
  const fmi2ValueReference cert[2] = {pendulum_->vr.at("certificate.max_position_residual"),
                                      pendulum_->vr.at("certificate.position_bound")};
  double figures[2];
  ASSERT_EQ(F().fmi2GetReal(c, cert, 2, figures), fmi2OK);
  residual = figures[0];
  bound = figures[1];
  EXPECT_GT(residual, 0);
  EXPECT_GE(bound, residual);
  fmi2Real last = -1;
  EXPECT_EQ(F().fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &last), fmi2OK);
  // The FMU's time is the engine's (its step grid's time + h; remote, the
  // server's), the master's summed t up to rounding; Values() compared it
  // with the reference's bit for bit.
  EXPECT_NEAR(last, t, 1e-12);
  fmi2Boolean terminated = fmi2True;
  EXPECT_EQ(F().fmi2GetBooleanStatus(c, fmi2Terminated, &terminated), fmi2OK);
  EXPECT_EQ(terminated, fmi2False);
  // A null output is an error, as for every other function (it was
  // fmi2Discard, as for a kind not answered; found by an audit); a kind
  // not answered stays fmi2Discard.
  EXPECT_EQ(F().fmi2GetRealStatus(c, fmi2LastSuccessfulTime, nullptr), fmi2Error);
  EXPECT_EQ(F().fmi2GetBooleanStatus(c, fmi2Terminated, nullptr), fmi2Error);
  EXPECT_EQ(F().fmi2GetRealStatus(c, fmi2DoStepStatus, &last), fmi2Discard);
  EXPECT_EQ(F().fmi2Terminate(c), fmi2OK);
  F().fmi2FreeInstance(c);
}

TEST_P(FmuTest, GetAndSetStateRepeatTheStepsBitForBit) {
  fmi2Component c = Start("state", *pendulum_);
  ASSERT_NE(c, nullptr);
  ExpectRestoredStepsRepeatBitForBit(c);
  F().fmi2FreeInstance(c);
}

TEST_P(FmuTest, SerializedStateContinuesInAnotherInstance) {
  fmi2Component a = Start("a", *pendulum_);
  fmi2Component b = Start("b", *pendulum_);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  double t = 0;
  for (int k = 0; k < 15; ++k) ASSERT_EQ(Step(*pendulum_, a, k, &t), fmi2OK);
  fmi2FMUstate state = nullptr;
  ASSERT_EQ(F().fmi2GetFMUstate(a, &state), fmi2OK);
  size_t size = 0;
  ASSERT_EQ(F().fmi2SerializedFMUstateSize(a, state, &size), fmi2OK);
  std::vector<char> bytes(size);
  ASSERT_EQ(F().fmi2SerializeFMUstate(a, state, bytes.data(), size), fmi2OK);
  EXPECT_EQ(std::string(bytes.data(), 8), "TETHERSX");  // the session export envelope
  F().fmi2FreeFMUstate(a, &state);

  fmi2FMUstate into_b = nullptr;
  ASSERT_EQ(F().fmi2DeSerializeFMUstate(b, bytes.data(), size, &into_b), fmi2OK);
  ASSERT_EQ(F().fmi2SetFMUstate(b, into_b), fmi2OK);
  F().fmi2FreeFMUstate(b, &into_b);
  double tb = t;
  EXPECT_TRUE(SameBits(Values(*pendulum_, b, tb), (*reference_)[15]));
  for (int k = 15; k < 25; ++k) {
    ASSERT_EQ(Step(*pendulum_, a, k, &t), fmi2OK);
    ASSERT_EQ(Step(*pendulum_, b, k, &tb), fmi2OK);
    const auto va = Values(*pendulum_, a, t);
    EXPECT_TRUE(SameBits(va, Values(*pendulum_, b, tb))) << k;
    EXPECT_TRUE(SameBits(va, (*reference_)[static_cast<size_t>(k + 1)])) << k;
  }
  F().fmi2FreeInstance(a);
  F().fmi2FreeInstance(b);
}

// A state belongs to the instance that made it (FMI 2.0 section 2.1.8).
// Another instance's state, passed to any of the state functions, and a
// state already freed, are fmi2Error naming the function, never a read
// through the pointer; the state stays its own instance's.
TEST_P(FmuTest, AnotherInstancesStateOrAFreedOneIsAnErrorAndStaysItsOwn) {
  fmi2Component a = Start("a", *pendulum_);
  fmi2Component b = Start("b", *pendulum_);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  double t = 0;
  for (int k = 0; k < 5; ++k) ASSERT_EQ(Step(*pendulum_, a, k, &t), fmi2OK);
  fmi2FMUstate of_a = nullptr;
  ASSERT_EQ(F().fmi2GetFMUstate(a, &of_a), fmi2OK);
  ASSERT_NE(of_a, nullptr);
  const double t_saved = t;

  EXPECT_EQ(F().fmi2SetFMUstate(b, of_a), fmi2Error);
  EXPECT_TRUE(LoggedContains("fmi2SetFMUstate: FMUstate is not a state of this instance"))
      << LastLog();
  size_t size = 0;
  EXPECT_EQ(F().fmi2SerializedFMUstateSize(b, of_a, &size), fmi2Error);
  std::vector<char> bytes(64);
  EXPECT_EQ(F().fmi2SerializeFMUstate(b, of_a, bytes.data(), bytes.size()), fmi2Error);
  fmi2FMUstate overwrite = of_a;  // b's fmi2GetFMUstate into a's state
  EXPECT_EQ(F().fmi2GetFMUstate(b, &overwrite), fmi2Error);
  EXPECT_EQ(F().fmi2DeSerializeFMUstate(b, nullptr, 0, &overwrite), fmi2Error);
  EXPECT_EQ(F().fmi2FreeFMUstate(b, &overwrite), fmi2Error);
  EXPECT_TRUE(LoggedContains("fmi2FreeFMUstate: FMUstate is not a state of this instance"))
      << LastLog();
  EXPECT_EQ(overwrite, of_a);  // not freed, not changed

  // Still a's, and still what a saved: b is where it was, a goes back.
  for (int k = 5; k < 8; ++k) ASSERT_EQ(Step(*pendulum_, a, k, &t), fmi2OK);
  ASSERT_EQ(F().fmi2SetFMUstate(a, of_a), fmi2OK) << LastLog();
  EXPECT_TRUE(SameBits(Values(*pendulum_, a, t_saved), (*reference_)[5]));
  EXPECT_TRUE(SameBits(Values(*pendulum_, b, 0), (*reference_)[0]));

  fmi2FMUstate stale = of_a;
  ASSERT_EQ(F().fmi2FreeFMUstate(a, &of_a), fmi2OK);
  EXPECT_EQ(of_a, nullptr);
  EXPECT_EQ(F().fmi2SetFMUstate(a, stale), fmi2Error);
  EXPECT_TRUE(LoggedContains("already freed")) << LastLog();
  EXPECT_EQ(F().fmi2FreeFMUstate(a, &stale), fmi2Error);

  // States not freed go with their instance (the sanitizers see a leak).
  fmi2FMUstate kept = nullptr;
  ASSERT_EQ(F().fmi2GetFMUstate(b, &kept), fmi2OK);
  F().fmi2FreeInstance(a);
  F().fmi2FreeInstance(b);
}

TEST_P(FmuTest, DamagedSerializedStatesAreErrorsNeverCrashes) {
  fmi2Component c = Start("damaged", *pendulum_);
  ASSERT_NE(c, nullptr);
  double t = 0;
  for (int k = 0; k < 3; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  fmi2FMUstate state = nullptr;
  ASSERT_EQ(F().fmi2GetFMUstate(c, &state), fmi2OK);
  size_t size = 0;
  ASSERT_EQ(F().fmi2SerializedFMUstateSize(c, state, &size), fmi2OK);
  std::vector<char> good(size);
  ASSERT_EQ(F().fmi2SerializeFMUstate(c, state, good.data(), size), fmi2OK);
  // A wrong size for the buffer is refused.
  EXPECT_EQ(F().fmi2SerializeFMUstate(c, state, good.data(), size - 1), fmi2Error);
  F().fmi2FreeFMUstate(c, &state);
  const auto before = Values(*pendulum_, c, t);

  auto refused = [&](const std::vector<char>& bytes, const std::string& what) {
    LogLines().clear();
    fmi2FMUstate s = nullptr;
    EXPECT_EQ(F().fmi2DeSerializeFMUstate(c, bytes.data(), bytes.size(), &s), fmi2Error) << what;
    EXPECT_EQ(s, nullptr) << what;
    EXPECT_TRUE(LoggedContains("fmi2DeSerializeFMUstate")) << what;
  };
  // Every byte flipped in turn (header, payload, checksum).
  for (size_t i = 0; i < size; i += (i < 64 ? 1 : 7)) {
    std::vector<char> bad = good;
    bad[i] ^= 0x5a;
    refused(bad, "byte " + std::to_string(i) + " flipped");
  }
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size / 2, size - 1}) {
    refused(std::vector<char>(good.begin(), good.begin() + static_cast<long>(n)),
            "truncated to " + std::to_string(n));
  }
  refused(std::vector<char>(size, 'x'), "garbage");
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), before));  // the instance is unchanged
  ASSERT_EQ(Step(*pendulum_, c, 3, &t), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[4]));
  F().fmi2FreeInstance(c);
}

TEST_P(FmuTest, TwoInstancesDoNotShareState) {
  fmi2Component a = Start("one", *pendulum_);
  fmi2Component b = Start("two", *pendulum_);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  const auto b0 = Values(*pendulum_, b, 0);
  double ta = 0;
  for (int k = 0; k < 10; ++k) ASSERT_EQ(Step(*pendulum_, a, k, &ta), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, b, 0), b0));
  // b's input set to something else does not reach a.
  const auto a10 = Values(*pendulum_, a, ta);
  const double u = 7.5;
  ASSERT_EQ(F().fmi2SetReal(b, pendulum_->inputs.data(), 1, &u), fmi2OK);
  ASSERT_EQ(F().fmi2DoStep(b, 0, 0.05, fmi2True), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, a, ta), a10));
  // a goes on as the reference does.
  ASSERT_EQ(Step(*pendulum_, a, 10, &ta), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, a, ta), (*reference_)[11]));
  // And b's own run from the start is the reference's.
  F().fmi2FreeInstance(b);
  b = Start("two", *pendulum_);
  ASSERT_NE(b, nullptr);
  double tb = 0;
  for (int k = 0; k < 10; ++k) ASSERT_EQ(Step(*pendulum_, b, k, &tb), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, b, tb), a10));
  F().fmi2FreeInstance(a);
  F().fmi2FreeInstance(b);
}

TEST_P(FmuTest, ResetReturnsToTheInitialState) {
  fmi2Component c = Start("reset", *pendulum_);
  ASSERT_NE(c, nullptr);
  double t = 0;
  for (int k = 0; k < 5; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  ASSERT_EQ(F().fmi2Terminate(c), fmi2OK);
  ASSERT_EQ(F().fmi2Reset(c), fmi2OK);
  ASSERT_EQ(F().fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  ASSERT_EQ(F().fmi2EnterInitializationMode(c), fmi2OK);
  ASSERT_EQ(ExitInitialization(*pendulum_, c), fmi2OK) << LastLog();
  t = 0;
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[0]));
  for (int k = 0; k < 5; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[5]));
  F().fmi2FreeInstance(c);
}

TEST_P(FmuTest, CallsOutOfSequenceAndUnsupportedCallsAreErrors) {
  fmi2Component c = Instantiate("sequence", *pendulum_);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(F().fmi2DoStep(c, 0, 0.01, fmi2True), fmi2Error);
  EXPECT_TRUE(LoggedContains("fmi2DoStep: not allowed in state 'instantiated'"));
  EXPECT_EQ(F().fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  EXPECT_EQ(F().fmi2EnterInitializationMode(c), fmi2OK);
  EXPECT_EQ(ExitInitialization(*pendulum_, c), fmi2OK) << LastLog();
  double t = 0;
  // Another communication point than the FMU's time.
  EXPECT_EQ(F().fmi2DoStep(c, 1.0, 0.01, fmi2True), fmi2Error);
  EXPECT_EQ(F().fmi2DoStep(c, 0, 0, fmi2True), fmi2Error);
  EXPECT_EQ(F().fmi2DoStep(c, 0, -1, fmi2True), fmi2Error);
  // More steps than the step counter holds (1e303 of h = 1e-3): refused at
  // once, naming the step size (it never returned).
  EXPECT_EQ(F().fmi2DoStep(c, 0, 1e300, fmi2True), fmi2Error);
  EXPECT_TRUE(LoggedContains("2^62")) << LastLog();
  const fmi2ValueReference out = pendulum_->vr.at("q.x");
  const fmi2ValueReference param = pendulum_->vr.at("l");
  const fmi2ValueReference unknown = 100000;
  double x = 1, got = 0;
  EXPECT_EQ(F().fmi2SetReal(c, &out, 1, &x), fmi2Error);
  EXPECT_TRUE(LoggedContains("q.x is an output"));
  EXPECT_EQ(F().fmi2SetReal(c, &param, 1, &x), fmi2Error);  // fixed, after initialization
  EXPECT_EQ(F().fmi2GetReal(c, &unknown, 1, &got), fmi2Error);
  double nan = std::nan("");
  EXPECT_EQ(F().fmi2SetReal(c, pendulum_->inputs.data(), 1, &nan), fmi2Error);
  int i = 0;
  fmi2Boolean bo = 0;
  fmi2String s = nullptr;
  EXPECT_EQ(F().fmi2GetInteger(c, &out, 1, &i), fmi2Error);
  EXPECT_EQ(F().fmi2GetBoolean(c, &out, 1, &bo), fmi2Error);
  EXPECT_EQ(F().fmi2GetString(c, &out, 1, &s), fmi2Error);
  EXPECT_EQ(F().fmi2SetInteger(c, &out, 1, &i), fmi2Error);
  EXPECT_EQ(F().fmi2GetInteger(c, nullptr, 0, nullptr), fmi2OK);
  double dv = 1, du = 0;
  EXPECT_EQ(F().fmi2GetDirectionalDerivative(c, &out, 1, &param, 1, &dv, &du), fmi2Error);
  // Input derivatives of order 1 only; output derivatives up to
  // maxOutputDerivativeOrder = 1.
  int order = 2;
  EXPECT_EQ(F().fmi2SetRealInputDerivatives(c, pendulum_->inputs.data(), 1, &order, &dv),
            fmi2Error);
  EXPECT_EQ(F().fmi2GetRealOutputDerivatives(c, &out, 1, &order, &du), fmi2Error);
  EXPECT_EQ(F().fmi2CancelStep(c), fmi2Error);
  fmi2Status st = fmi2OK;
  EXPECT_EQ(F().fmi2GetStatus(c, fmi2DoStepStatus, &st), fmi2Discard);
  EXPECT_EQ(F().fmi2SetDebugLogging(c, fmi2True, 0, nullptr), fmi2OK);
  // Nothing above changed the state.
  ASSERT_EQ(Step(*pendulum_, c, 0, &t), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[1]));
  EXPECT_EQ(F().fmi2Terminate(c), fmi2OK);
  EXPECT_EQ(F().fmi2DoStep(c, t, 0.01, fmi2True), fmi2Error);
  F().fmi2FreeInstance(c);
}

TEST_P(FmuTest, InstantiateChecksTheGuidTypeAndResourceLocation) {
  const Fmu& f = *pendulum_;
  EXPECT_EQ(f.api.fmi2Instantiate("x", fmi2CoSimulation, "{not-the-guid}", f.resource_uri.c_str(),
                                  &kCallbacks, fmi2False, fmi2False),
            nullptr);
  EXPECT_TRUE(LoggedContains("GUID mismatch"));
  EXPECT_EQ(f.api.fmi2Instantiate("x", fmi2ModelExchange, f.guid.c_str(), f.resource_uri.c_str(),
                                  &kCallbacks, fmi2False, fmi2False),
            nullptr);
  EXPECT_TRUE(LoggedContains("Co-Simulation only"));
  EXPECT_EQ(f.api.fmi2Instantiate("x", fmi2CoSimulation, f.guid.c_str(), "http://example/r",
                                  &kCallbacks, fmi2False, fmi2False),
            nullptr);
  EXPECT_TRUE(LoggedContains("expected a file:// URI"));
  EXPECT_EQ(f.api.fmi2Instantiate("x", fmi2CoSimulation, f.guid.c_str(),
                                  FileUri(WorkDir() / "nowhere").c_str(), &kCallbacks, fmi2False,
                                  fmi2False),
            nullptr);
  EXPECT_TRUE(LoggedContains("cannot read"));
  // The resource location with a trailing slash and the unreserved
  // characters percent-encoded too.
  std::string uri = f.resource_uri + "/";
  const auto pos = uri.find("resources");
  uri.replace(pos, 1, "%72");  // 'r'
  fmi2Component c = f.api.fmi2Instantiate("x", fmi2CoSimulation, f.guid.c_str(), uri.c_str(),
                                          &kCallbacks, fmi2False, fmi2False);
  ASSERT_NE(c, nullptr) << LastLog();
  // The instance runs on the backend as one instantiated from the plain URI.
  ASSERT_EQ(f.api.fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  ASSERT_EQ(f.api.fmi2EnterInitializationMode(c), fmi2OK);
  ASSERT_EQ(ExitInitialization(f, c), fmi2OK) << LastLog();
  double t = 0;
  ASSERT_EQ(Step(f, c, 0, &t), fmi2OK) << LastLog();
  EXPECT_TRUE(SameBits(Values(f, c, t), (*reference_)[1]));
  f.api.fmi2FreeInstance(c);
}

TEST_P(FmuTest, ParametersSetBeforeInitializationAreUsed) {
  fmi2Component c = Instantiate("param", *pendulum_);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(F().fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  ASSERT_EQ(F().fmi2EnterInitializationMode(c), fmi2OK);
  const fmi2ValueReference grav = pendulum_->vr.at("grav");
  const double g = 1.62;
  ASSERT_EQ(F().fmi2SetReal(c, &grav, 1, &g), fmi2OK);
  ASSERT_EQ(ExitInitialization(*pendulum_, c), fmi2OK) << LastLog();
  double got = 0;
  ASSERT_EQ(F().fmi2GetReal(c, &grav, 1, &got), fmi2OK);
  EXPECT_EQ(got, g);
  double t = 0;
  for (int k = 0; k < 10; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  // Weaker gravity: the pendulum's state differs from the reference's.
  EXPECT_FALSE(SameBits(Values(*pendulum_, c, t), (*reference_)[10]));
  // A state of this instance does not fit one with the original parameters.
  fmi2FMUstate s = nullptr;
  ASSERT_EQ(F().fmi2GetFMUstate(c, &s), fmi2OK);
  size_t size = 0;
  ASSERT_EQ(F().fmi2SerializedFMUstateSize(c, s, &size), fmi2OK);
  std::vector<char> bytes(size);
  ASSERT_EQ(F().fmi2SerializeFMUstate(c, s, bytes.data(), size), fmi2OK);
  F().fmi2FreeFMUstate(c, &s);
  fmi2Component other = Start("original", *pendulum_);
  ASSERT_NE(other, nullptr);
  fmi2FMUstate into = nullptr;
  EXPECT_EQ(F().fmi2DeSerializeFMUstate(other, bytes.data(), size, &into), fmi2Error);
  EXPECT_TRUE(LoggedContains("another description"));
  F().fmi2FreeInstance(other);
  F().fmi2FreeInstance(c);
}

// tether.certificate chooses the certificate of every communication step:
// "off" computes none (its outputs stay 0), "enclosed" a proven bound; the
// trajectory keeps its bits whatever the choice.
TEST_P(FmuTest, TheCertificateParameterChoosesSampledEnclosedOrOff) {
  const fmi2ValueReference cert_ref = pendulum_->vr.at("tether.certificate");
  const fmi2ValueReference bound_ref = pendulum_->vr.at("certificate.position_bound");
  const fmi2ValueReference max_ref = pendulum_->vr.at("certificate.max_position_residual");
  struct Run {
    double bound = -1, max_g = -1;
    std::vector<double> q;
  };
  auto run = [&](const char* mode) {
    Run r;
    fmi2Component c = Instantiate(mode, *pendulum_);
    EXPECT_NE(c, nullptr);
    if (c == nullptr) return r;
    fmi2String got = nullptr;
    EXPECT_EQ(F().fmi2GetString(c, &cert_ref, 1, &got), fmi2OK);
    EXPECT_STREQ(got, "sampled");  // the description sets no certificate options
    EXPECT_EQ(F().fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
    EXPECT_EQ(F().fmi2EnterInitializationMode(c), fmi2OK);
    EXPECT_EQ(F().fmi2SetString(c, &cert_ref, 1, &mode), fmi2OK) << LastLog();
    EXPECT_EQ(F().fmi2GetString(c, &cert_ref, 1, &got), fmi2OK);
    EXPECT_STREQ(got, mode);
    EXPECT_EQ(ExitInitialization(*pendulum_, c), fmi2OK) << LastLog();
    // Fixed from here on.
    EXPECT_EQ(F().fmi2SetString(c, &cert_ref, 1, &mode), fmi2Error);
    EXPECT_TRUE(LoggedContains("tether.certificate is fixed"));
    double t = 0;
    for (int k = 0; k < 10; ++k) EXPECT_EQ(Step(*pendulum_, c, k, &t), fmi2OK) << LastLog();
    EXPECT_EQ(F().fmi2GetReal(c, &bound_ref, 1, &r.bound), fmi2OK);
    EXPECT_EQ(F().fmi2GetReal(c, &max_ref, 1, &r.max_g), fmi2OK);
    for (const char* name : {"q.x", "q.y", "v.x", "v.y", "lambda.rod"}) {
      const fmi2ValueReference ref = pendulum_->vr.at(name);
      double x = 0;
      EXPECT_EQ(F().fmi2GetReal(c, &ref, 1, &x), fmi2OK);
      r.q.push_back(x);
    }
    F().fmi2Terminate(c);
    F().fmi2FreeInstance(c);
    return r;
  };
  const Run sampled = run("sampled"), enclosed = run("enclosed"), off = run("off");
  EXPECT_GT(sampled.bound, 0);
  EXPECT_GE(sampled.bound, sampled.max_g);
  EXPECT_GT(enclosed.bound, 0);
  EXPECT_GE(enclosed.bound, enclosed.max_g);
  EXPECT_EQ(off.bound, 0);
  EXPECT_EQ(off.max_g, 0);
  EXPECT_TRUE(SameBits(sampled.q, enclosed.q)) << Show(sampled.q) << " vs" << Show(enclosed.q);
  EXPECT_TRUE(SameBits(sampled.q, off.q)) << Show(sampled.q) << " vs" << Show(off.q);

  // Anything else is refused, naming the parameter and what it takes.
  fmi2Component c = Instantiate("bad certificate", *pendulum_);
  ASSERT_NE(c, nullptr);
  fmi2String bad = "sometimes";
  EXPECT_EQ(F().fmi2SetString(c, &cert_ref, 1, &bad), fmi2Error);
  EXPECT_TRUE(
      LoggedContains("tether.certificate: expected sampled, enclosed or off, found \"sometimes\""));
  F().fmi2FreeInstance(c);
}

TEST_P(FmuTest, ANumericalFailureDiscardsTheStepAndKeepsTheLastCommunicationPoint) {
  std::unique_ptr<Fmu> blow = ImportBlowUp(Named("blow"));
  ASSERT_NE(blow, nullptr);
  fmi2Component c = Start("blow", *blow);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(blow->api.fmi2DoStep(c, 0, 1.0, fmi2True), fmi2OK);
  const auto at1 = Values(*blow, c, 1.0);
  fmi2FMUstate saved = nullptr;
  LogLines().clear();
  EXPECT_EQ(blow->api.fmi2DoStep(c, 1.0, 5.0, fmi2True), fmi2Discard);
  // The message names the server in remote mode.
  EXPECT_TRUE(LoggedContains(Remote() ? "failed numerically on " + Server() : "failed numerically"))
      << LastLog();
  fmi2Real last = -1;
  EXPECT_EQ(blow->api.fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &last), fmi2OK);
  EXPECT_EQ(last, 1.0);
  EXPECT_TRUE(SameBits(Values(*blow, c, 1.0), at1));  // back at the last communication point
  // FMI 2.0's stepFailed state (section 4.2.4): no fmi2DoStep, no setter;
  // the getters, the status queries and FMU states are allowed.
  EXPECT_EQ(blow->api.fmi2DoStep(c, 1.0, 0.5, fmi2True), fmi2Error);
  EXPECT_TRUE(LoggedContains("fmi2DoStep: not allowed in state 'stepFailed'")) << LastLog();
  const fmi2ValueReference x_ref = blow->vr.at("q.x");
  const double x_value = 0;
  EXPECT_EQ(blow->api.fmi2SetReal(c, &x_ref, 1, &x_value), fmi2Error);
  EXPECT_TRUE(LoggedContains("fmi2SetReal: not allowed in state 'stepFailed'")) << LastLog();
  double x_now = 0;
  EXPECT_EQ(blow->api.fmi2GetReal(c, &x_ref, 1, &x_now), fmi2OK);
  // In stepFailed the FMU asks to terminate: it cannot go on by itself.
  fmi2Boolean terminated = fmi2False;
  EXPECT_EQ(blow->api.fmi2GetBooleanStatus(c, fmi2Terminated, &terminated), fmi2OK);
  EXPECT_TRUE(terminated);
  // A state saved in stepFailed, and one restored there: stepComplete again
  // (no longer asking to terminate), and a smaller step from there succeeds.
  ASSERT_EQ(blow->api.fmi2GetFMUstate(c, &saved), fmi2OK) << LastLog();
  ASSERT_EQ(blow->api.fmi2SetFMUstate(c, saved), fmi2OK) << LastLog();
  EXPECT_EQ(blow->api.fmi2GetBooleanStatus(c, fmi2Terminated, &terminated), fmi2OK);
  EXPECT_FALSE(terminated);
  EXPECT_EQ(blow->api.fmi2DoStep(c, 1.0, 0.5, fmi2True), fmi2OK) << LastLog();
  blow->api.fmi2FreeFMUstate(c, &saved);
  EXPECT_EQ(blow->api.fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &last), fmi2OK);
  EXPECT_EQ(last, 1.5);
  // The same steps in process give the same bits.
  fmi2Component local = StartOn("", "local blow", *blow);
  ASSERT_NE(local, nullptr);
  ASSERT_EQ(blow->api.fmi2DoStep(local, 0, 1.0, fmi2True), fmi2OK);
  ASSERT_EQ(blow->api.fmi2DoStep(local, 1.0, 0.5, fmi2True), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*blow, c, 1.5), Values(*blow, local, 1.5)));
  blow->api.fmi2FreeInstance(local);
  EXPECT_EQ(blow->api.fmi2Terminate(c), fmi2OK);
  blow->api.fmi2FreeInstance(c);
}

// The loop of FMPy's simulate_fmu and of the Reference FMUs' fmusim for
// FMI 2.0 Co-Simulation: after fmi2Discard they read fmi2Terminated; when it
// is true they record at fmi2LastSuccessfulTime and stop, when it is false
// they step on (and FMI 2.0's stepFailed allows no fmi2DoStep). The FMU
// answers true in stepFailed, so such a master ends at the last
// communication point with its results, not with an fmi2Error on its next
// step (which FMPy raised, losing every row).
TEST_P(FmuTest, AMasterThatStepsOnUnlessToldToTerminateStopsAtTheLastSuccessfulTime) {
  std::unique_ptr<Fmu> blow = ImportBlowUp(Named("blow_master"));
  ASSERT_NE(blow, nullptr);
  const auto& F2 = blow->api;
  fmi2Component c = Start("blow_master", *blow);
  ASSERT_NE(c, nullptr);
  const fmi2ValueReference x_ref = blow->vr.at("q.x");
  double t = 0;
  const double h = 0.5;
  std::vector<double> times;
  bool told_to_terminate = false;
  for (int step = 0; step < 20 && !told_to_terminate; ++step) {
    const fmi2Status status = F2.fmi2DoStep(c, t, h, fmi2True);
    if (status == fmi2Discard) {
      fmi2Boolean terminated = fmi2False;
      ASSERT_EQ(F2.fmi2GetBooleanStatus(c, fmi2Terminated, &terminated), fmi2OK);
      if (terminated) {
        double last = -1;
        ASSERT_EQ(F2.fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &last), fmi2OK);
        EXPECT_EQ(last, t);  // the last communication point, where the state is
        told_to_terminate = true;
      }
      continue;  // FMPy and fmusim step on when not told to terminate
    }
    ASSERT_EQ(status, fmi2OK) << LastLog();
    t += h;
    times.push_back(t);
  }
  EXPECT_TRUE(told_to_terminate);
  ASSERT_FALSE(times.empty());  // it moved before blowing up
  double x = 0;
  EXPECT_EQ(F2.fmi2GetReal(c, &x_ref, 1, &x), fmi2OK);
  EXPECT_TRUE(std::isfinite(x));
  EXPECT_EQ(F2.fmi2Terminate(c), fmi2OK) << LastLog();
  F2.fmi2FreeInstance(c);
}

// FMI 2's logger is variadic: `message` is a printf format. The FMU passes
// the message itself as the format, each '%' doubled, with no arguments, so
// a master that formats it (this importer, C masters) and one that prints
// the format as it is (FMPy's Python callback, which cannot reach variadic
// arguments and printed "%s" for every message before) both read it.
TEST_P(FmuTest, LogMessagesAreReadableWithoutFormatting) {
  const fmi2ValueReference cert_ref = pendulum_->vr.at("tether.certificate");
  fmi2Component c = Instantiate("percent", *pendulum_);
  ASSERT_NE(c, nullptr);
  fmi2String bad = "50% sampled";
  EXPECT_EQ(F().fmi2SetString(c, &cert_ref, 1, &bad), fmi2Error);
  // Formatted: the text as it was.
  EXPECT_TRUE(LoggedContains(
      "tether.certificate: expected sampled, enclosed or off, found \"50% sampled\""))
      << LastLog();
  // Not formatted: the same text with its '%' doubled.
  ASSERT_FALSE(RawLogMessages().empty());
  EXPECT_NE(RawLogMessages().back().find(
                "tether.certificate: expected sampled, enclosed or off, found \"50%% sampled\""),
            std::string::npos)
      << RawLogMessages().back();
  F().fmi2FreeInstance(c);
  // The same for fmi2Instantiate's own refusals, logged before an instance.
  EXPECT_EQ(F().fmi2Instantiate("", fmi2CoSimulation, pendulum_->guid.c_str(),
                                pendulum_->resource_uri.c_str(), &kCallbacks, fmi2False, fmi2False),
            nullptr);
  ASSERT_FALSE(RawLogMessages().empty());
  EXPECT_NE(
      RawLogMessages().back().find("fmi2Instantiate: instanceName must be a non-empty string"),
      std::string::npos)
      << RawLogMessages().back();
}

TEST_P(FmuTest, SetupExperimentSetsTheStartTimeAndBoundsTheSteps) {
  fmi2Component c = Instantiate("times", *pendulum_);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(F().fmi2SetupExperiment(c, fmi2True, 1e-6, 1.0, fmi2True, 1.05), fmi2OK);
  ASSERT_EQ(F().fmi2EnterInitializationMode(c), fmi2OK);
  ASSERT_EQ(ExitInitialization(*pendulum_, c), fmi2OK) << LastLog();
  // The description's initial state, at t = 1.
  auto v = Values(*pendulum_, c, 1.0);
  const auto& r0 = (*reference_)[0];
  for (const char* name : {"q.x", "q.y", "v.x", "v.y"}) {
    const size_t i = pendulum_->vr.at(name) + 1;
    EXPECT_EQ(v[i], r0[i]) << name;
  }
  EXPECT_EQ(F().fmi2DoStep(c, 0.0, 0.01, fmi2True), fmi2Error);  // not the FMU's time
  EXPECT_EQ(F().fmi2DoStep(c, 1.0, 0.03, fmi2True), fmi2OK);
  fmi2Real last = 0;
  EXPECT_EQ(F().fmi2GetRealStatus(c, fmi2LastSuccessfulTime, &last), fmi2OK);
  EXPECT_EQ(last, 1.03);
  LogLines().clear();
  EXPECT_EQ(F().fmi2DoStep(c, 1.03, 0.03, fmi2True), fmi2Error);  // past stopTime 1.05
  EXPECT_TRUE(LoggedContains("stopTime"));
  EXPECT_EQ(F().fmi2DoStep(c, 1.03, 0.02, fmi2True), fmi2OK);
  F().fmi2FreeInstance(c);
}

TEST_P(FmuTest, TwoDifferentFmusInOneProcessShareOneEngineLibrary) {
  // A second Tether FMU (another description, another copy of the
  // libraries) in the same process: its shim finds the engine library the
  // first one loaded (by soname) rather than loading a second copy, which
  // would register the engine's protobuf descriptors twice and abort.
  std::unique_ptr<Fmu> circle = Import(Source("examples/circle_pendulum.json"), Named("circle"));
  ASSERT_NE(circle, nullptr);
  ASSERT_NE(circle->api.handle, pendulum_->api.handle);
  fmi2Component p = Start("p", *pendulum_);
  fmi2Component c = Start("c", *circle);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(c, nullptr) << LastLog();
  // The GUIDs differ: each FMU's instances are of its own description.
  EXPECT_NE(circle->guid, pendulum_->guid);
  EXPECT_EQ(
      circle->api.fmi2Instantiate("wrong", fmi2CoSimulation, pendulum_->guid.c_str(),
                                  circle->resource_uri.c_str(), &kCallbacks, fmi2False, fmi2False),
      nullptr);
  double tp = 0, tc = 0;
  for (int k = 0; k < 10; ++k) {
    ASSERT_EQ(Step(*pendulum_, p, k, &tp), fmi2OK);
    ASSERT_EQ(circle->api.fmi2DoStep(c, tc, 0.01, fmi2True), fmi2OK);
    tc += 0.01;
  }
  EXPECT_TRUE(SameBits(Values(*pendulum_, p, tp), (*reference_)[10]));
  const fmi2ValueReference qx = circle->vr.at("q.x");
  double x = 0;
  EXPECT_EQ(circle->api.fmi2GetReal(c, &qx, 1, &x), fmi2OK);
  EXPECT_NE(x, 0.0);
  pendulum_->api.fmi2FreeInstance(p);
  circle->api.fmi2FreeInstance(c);
}

// Every test above on both backends.
INSTANTIATE_TEST_SUITE_P(Backend, FmuTest,
#ifdef TETHER_SERVER
                         ::testing::Values(Backend::kInProcess, Backend::kRemote),
#else
                         ::testing::Values(Backend::kInProcess),
#endif
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return BackendName(info.param);
                         });

// ------------------------------------------------------ in process only

class FmuInProcessTest : public FmuFixture {};

// In process, an FMU state outlives fmi2Reset (remote, it goes with the
// session fmi2Reset deletes: FmuRemoteTest.TerminateResetAndFreeDeleteTheSessions).
TEST_F(FmuInProcessTest, AStateKeepsItsDescriptionAcrossResetAndNewParameters) {
  fmi2Component c = StartOn("", "keeps", *pendulum_);
  ASSERT_NE(c, nullptr);
  double t = 0;
  for (int k = 0; k < 5; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  fmi2FMUstate s = nullptr;
  ASSERT_EQ(F().fmi2GetFMUstate(c, &s), fmi2OK);
  // Reset, and other parameter values: the instance's description changes.
  ASSERT_EQ(F().fmi2Reset(c), fmi2OK);
  ASSERT_EQ(F().fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
  ASSERT_EQ(F().fmi2EnterInitializationMode(c), fmi2OK);
  const fmi2ValueReference grav = pendulum_->vr.at("grav");
  const double g = 3.71;
  ASSERT_EQ(F().fmi2SetReal(c, &grav, 1, &g), fmi2OK);
  ASSERT_EQ(F().fmi2ExitInitializationMode(c), fmi2OK) << LastLog();
  EXPECT_EQ(F().fmi2SetFMUstate(c, s), fmi2Error);  // not this description's
  // Serialized, the old state carries its own description: another
  // instance with the original parameters continues it as the reference.
  size_t size = 0;
  ASSERT_EQ(F().fmi2SerializedFMUstateSize(c, s, &size), fmi2OK);
  std::vector<char> bytes(size);
  ASSERT_EQ(F().fmi2SerializeFMUstate(c, s, bytes.data(), size), fmi2OK);
  F().fmi2FreeFMUstate(c, &s);
  fmi2FMUstate into = nullptr;
  EXPECT_EQ(F().fmi2DeSerializeFMUstate(c, bytes.data(), size, &into), fmi2Error);
  fmi2Component other = StartOn("", "other", *pendulum_);
  ASSERT_NE(other, nullptr);
  ASSERT_EQ(F().fmi2DeSerializeFMUstate(other, bytes.data(), size, &into), fmi2OK);
  ASSERT_EQ(F().fmi2SetFMUstate(other, into), fmi2OK);
  F().fmi2FreeFMUstate(other, &into);
  for (int k = 5; k < 8; ++k) ASSERT_EQ(Step(*pendulum_, other, k, &t), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, other, t), (*reference_)[8]));
  F().fmi2FreeInstance(other);
  F().fmi2FreeInstance(c);
}

#ifdef TETHER_SERVER
// ------------------------------------------------------- remote mode only
//
// What only the remote mode has, and the two modes compared: tether.server
// set to a tether-server (ServerAddress(), or one a test starts with other
// flags), or left empty (in process, or TETHER_FMU_SERVER's).

class FmuRemoteTest : public FmuFixture {
 protected:
  fmi2Component StartRemote(const char* name, const Fmu& fmu) {
    return StartOn(ServerAddress(), name, fmu);
  }
  // tether.server left at its start value (""): in process unless
  // TETHER_FMU_SERVER is set.
  fmi2Component StartWithoutParameter(const char* name, const Fmu& fmu) {
    return StartOn("", name, fmu);
  }
};

// Serialized remote and in-process states are the same bytes, and each
// continues in the other mode.
TEST_F(FmuRemoteTest, SerializedStatesAreTheInProcessBytesAndMoveBetweenModes) {
  fmi2Component remote = StartRemote("remote a", *pendulum_);
  fmi2Component local = StartWithoutParameter("local a", *pendulum_);
  ASSERT_NE(remote, nullptr);
  ASSERT_NE(local, nullptr);
  double t = 0, tl = 0;
  for (int k = 0; k < 15; ++k) {
    ASSERT_EQ(Step(*pendulum_, remote, k, &t), fmi2OK);
    ASSERT_EQ(Step(*pendulum_, local, k, &tl), fmi2OK);
  }
  auto serialize = [&](fmi2Component c) {
    fmi2FMUstate state = nullptr;
    EXPECT_EQ(F().fmi2GetFMUstate(c, &state), fmi2OK);
    size_t size = 0;
    EXPECT_EQ(F().fmi2SerializedFMUstateSize(c, state, &size), fmi2OK);
    std::vector<char> bytes(size);
    EXPECT_EQ(F().fmi2SerializeFMUstate(c, state, bytes.data(), size), fmi2OK);
    EXPECT_EQ(F().fmi2FreeFMUstate(c, &state), fmi2OK);
    return bytes;
  };
  const std::vector<char> from_remote = serialize(remote);
  const std::vector<char> from_local = serialize(local);
  ASSERT_FALSE(from_remote.empty());
  EXPECT_EQ(from_remote, from_local);

  // The remote bytes into a second remote instance and into an in-process
  // one; the in-process bytes into a remote one.
  fmi2Component b = StartRemote("remote b", *pendulum_);
  fmi2Component c = StartWithoutParameter("local c", *pendulum_);
  fmi2Component d = StartRemote("remote d", *pendulum_);
  ASSERT_NE(b, nullptr);
  ASSERT_NE(c, nullptr);
  ASSERT_NE(d, nullptr);
  std::vector<double> times(3, t);
  const fmi2Component into[3] = {b, c, d};
  const std::vector<char>* bytes[3] = {&from_remote, &from_remote, &from_local};
  for (int i = 0; i < 3; ++i) {
    fmi2FMUstate state = nullptr;
    ASSERT_EQ(F().fmi2DeSerializeFMUstate(into[i], bytes[i]->data(), bytes[i]->size(), &state),
              fmi2OK)
        << i;
    ASSERT_EQ(F().fmi2SetFMUstate(into[i], state), fmi2OK) << i << ": " << LastLog();
    F().fmi2FreeFMUstate(into[i], &state);
    EXPECT_TRUE(SameBits(Values(*pendulum_, into[i], t), (*reference_)[15])) << i;
  }
  for (int k = 15; k < 25; ++k) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(Step(*pendulum_, into[i], k, &times[static_cast<size_t>(i)]), fmi2OK) << i;
      EXPECT_TRUE(SameBits(Values(*pendulum_, into[i], times[static_cast<size_t>(i)]),
                           (*reference_)[static_cast<size_t>(k + 1)]))
          << "instance " << i << " after step " << k;
    }
  }
  for (fmi2Component x : {remote, local, b, c, d}) F().fmi2FreeInstance(x);
}

TEST_F(FmuRemoteTest, ALongInstanceNameIsCutForTheSessionsDisplayName) {
  // 300 bytes of two-byte characters: the session's name is cut at 256
  // bytes on a character boundary, and the instance runs.
  std::string name;
  for (int i = 0; i < 150; ++i) name += "\xc3\xa9";
  fmi2Component c = StartRemote(name.c_str(), *pendulum_);
  ASSERT_NE(c, nullptr) << LastLog();
  double t = 0;
  ASSERT_EQ(Step(*pendulum_, c, 0, &t), fmi2OK);
  EXPECT_NE(ListSessions(ServerAddress()).find(name.substr(0, 256)), std::string::npos);
  F().fmi2FreeInstance(c);
}

TEST_F(FmuRemoteTest, TerminateResetAndFreeDeleteTheSessions) {
  const std::string& address = ServerAddress();
  for (const char* how : {"terminate", "reset", "free"}) {
    SCOPED_TRACE(how);
    const std::string name = std::string("remote deleted by ") + how;
    fmi2Component c = StartRemote(name.c_str(), *pendulum_);
    ASSERT_NE(c, nullptr);
    double t = 0;
    ASSERT_EQ(Step(*pendulum_, c, 0, &t), fmi2OK);
    fmi2FMUstate state = nullptr;
    ASSERT_EQ(F().fmi2GetFMUstate(c, &state), fmi2OK);
    EXPECT_NE(ListSessions(address).find(name), std::string::npos);
    if (std::string(how) == "terminate") {
      ASSERT_EQ(F().fmi2Terminate(c), fmi2OK);
      // The state went with the session.
      LogLines().clear();
      EXPECT_EQ(F().fmi2SetFMUstate(c, state), fmi2Error);
      EXPECT_TRUE(LoggedContains("deleted by fmi2Terminate"));
    } else if (std::string(how) == "reset") {
      ASSERT_EQ(F().fmi2Reset(c), fmi2OK);
      EXPECT_EQ(ListSessions(address).find(name), std::string::npos);
      // Initialized again (a new session): the old state's session is gone,
      // and the instance goes on from its new start.
      ASSERT_EQ(F().fmi2SetupExperiment(c, fmi2False, 0, 0, fmi2False, 0), fmi2OK);
      ASSERT_EQ(F().fmi2EnterInitializationMode(c), fmi2OK);
      ASSERT_EQ(ExitInitializationOn(address, *pendulum_, c), fmi2OK) << LastLog();
      LogLines().clear();
      EXPECT_EQ(F().fmi2SetFMUstate(c, state), fmi2Error);
      EXPECT_TRUE(LoggedContains("deleted by fmi2Reset")) << LastLog();
      t = 0;
      ASSERT_EQ(Step(*pendulum_, c, 0, &t), fmi2OK);
      EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[1]));
      ASSERT_EQ(F().fmi2Reset(c), fmi2OK);
    }
    if (std::string(how) != "free") {
      EXPECT_EQ(ListSessions(address).find(name), std::string::npos);
    }
    EXPECT_EQ(F().fmi2FreeFMUstate(c, &state), fmi2OK);
    F().fmi2FreeInstance(c);
    EXPECT_EQ(ListSessions(address).find(name), std::string::npos);
  }
}

TEST_F(FmuRemoteTest, TheParameterWinsOverTheEnvironmentVariable) {
  const std::string& address = ServerAddress();
  ASSERT_EQ(setenv("TETHER_FMU_SERVER", address.c_str(), 1), 0);
  // No parameter: the environment's server.
  fmi2Component c = StartWithoutParameter("remote from env", *pendulum_);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(ListSessions(address).find("remote from env"), std::string::npos);
  double t = 0;
  for (int k = 0; k < 5; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[5]));
  F().fmi2FreeInstance(c);
  // The parameter: its server (nothing listens on port 1), not the
  // environment's.
  LogLines().clear();
  fmi2Status status = fmi2OK;
  EXPECT_EQ(StartOn("127.0.0.1:1", "remote param", *pendulum_, &status), nullptr);
  EXPECT_EQ(status, fmi2Error);
  EXPECT_TRUE(LoggedContains("127.0.0.1:1"));
  ASSERT_EQ(unsetenv("TETHER_FMU_SERVER"), 0);
  // Neither: in process (no session appears).
  c = StartWithoutParameter("in process again", *pendulum_);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(ListSessions(address).find("in process again"), std::string::npos);
  F().fmi2FreeInstance(c);
}

TEST_F(FmuRemoteTest, AnUnreachableServerIsAnErrorNamingTheAddressInBoundedTime) {
  LogLines().clear();
  const auto start = std::chrono::steady_clock::now();
  fmi2Status status = fmi2OK;
  EXPECT_EQ(StartOn("127.0.0.1:1", "unreachable", *pendulum_, &status), nullptr);
  EXPECT_EQ(status, fmi2Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_TRUE(
      LoggedContains("fmi2ExitInitializationMode: server 127.0.0.1:1: CreateSession: "
                     "UNAVAILABLE"))
      << LastLog();
  // The parameter is fixed once initialized.
  fmi2Component c = StartWithoutParameter("fixed", *pendulum_);
  ASSERT_NE(c, nullptr);
  const fmi2ValueReference ref = ServerRef(*pendulum_);
  const fmi2String value = "127.0.0.1:2";
  EXPECT_EQ(F().fmi2SetString(c, &ref, 1, &value), fmi2Error);
  EXPECT_TRUE(LoggedContains("tether.server is fixed"));
  F().fmi2FreeInstance(c);
}

TEST_F(FmuRemoteTest, ParametersInputsAndStartTimeSetBeforeInitializationAreTheInProcessOnes) {
  // The same setup in both modes: another gravity, an input, a start time.
  fmi2Component c[2] = {nullptr, nullptr};
  const char* names[2] = {"setup local", "setup remote"};
  const fmi2ValueReference grav = pendulum_->vr.at("grav");
  for (int i = 0; i < 2; ++i) {
    c[i] = Instantiate(names[i], *pendulum_);
    ASSERT_NE(c[i], nullptr);
    ASSERT_EQ(F().fmi2SetupExperiment(c[i], fmi2False, 0, 0.25, fmi2False, 0), fmi2OK);
    ASSERT_EQ(F().fmi2EnterInitializationMode(c[i]), fmi2OK);
    const double g = 1.62, u = -0.75;
    ASSERT_EQ(F().fmi2SetReal(c[i], &grav, 1, &g), fmi2OK);
    ASSERT_EQ(F().fmi2SetReal(c[i], pendulum_->inputs.data(), 1, &u), fmi2OK);
    ASSERT_EQ(ExitInitializationOn(i == 1 ? ServerAddress() : "", *pendulum_, c[i]), fmi2OK)
        << LastLog();
  }
  EXPECT_NE(ListSessions(ServerAddress()).find("setup remote"), std::string::npos);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c[0], 0.25), Values(*pendulum_, c[1], 0.25)));
  // Steps without setting the input, then with.
  double t[2] = {0.25, 0.25};
  for (int k = 0; k < 12; ++k) {
    for (int i = 0; i < 2; ++i) {
      if (k < 6) {
        ASSERT_EQ(F().fmi2DoStep(c[i], t[i], StepSize(k), fmi2True), fmi2OK);
        t[i] += StepSize(k);
      } else {
        ASSERT_EQ(Step(*pendulum_, c[i], k, &t[i]), fmi2OK);
      }
    }
    ASSERT_TRUE(SameBits(Values(*pendulum_, c[0], t[0]), Values(*pendulum_, c[1], t[1])))
        << "after step " << k;
  }
  EXPECT_FALSE(SameBits(Values(*pendulum_, c[1], t[1]), (*reference_)[12]));
  for (fmi2Component x : c) F().fmi2FreeInstance(x);
}

TEST_F(FmuRemoteTest, TlsAndATokenComeFromTheClientsEnvironmentVariables) {
  tether::test_support::Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  const fs::path tokens = WorkDir() / "tokens";
  std::ofstream(tokens) << "acme acme-0123456789abcdef\n";
  fs::permissions(tokens, fs::perms::owner_read | fs::perms::owner_write);  // 0600, or refused
  tether::test_support::ServerProcessOptions options;
  options.terminate_with_parent = true;
  tether::test_support::ServerProcess secure(
      {TETHER_SERVER, "--listen", "127.0.0.1:0", "--tls-cert", pki.path("server.crt"), "--tls-key",
       pki.path("server.key"), "--tokens-file", tokens.string()},
      options);
  ASSERT_TRUE(secure.ok()) << secure.error();
  ASSERT_EQ(setenv("TETHER_TLS_CA", pki.path("ca.crt").c_str(), 1), 0);
  // Without the token: refused, the message naming the server and the code.
  LogLines().clear();
  fmi2Status status = fmi2OK;
  EXPECT_EQ(StartOn(secure.address(), "no token", *pendulum_, &status), nullptr);
  EXPECT_EQ(status, fmi2Error);
  EXPECT_TRUE(LoggedContains("server " + secure.address() + ": CreateSession: UNAUTHENTICATED"))
      << LastLog();
  // With it: the run is the in-process one.
  ASSERT_EQ(setenv("TETHER_TOKEN", "acme-0123456789abcdef", 1), 0);
  fmi2Component c = StartOn(secure.address(), "tls", *pendulum_);
  unsetenv("TETHER_TOKEN");
  unsetenv("TETHER_TLS_CA");
  ASSERT_NE(c, nullptr) << LastLog();
  double t = 0;
  for (int k = 0; k < 5; ++k) ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[5]));
  F().fmi2FreeInstance(c);
}

// The client's certificate and key: TETHER_CLIENT_TLS_CERT and _KEY;
// tether-server's TETHER_TLS_CERT and _KEY only when neither is set, with a
// warning through the logger.
TEST_F(FmuRemoteTest, MutualTlsCertificateFromTetherClientTlsVariables) {
  tether::test_support::Pki pki;
  ASSERT_TRUE(pki.ok()) << pki.log();
  tether::test_support::ServerProcessOptions options;
  options.terminate_with_parent = true;
  tether::test_support::ServerProcess mtls(
      {TETHER_SERVER, "--listen", "127.0.0.1:0", "--tls-cert", pki.path("server.crt"), "--tls-key",
       pki.path("server.key"), "--tls-client-ca", pki.path("ca.crt")},
      options);
  ASSERT_TRUE(mtls.ok()) << mtls.error();
  auto set = [](const char* name, const std::string& value) {
    ASSERT_EQ(setenv(name, value.c_str(), 1), 0);
  };
  struct UnsetAtExit {  // the other tests connect without them
    ~UnsetAtExit() {
      for (const char* name : {"TETHER_TLS_CA", "TETHER_CLIENT_TLS_CERT", "TETHER_CLIENT_TLS_KEY",
                               "TETHER_TLS_CERT", "TETHER_TLS_KEY"}) {
        unsetenv(name);
      }
    }
  } unset_at_exit;
  auto warned = [] {
    for (const auto& l : LogLines())
      if (l.find("deprecated") != std::string::npos) return true;
    return false;
  };
  set("TETHER_TLS_CA", pki.path("ca.crt"));
  // The new names: no warning.
  set("TETHER_CLIENT_TLS_CERT", pki.path("client.crt"));
  set("TETHER_CLIENT_TLS_KEY", pki.path("client.key"));
  LogLines().clear();
  fmi2Component c = StartOn(mtls.address(), "mtls new", *pendulum_);
  EXPECT_NE(c, nullptr) << LastLog();
  EXPECT_FALSE(warned());
  if (c != nullptr) {
    double t = 0;
    EXPECT_EQ(Step(*pendulum_, c, 0, &t), fmi2OK) << LastLog();
    F().fmi2FreeInstance(c);
  }
  // Both: the new win over the server's (a certificate of another CA here).
  set("TETHER_TLS_CERT", pki.path("wrong-ca.crt"));
  set("TETHER_TLS_KEY", pki.path("wrong-ca.key"));
  LogLines().clear();
  c = StartOn(mtls.address(), "mtls both", *pendulum_);
  EXPECT_NE(c, nullptr) << LastLog();
  EXPECT_TRUE(LoggedContains(
      "[1] logStatusError: fmi2ExitInitializationMode: TETHER_TLS_CERT is deprecated for clients "
      "and ignored: TETHER_CLIENT_TLS_CERT is set and wins (TETHER_TLS_CERT is tether-server's "
      "own certificate)"));
  if (c != nullptr) F().fmi2FreeInstance(c);
  // The old names alone: still the client's, with a warning.
  unsetenv("TETHER_CLIENT_TLS_CERT");
  unsetenv("TETHER_CLIENT_TLS_KEY");
  set("TETHER_TLS_CERT", pki.path("client.crt"));
  set("TETHER_TLS_KEY", pki.path("client.key"));
  LogLines().clear();
  c = StartOn(mtls.address(), "mtls old", *pendulum_);
  EXPECT_NE(c, nullptr) << LastLog();
  EXPECT_TRUE(
      LoggedContains("TETHER_TLS_CERT is deprecated for clients: use TETHER_CLIENT_TLS_CERT "
                     "(TETHER_TLS_CERT is tether-server's own certificate)"));
  EXPECT_TRUE(
      LoggedContains("TETHER_TLS_KEY is deprecated for clients: use TETHER_CLIENT_TLS_KEY "
                     "(TETHER_TLS_KEY is tether-server's own private key)"));
  if (c != nullptr) F().fmi2FreeInstance(c);
  // A bad file: the message names the variable it came from.
  set("TETHER_TLS_CERT", "/nonexistent/s.crt");
  LogLines().clear();
  fmi2Status status = fmi2OK;
  EXPECT_EQ(StartOn(mtls.address(), "mtls bad old", *pendulum_, &status), nullptr);
  EXPECT_EQ(status, fmi2Error);
  EXPECT_TRUE(LoggedContains("server " + mtls.address() +
                             ": TETHER_TLS_CERT /nonexistent/s.crt: cannot read it"))
      << LastLog();
  unsetenv("TETHER_TLS_CERT");
  unsetenv("TETHER_TLS_KEY");
  set("TETHER_CLIENT_TLS_CERT", "/nonexistent/c.crt");
  set("TETHER_CLIENT_TLS_KEY", pki.path("client.key"));
  LogLines().clear();
  EXPECT_EQ(StartOn(mtls.address(), "mtls bad new", *pendulum_, &status), nullptr);
  EXPECT_TRUE(LoggedContains("server " + mtls.address() +
                             ": TETHER_CLIENT_TLS_CERT /nonexistent/c.crt: cannot read it"))
      << LastLog();
  unsetenv("TETHER_CLIENT_TLS_CERT");
  LogLines().clear();
  EXPECT_EQ(StartOn(mtls.address(), "mtls key alone", *pendulum_, &status), nullptr);
  EXPECT_TRUE(LoggedContains("server " + mtls.address() +
                             ": TETHER_CLIENT_TLS_CERT: missing; a client private key needs its "
                             "certificate chain"))
      << LastLog();
}

TEST_F(FmuRemoteTest, AStateWhoseSnapshotTheServerDroppedIsAnError) {
  tether::test_support::ServerProcessOptions options;
  options.terminate_with_parent = true;
  tether::test_support::ServerProcess small(
      {TETHER_SERVER, "--listen", "127.0.0.1:0", "--max-snapshots", "2"}, options);
  ASSERT_TRUE(small.ok()) << small.error();
  fmi2Component c = StartOn(small.address(), "remote small", *pendulum_);
  ASSERT_NE(c, nullptr);
  double t = 0;
  fmi2FMUstate states[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < 3; ++k) {
    ASSERT_EQ(Step(*pendulum_, c, k, &t), fmi2OK);
    ASSERT_EQ(F().fmi2GetFMUstate(c, &states[k]), fmi2OK);
  }
  LogLines().clear();
  EXPECT_EQ(F().fmi2SetFMUstate(c, states[0]), fmi2Error);
  EXPECT_TRUE(LoggedContains("--max-snapshots")) << LastLog();
  // The instance goes on where it was, and the newer states still work.
  ASSERT_EQ(Step(*pendulum_, c, 3, &t), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t), (*reference_)[4]));
  ASSERT_EQ(F().fmi2SetFMUstate(c, states[2]), fmi2OK);
  EXPECT_TRUE(SameBits(Values(*pendulum_, c, t - StepSize(3)), (*reference_)[3]));
  for (auto& s : states) F().fmi2FreeFMUstate(c, &s);
  F().fmi2FreeInstance(c);
}
#endif  // TETHER_SERVER

}  // namespace
}  // namespace tether::fmu_test
