// The machine-readable details of tether-server's NOT_FOUND,
// FAILED_PRECONDITION and RESOURCE_EXHAUSTED statuses: google.rpc
// ResourceInfo, PreconditionFailure and QuotaFailure (status_mapping.h),
// read with the client library's decoder and, for each code once, with the
// generated google.rpc messages so that the decoder is checked too.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"
#include "service_test_fixture.h"
#include "support/raw_calls.h"
#include "test_util.h"
#include "tether/status_details.h"

namespace tether::service_test {
namespace {

// The status details decoded with protobuf itself.
google::rpc::Status Rich(const grpc::Status& s) {
  google::rpc::Status rich;
  EXPECT_TRUE(rich.ParseFromString(s.error_details())) << "undecodable details";
  return rich;
}

TEST_F(ServiceTest, NotFoundCarriesResourceInfo) {
  const std::string absent = "0123456789abcdef0123456789abcdef";
  v1::Session got;
  grpc::Status s = client_->GetSession(absent, &got);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  std::vector<client::ErrorSubject> subjects = client::ErrorSubjects(s);
  ASSERT_EQ(subjects.size(), 1u);
  EXPECT_EQ(subjects[0].detail, "ResourceInfo");
  EXPECT_EQ(subjects[0].type, "tether.v1.Session");
  EXPECT_EQ(subjects[0].name, absent);
  EXPECT_FALSE(subjects[0].description.empty());

  google::rpc::Status rich = Rich(s);
  ASSERT_EQ(rich.details_size(), 1);
  google::rpc::ResourceInfo info;
  ASSERT_TRUE(rich.details(0).UnpackTo(&info)) << rich.details(0).type_url();
  EXPECT_EQ(info.resource_type(), "tether.v1.Session");
  EXPECT_EQ(info.resource_name(), absent);
  EXPECT_EQ(rich.code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));

  // Delete, Run and CoSimulate of an absent session say the same.
  for (const grpc::Status& other :
       {client_->DeleteSession(absent), RunToEnd(client_.get(), RunSteps(absent, 1)).status}) {
    ASSERT_EQ(other.error_code(), grpc::StatusCode::NOT_FOUND);
    subjects = client::ErrorSubjects(other);
    ASSERT_EQ(subjects.size(), 1u) << other.error_message();
    EXPECT_EQ(subjects[0].name, absent);
  }

  // A hostile id comes back escaped and bounded, never raw.
  const std::string hostile = std::string(5000, 'a') + "\nforged";
  s = client_->GetSession(hostile, &got);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  subjects = client::ErrorSubjects(s);
  ASSERT_EQ(subjects.size(), 1u);
  EXPECT_LT(subjects[0].name.size(), 200u);
  EXPECT_EQ(subjects[0].name.find('\n'), std::string::npos);
}

TEST_F(ServiceTest, AnOversizedNameIsInvalidArgumentEscapedAndBounded) {
  // A 3 MB coordinate name that starts with a newline and an ESC: refused
  // as INVALID_ARGUMENT naming the field, never echoed in full (it would
  // exceed gRPC's metadata limit and come back RESOURCE_EXHAUSTED).
  v1::SimulationSpec spec = Pendulum();
  const int index = spec.system().coordinates_size();
  spec.mutable_system()->add_coordinates("\n\x1b[31mforged\xe2\x80\xae" +
                                         std::string(3 << 20, 'q'));
  spec.mutable_initial()->add_q(0);
  spec.mutable_initial()->add_v(0);
  v1::Session session;
  grpc::Status s = client_->CreateSession(spec, "", &session);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().substr(0, 300);
  const std::string field = "spec.system.coordinates[" + std::to_string(index) + "]";
  EXPECT_TRUE(HasViolation(s, field)) << ViolationFields(s);
  EXPECT_LT(s.error_message().size(), 2048u);
  EXPECT_LT(s.error_details().size(), 4096u);
  std::vector<std::string> texts = {s.error_message()};
  for (const auto& v : Violations(s)) {
    texts.push_back(v.field());
    texts.push_back(v.description());
  }
  for (const std::string& text : texts) {
    EXPECT_EQ(text.find('\n'), std::string::npos);
    EXPECT_EQ(text.find('\x1b'), std::string::npos);
    EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos);  // U+202E
  }
  EXPECT_NE(s.error_message().find("\\n\\x1b[31mforged\\u{202e}"), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("bytes)"), std::string::npos) << s.error_message();

