#include "service/unary_handlers.h"

#include <chrono>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/simulation.h"
#include "service/rpc_common.h"
#include "service/status_mapping.h"

namespace tether::service {

grpc::Status CompileLaneRefusal(const ServiceOptions& options, WorkerPool::Admission admission) {
  if (admission == WorkerPool::Admission::kPoolFull) {
    const std::size_t cap = options.max_queued_compiles;
    return ToGrpcStatus(ResourceExhausted(
        "the compile lane has " + std::to_string(cap) +
            " compiles waiting (--max-queued-compiles); retry later",
        ErrorSubject{"", "--max-queued-compiles",
                     "at most " + std::to_string(cap) + " compiles waiting on this server"}));
  }
  const std::size_t share = options.tenant_max_queued_compiles;
  return ToGrpcStatus(ResourceExhausted(
      "this tenant has " + std::to_string(share) +
          " compiles waiting for the compile lane (--tenant-max-queued-compiles); retry later",
      ErrorSubject{"", "--tenant-max-queued-compiles",
                   "at most " + std::to_string(share) + " compiles of one tenant waiting"}));
}

void OnCompileLane(ServiceCore* core, const Tenant* tenant, UnaryCall* call, const char* rpc,
                   const google::protobuf::Message& request,
                   std::function<grpc::Status(std::string*)> work, std::function<void()> refused) {
  if (core->shutting_down()) {
    if (refused) refused();
    LogIfFailed(rpc, tenant, "", Unavailable());
    call->Reply(Unavailable());
    return;
  }
  // The parsed request waits in the lane's queue and is read by the
  // compile: held from the memory budget until the reply (64 queued
  // descriptions of 4 MB held 565 MiB counted nowhere).
  auto held = std::make_shared<MemoryCharge>();
  if (Status s = core->memory().Charge(
          tenant, static_cast<int64_t>(request.SpaceUsedLong()),
          std::string(rpc) + "'s request while it waits for and is read by the compile lane",
          held.get());
      !s.ok()) {
    if (refused) refused();
    grpc::Status status = ToGrpcStatus(s);
    LogIfFailed(rpc, tenant, "", status);
    call->Reply(std::move(status));
    return;
  }
  // Bounded queue, its total and the tenant's share (one tenant's flood
  // leaves room for the others, whom the lane then serves in turn):
  // checked and queued at once, so the bounds are exact.
  const WorkerPool::Admission admission = core->SubmitCompileIfRoom(
      [call, tenant, rpc, work = std::move(work), held]() mutable {
        // For operators (and the tests, which wait for it rather than sleep).
        spdlog::debug("compile started: rpc={} tenant={}", rpc, tenant->name());
        std::string session_id;
        grpc::Status status;
        // Memory the budgets did not foresee (an allocation the process cannot
        // have) fails this request, never the process and its sessions: the
        // work's objects are released by unwinding.
        try {
          status = work(&session_id);
        } catch (const std::bad_alloc&) {
          status = ToGrpcStatus(ResourceExhausted(
              std::string(rpc) + ": out of memory while compiling; the server's memory is taken "
                                 "(retry later, or send a smaller description)",
              ErrorSubject{"", "memory", "an allocation the server can make"}));
        }
        LogIfFailed(rpc, tenant, session_id, status);
        held->Reset();  // before the reply: the request is not read after it
        call->Reply(std::move(status));
      },
      tenant);
  if (admission == WorkerPool::Admission::kQueued) return;
  grpc::Status busy = CompileLaneRefusal(core->options(), admission);
  if (refused) refused();
  LogIfFailed(rpc, tenant, "", busy);
  call->Reply(std::move(busy));
}

// The hook runs on the worker, before the call is finished, so `context` is
// alive; IsCancelled is thread-safe in the callback API. The cancel is seen
// within one poll interval.
CompileOptions CallCompileOptions(ServiceCore* core, grpc::CallbackServerContext* context) {
  CompileOptions options;
  options.limits = core->options().compile;
  const auto deadline = context->deadline();  // far future when the client set none
  options.cancelled = [core, context, deadline] {
    return core->shutting_down() || context->IsCancelled() ||
           std::chrono::system_clock::now() >= deadline;
  };
  return options;
}

grpc::Status CompileFailed(ServiceCore* core, grpc::CallbackServerContext* context,
                           const Status& stopped, std::string_view prefix) {
  if (stopped.code() != StatusCode::kCancelled) return ToGrpcStatus(stopped, prefix);
  if (core->shutting_down()) return Unavailable();
  if (std::chrono::system_clock::now() >= context->deadline()) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, stopped.message());
  }
  return ToGrpcStatus(stopped);
}

void ReplyInline(UnaryCall* call, const Tenant* tenant, const char* rpc,
                 const std::string& session_id, grpc::Status status) {
  LogIfFailed(rpc, tenant, session_id, status);
  call->Reply(std::move(status));
}

namespace {
void Inline(UnaryCall* call, const Tenant* tenant, const char* rpc, const std::string& session_id,
            grpc::Status status) {
  ReplyInline(call, tenant, rpc, session_id, std::move(status));
}
template <typename Work>
void OnPool(ServiceCore* core, const Tenant* tenant, UnaryCall* call, const char* rpc,
            const google::protobuf::Message& request, Work work,
            std::function<void()> refused = {}) {
  OnCompileLane(core, tenant, call, rpc, request, std::move(work), std::move(refused));
}
}  // namespace

grpc::ServerUnaryReactor* RefuseUnary(grpc::CallbackServerContext* context, const char* rpc,
                                      const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  LogIfFailed(rpc, nullptr, "", status);
  reactor->Finish(status);
  return reactor;
}

void HandleValidate(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                    const v1::ValidateRequest* request, v1::ValidateResponse* response,
                    UnaryCall* call) {
  return OnPool(core, tenant, call, "Validate", *request,
                [core, context, request, response](std::string*) {
                  Status s = tether::Validate(request->spec(), CallCompileOptions(core, context),
                                              response->mutable_report());
                  if (!s.ok()) {
                    response->Clear();
                    return CompileFailed(core, context, s);
                  }
                  return grpc::Status::OK;
                });
}

void HandleEvaluate(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                    const v1::EvaluateRequest* request, v1::EvaluateResponse* response,
                    UnaryCall* call) {
  return OnPool(
      core, tenant, call, "Evaluate", *request, [core, context, request, response](std::string*) {
        std::vector<v1::Diagnostic> warnings;
        auto created =
            Simulation::Create(request->spec(), &warnings, CallCompileOptions(core, context));
        if (!created.ok()) return CompileFailed(core, context, created.status());
        std::unique_ptr<Simulation> sim = std::move(created).value();
        Status s;
        if (request->has_state()) {
          s = sim->SetState(request->state(), "state");
          if (!s.ok()) return ToGrpcStatus(s);
        }
        if (grpc::Status g = ApplyInputs(sim.get(), request->inputs()); !g.ok()) return g;
        s = sim->Evaluate(response->mutable_frame());
        if (!s.ok()) return ToGrpcStatus(s);
        for (auto& w : warnings) *response->add_warnings() = std::move(w);
        return grpc::Status::OK;
      });
}

void HandleCreateSession(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                         const v1::CreateSessionRequest* request, v1::Session* response,
                         UnaryCall* call) {
  if (core->shutting_down()) return Inline(call, tenant, "CreateSession", "", Unavailable());
  if (request->display_name().size() > kMaxDisplayNameBytes) {
    return Inline(
        call, tenant, "CreateSession", "",
        InvalidField("display_name", "at most " + std::to_string(kMaxDisplayNameBytes) + " bytes"));
  }
  if (Status s = core->sessions().Reserve(tenant); !s.ok()) {
    return Inline(call, tenant, "CreateSession", "", ToGrpcStatus(s));
  }
  return OnPool(
      core, tenant, call, "CreateSession", *request,
      [core, tenant, context, request, response](std::string* session_id) {
        std::vector<v1::Diagnostic> warnings;
        auto created =
            Simulation::Create(request->spec(), &warnings, CallCompileOptions(core, context));
        if (!created.ok()) {
          core->sessions().Unreserve(tenant);
          return CompileFailed(core, context, created.status());
        }
        std::shared_ptr<Session> session;
        if (Status s = core->sessions().AddWithinBudget(std::move(created).value(),
                                                        request->display_name(), tenant,
                                                        "the new session", &session);
            !s.ok()) {
          return ToGrpcStatus(s);
        }
        *session_id = session->id();
        session->ToProto(response);
        if (grpc::Status s = core->Share(session); !s.ok()) return s;
        for (auto& w : warnings) *response->add_warnings() = std::move(w);
        spdlog::info("session created: tenant={} session={} coordinates={} constraints={}",
                     tenant->name(), session->id(), response->coordinates_size(),
                     response->constraints_size());
        return grpc::Status::OK;
      },
      // A refusal (the lane's queue full, the budget) gives the session slot
      // back: it was kept, and each refusal took one of --max-sessions.
      [core, tenant] { core->sessions().Unreserve(tenant); });
}