  // The same name in an expression (an unknown name) and many bad names at
  // once stay bounded too.
  v1::SimulationSpec unknown = Pendulum();
  unknown.mutable_system()->set_potential_energy(std::string(3 << 20, 'z'));
  s = client_->CreateSession(unknown, "", &session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().substr(0, 300);
  EXPECT_LT(s.error_message().size() + s.error_details().size(), 6144u);
  v1::SimulationSpec many = Pendulum();
  for (int i = 0; i < 2000; ++i) {
    many.mutable_system()->add_coordinates(std::string(120, 'w') + "-" + std::to_string(i));
  }
  s = client_->CreateSession(many, "", &session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message().substr(0, 300);
  EXPECT_LT(s.error_message().size() + s.error_details().size(), 6144u);
  EXPECT_FALSE(Violations(s).empty());
}

TEST_F(ServiceTest, RunningSessionIsPreconditionFailure) {
  std::string id = MustCreate(client_.get(), Pendulum());
  int messages = 0;
  grpc::Status first = client_->RunMessages(RunSteps(id, 1000000000), [&](const v1::RunResponse&) {
    ++messages;
    RunResult second = RunToEnd(client_.get(), RunSteps(id, 10));
    EXPECT_EQ(second.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    std::vector<client::ErrorSubject> subjects = client::ErrorSubjects(second.status);
    EXPECT_EQ(subjects.size(), 1u);
    if (!subjects.empty()) {
      EXPECT_EQ(subjects[0].detail, "PreconditionFailure");
      EXPECT_EQ(subjects[0].type, "SESSION_RUNNING");
      EXPECT_EQ(subjects[0].name, id);
    }
    google::rpc::Status rich = Rich(second.status);
    google::rpc::PreconditionFailure failure;
    EXPECT_TRUE(rich.details_size() == 1 && rich.details(0).UnpackTo(&failure));
    EXPECT_EQ(failure.violations_size(), 1);
    return false;
  });
  EXPECT_EQ(messages, 1);
  EXPECT_TRUE(client_->DeleteSession(id).ok());
}

TEST_F(ServiceTest, CompileLimitIsQuotaFailureNamingTheExpression) {
  v1::ValidationReport report;
  grpc::Status s = client_->Validate(testing::SwellingKineticEnergy(1024), &report);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  std::vector<client::ErrorSubject> subjects = client::ErrorSubjects(s);
  ASSERT_EQ(subjects.size(), 1u);
  EXPECT_EQ(subjects[0].detail, "QuotaFailure");
  EXPECT_EQ(subjects[0].name, "spec.system.kinetic_energy");
  EXPECT_NE(subjects[0].description.find("compile limit"), std::string::npos)
      << subjects[0].description;
  // The field violation is still there for clients that read BadRequest.
  EXPECT_TRUE(HasViolation(s, "spec.system.kinetic_energy"));
}

// One compile worker held by a compile only its time budget stops, one
// waiting place: of six more compiles sent at once, some are refused at once
// with a QuotaFailure naming the flag; the others complete.
TEST(ServiceErrorDetailsTest, CompileQueueCapIsQuotaFailureNamingTheFlag) {
  auto server = StartServer({"--compile-workers", "1", "--max-queued-compiles", "1",
                             "--max-compile-nodes", "1000000000", "--max-derivative-nodes",
                             "10000000000", "--compile-time-budget", "2", "--log-level", "debug"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address(), 30s);
  std::thread slow([&] {
    v1::ValidationReport report;
    (void)client->Validate(testing::SwellingKineticEnergy(1024), &report);
  });
  // The slow compile holds the worker.
  ASSERT_TRUE(WaitForLog(*server, "compile started: rpc=Validate")) << server->Log();
  std::vector<grpc::Status> statuses(6);
  std::vector<std::thread> light;
  for (size_t i = 0; i < statuses.size(); ++i) {
    light.emplace_back([&, i] {
      v1::ValidationReport report;
      statuses[i] = client->Validate(Pendulum(), &report);
    });
  }
  // Ensembles compile on the same lane, within the same bound: of two sent
  // beside the six, at least one is refused (one compile waits at most).
  v1::RunEnsembleRequest ensemble;
  *ensemble.mutable_spec() = Pendulum();
  ensemble.set_until_time(0.01);
  v1::EnsembleSweep* sweep = ensemble.mutable_ensemble()->add_sweeps();
  sweep->set_name("der(y)");
  sweep->set_start(-0.5);
  sweep->set_stop(0.5);
  sweep->set_count(2);
  std::vector<grpc::Status> ensembles(2);
  for (size_t i = 0; i < ensembles.size(); ++i) {
    light.emplace_back([&, i] {
      std::string response;
      ensembles[i] =
          test_support::RawBidiOnce(client->channel(), "/tether.v1.Simulator/RunEnsemble",
                                    ensemble.SerializeAsString(), &response);
    });
  }
  for (auto& t : light) t.join();
  slow.join();
  int ensembles_refused = 0;
  for (const grpc::Status& s : ensembles) {
    if (s.ok()) continue;
    ASSERT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    std::vector<client::ErrorSubject> subjects = client::ErrorSubjects(s);
    ASSERT_EQ(subjects.size(), 1u) << s.error_message();
    EXPECT_EQ(subjects[0].name, "--max-queued-compiles") << s.error_message();
    ++ensembles_refused;
  }
  EXPECT_GE(ensembles_refused, 1);
  int refused = 0, ok = 0;
  for (const grpc::Status& s : statuses) {
    if (s.ok()) {
      ++ok;
      continue;
    }
    ASSERT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_NE(s.error_message().find("--max-queued-compiles"), std::string::npos);
    std::vector<client::ErrorSubject> subjects = client::ErrorSubjects(s);
    ASSERT_EQ(subjects.size(), 1u);
    EXPECT_EQ(subjects[0].detail, "QuotaFailure");
    EXPECT_EQ(subjects[0].name, "--max-queued-compiles");
    ++refused;
  }
  EXPECT_GE(refused, 1);
  EXPECT_LE(ok, 5);
  // Refusing is not failing: once the lane is free, a compile goes through.
  v1::ValidationReport report;
  EXPECT_TRUE(client->Validate(Pendulum(), &report).ok());
}

TEST(ServiceErrorDetailsTest, SessionCapIsQuotaFailureNamingTheFlag) {
  auto server = StartServer({"--max-sessions", "1"});
  ASSERT_TRUE(server->ok()) << server->error();
  auto client = ConnectClient(server->address());
  std::string a = MustCreate(client.get(), Pendulum());
  v1::Session s;
  grpc::Status st = client->CreateSession(Pendulum(), "", &s);
  ASSERT_EQ(st.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  google::rpc::Status rich = Rich(st);
  ASSERT_EQ(rich.details_size(), 1);
  google::rpc::QuotaFailure failure;
  ASSERT_TRUE(rich.details(0).UnpackTo(&failure)) << rich.details(0).type_url();
  ASSERT_EQ(failure.violations_size(), 1);
  EXPECT_EQ(failure.violations(0).subject(), "--max-sessions");
  EXPECT_NE(failure.violations(0).description().find("1 sessions"), std::string::npos);
  std::vector<client::ErrorSubject> subjects = client::ErrorSubjects(st);
  ASSERT_EQ(subjects.size(), 1u);
  EXPECT_EQ(subjects[0].name, "--max-sessions");
  EXPECT_TRUE(client->DeleteSession(a).ok());
}

// Other codes keep their details as before: none without field violations.
TEST_F(ServiceTest, InvalidArgumentCarriesOnlyBadRequest) {
  v1::Session got;
  grpc::Status s = client_->GetSession("", &got);
  ASSERT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(client::ErrorSubjects(s).empty());
  EXPECT_FALSE(client::FieldViolations(s).empty());
}

}  // namespace
}  // namespace tether::service_test