void HandleGetSession(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                      const v1::GetSessionRequest* request, v1::Session* response,
                      UnaryCall* call) {
  const std::string& id = request->session_id();
  if (core->shutting_down()) return Inline(call, tenant, "GetSession", id, Unavailable());
  if (grpc::Status s = CheckSessionId(id); !s.ok())
    return Inline(call, tenant, "GetSession", id, s);
  // A value this server does not know (an open enum keeps it) is refused
  // as any bad field is, not served as BASIC.
  if (!v1::SessionView_IsValid(request->view())) {
    return Inline(call, tenant, "GetSession", id,
                  InvalidField("view",
                               "expected SESSION_VIEW_UNSPECIFIED, SESSION_VIEW_BASIC or "
                               "SESSION_VIEW_FULL, found " +
                                   std::to_string(request->view())));
  }
  std::shared_ptr<Session> session;
  if (grpc::Status s = core->FindSession(id, tenant, &session); !s.ok()) {
    return Inline(call, tenant, "GetSession", id, s);
  }
  session->Touch();
  if (request->view() != v1::SESSION_VIEW_FULL) {
    session->ToProto(response);
    return Inline(call, tenant, "GetSession", id, grpc::Status::OK);
  }
  // The frame: one evaluation at the session's state, inline as
  // UpdateSession's is (about the cost of one step's first stage).
  Status s = session->ToProtoWithFrame(response);
  return Inline(call, tenant, "GetSession", id,
                s.ok()                              ? grpc::Status::OK
                : s.code() == StatusCode::kNotFound ? SessionNotFound(id)
                                                    : ToGrpcStatus(s));
}

void HandleListSessions(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                        const v1::ListSessionsRequest* request, v1::ListSessionsResponse* response,
                        UnaryCall* call) {
  if (core->shutting_down()) return Inline(call, tenant, "ListSessions", "", Unavailable());
  if (core->shared()) {
    return Inline(call, tenant, "ListSessions", "", core->ListShared(tenant, *request, response));
  }
  std::vector<std::shared_ptr<Session>> page;
  std::string next;
  Status s =
      core->sessions().List(request->page_size(), request->page_token(), &page, &next, tenant);
  if (!s.ok()) return Inline(call, tenant, "ListSessions", "", ToGrpcStatus(s));
  // A page ends early when its sessions would pass ¾ of the message limit
  // (SessionStore::PageRoom).
  SessionStore::PageRoom room(core->options().max_message_bytes);
  for (std::size_t k = 0; k < page.size(); ++k) {
    v1::Session* out = response->add_sessions();
    page[k]->ToProto(out);
    if (!room.Keeps(*out)) {
      response->mutable_sessions()->RemoveLast();
      next = SessionStore::PageTokenAt(*page[k]);
      break;
    }
  }
  response->set_next_page_token(next);
  return Inline(call, tenant, "ListSessions", "", grpc::Status::OK);
}

// Also interrupts the streams holding the session (CANCELLED, "session ID was
// deleted"); they release it as they end.
void HandleDeleteSession(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                         const v1::DeleteSessionRequest* request,
                         v1::DeleteSessionResponse* /*response*/, UnaryCall* call) {
  const std::string& id = request->session_id();
  if (core->shutting_down()) return Inline(call, tenant, "DeleteSession", id, Unavailable());
  if (grpc::Status s = CheckSessionId(id); !s.ok()) {
    return Inline(call, tenant, "DeleteSession", id, s);
  }
  auto session = core->sessions().Remove(id, tenant);
  if (!session) {
    // With --session-store, a session held by no replica (or by this one
    // after another handed it back) is deleted in the store.
    grpc::Status s = core->DeleteShared(id, tenant);
    if (s.ok()) spdlog::info("session deleted: tenant={} session={}", tenant->name(), id);
    return Inline(call, tenant, "DeleteSession", id, s);
  }
  core->InterruptStreams(session.get(), SessionDeleted(id));
  core->ForgetPersisted(id, tenant->name());
  spdlog::info("session deleted: tenant={} session={}", tenant->name(), id);
  return Inline(call, tenant, "DeleteSession", id, grpc::Status::OK);
}

}  // namespace tether::service
