// The session-state methods of tether.v1.Simulator: snapshots
// (Create/List/Restore/DeleteSnapshot), portable state (Export/
// ImportSession) and idle-session updates (UpdateSession). Each that reads
// or changes the simulation holds the session's lease while it does, so it
// is refused with FAILED_PRECONDITION while a Run or CoSimulate stream
// advances the session; saving and restoring are cheap (a copy of the
// state) and run inline, compiling (ImportSession, UpdateSession with new
// parameters or gains) runs on the compile lane.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "engine/session_export.h"
#include "engine/simulation.h"
#include "service/rpc_common.h"
#include "service/status_mapping.h"
#include "service/unary_handlers.h"

namespace tether::service {
namespace {

// Snapshot labels, at most.
constexpr std::size_t kMaxLabelBytes = 256;

// The session `id` of `tenant` with its lease taken (released by the
// caller), or the status saying why not.
grpc::Status Lease(ServiceCore* core, const Tenant* tenant, const std::string& id, const char* rpc,
                   bool allow_failed, std::shared_ptr<Session>* out) {
  if (core->shutting_down()) return Unavailable();
  if (grpc::Status s = CheckSessionId(id); !s.ok()) return s;
  std::shared_ptr<Session> session;
  if (grpc::Status s = core->FindSession(id, tenant, &session); !s.ok()) return s;
  if (Status s = session->Acquire(rpc, allow_failed); !s.ok()) {
    return s.code() == StatusCode::kNotFound ? SessionNotFound(id) : ToGrpcStatus(s);
  }
  session->Touch();
  *out = std::move(session);
  return grpc::Status::OK;
}

// "NAME" of a map key in a field path (EscapeForMessage: the key is client
// text).
std::string Key(const std::string& field, const std::string& name) {
  return field + "[" + EscapeForMessage(name) + "]";
}

// A compile error's field path in the spec, as the UpdateSession field
// that set it: system.parameters[i].* -> parameters[NAME],
// system.inputs[i].* -> input_defaults[NAME], system.baumgarte.X ->
// baumgarte.X, system.constraints[i].gains.X -> constraint_gains[NAME].X,
// initial.* -> state.*, certificate.* stays; anything else goes under "spec." (a problem the
// update did not cause, e.g. an expression that cannot be evaluated with
// the new parameters, is reported where it is).
std::string UpdatePath(const std::string& path, const v1::SimulationSpec& spec) {
  auto indexed = [&](const std::string& prefix, int* index, std::string* rest) {
    if (path.rfind(prefix, 0) != 0) return false;
    const std::size_t close = path.find(']', prefix.size());
    if (close == std::string::npos) return false;
    *index = std::atoi(path.substr(prefix.size(), close - prefix.size()).c_str());
    *rest = path.substr(close + 1);
    return true;
  };
  int i = 0;
  std::string rest;
  const auto& sys = spec.system();
  if (indexed("system.parameters[", &i, &rest) && i >= 0 && i < sys.parameters_size()) {
    return Key("parameters", sys.parameters(i).name());
  }
  if (indexed("system.inputs[", &i, &rest) && i >= 0 && i < sys.inputs_size()) {
    return Key("input_defaults", sys.inputs(i).name());
  }
  if (indexed("system.constraints[", &i, &rest) && i >= 0 && i < sys.constraints_size() &&
      rest.rfind(".gains", 0) == 0) {
    return Key("constraint_gains", sys.constraints(i).name()) + rest.substr(6);
  }
  if (path.rfind("system.baumgarte", 0) == 0) return path.substr(7);
  if (path.rfind("certificate", 0) == 0) return path;
  if (path.rfind("initial", 0) == 0) return "state" + path.substr(7);
  return "spec." + path;
}

Status WithUpdatePaths(const Status& s, const v1::SimulationSpec& spec) {
  std::vector<FieldViolation> v = s.violations();
  std::string message = s.message();
  for (auto& x : v) {
    const std::string from = x.field;
    x.field = UpdatePath(x.field, spec);
    // The message names the fields as the details do ("system.parameters[0].value:"
    // said one thing and BadRequest.field "parameters[l]" another).
    if (from.empty() || from == x.field) continue;
    for (std::size_t at = 0; (at = message.find(from + ":", at)) != std::string::npos;) {
      const bool starts = at == 0 || message[at - 1] == '\n' || message[at - 1] == ' ';
      if (starts) {
        message.replace(at, from.size(), x.field);
        at += x.field.size();
      } else {
        at += from.size();
      }
    }
  }
  return Status(s.code(), message, std::move(v), s.subject());
}

// Unknown names reported per map, at most: the status keeps about 1.5 KB
// of violations anyway (status_mapping.cc), and a request may name
// hundreds of thousands.
constexpr std::size_t kMaxUnknownNamesReported = 64;

// Applies `values` (a request map, by name) to the elements of `items`
// with those names through `set`, in name order (so that errors never
// depend on map iteration order); an unknown name is a violation on
// FIELD[NAME] saying which list it must name (the first
// kMaxUnknownNamesReported, after one on FIELD counting them all, which
// then comes first so that the status's bounded details keep it). Names
// are looked up in a hash index of `items` (the first of a repeated name,
// as a search from the front finds): a linear search per name took 0.66 s
// of the handler thread for 150,000 unknown names against 4,000
// parameters. Whether anything was set.
template <typename Map, typename Items, typename Set>
bool ApplyByName(const Map& values, Items* items, const char* field, const char* list, Set set,
                 std::vector<FieldViolation>* bad) {
  using Value = typename Map::mapped_type;
  using Item = std::remove_reference_t<decltype(*items->begin())>;
  std::unordered_map<std::string_view, Item*> index;
  index.reserve(static_cast<std::size_t>(items->size()));
  for (auto& x : *items) index.emplace(x.name(), &x);
  bool any = false;
  std::size_t unknown = 0;
  const std::size_t first = bad->size();
  for (const auto& [name, value] : std::map<std::string, Value>(values.begin(), values.end())) {
    auto it = index.find(name);
    if (it == index.end()) {
      if (++unknown <= kMaxUnknownNamesReported) {
        bad->push_back({Key(field, name), std::string("expected the name of one of ") + list});
      }
      continue;
    }
    set(it->second, value);
    any = true;
  }
  if (unknown > kMaxUnknownNamesReported) {
    bad->insert(bad->begin() + static_cast<std::ptrdiff_t>(first),
                {field, std::to_string(unknown) + " names are not in " + list + "; the first " +
                            std::to_string(kMaxUnknownNamesReported) + " follow"});
  }
  return any;
}

// The request's changes applied to `spec` (the session's description, its
// initial state set to `current`). Unknown names are violations; values
// are checked by compiling. Returns whether the description's compiled
// form changes (parameters, gains or input defaults).
bool MergeUpdate(const v1::UpdateSessionRequest& r, const v1::State& current,
                 v1::SimulationSpec* spec, std::vector<FieldViolation>* bad) {
  auto* sys = spec->mutable_system();
  bool recompile = ApplyByName(
      r.parameters(), sys->mutable_parameters(), "parameters", "system.parameters",
      [](v1::Parameter* p, double v) { p->set_value(v); }, bad);
  recompile |= ApplyByName(
      r.input_defaults(), sys->mutable_inputs(), "input_defaults", "system.inputs",
      [](v1::Input* in, double v) { in->set_default_value(v); }, bad);
  recompile |= ApplyByName(
      r.constraint_gains(), sys->mutable_constraints(), "constraint_gains", "system.constraints",
      [](v1::Constraint* c, const v1::Baumgarte& g) { *c->mutable_gains() = g; }, bad);
  if (r.has_baumgarte()) {
    *sys->mutable_baumgarte() = r.baumgarte();
    recompile = true;
  }
  // New certificate options are checked as a new description's are (and
  // ENCLOSED's limit on g's size): through the compile.
  if (r.has_certificate()) {
    *spec->mutable_certificate() = r.certificate();
    recompile = true;
  }
  *spec->mutable_initial() = r.has_state() ? r.state() : current;
  return recompile;
}

grpc::Status Violations(const std::vector<FieldViolation>& bad) {
  std::string message = "UpdateSession: ";
  for (std::size_t i = 0; i < bad.size(); ++i) {
    message += (i ? "; " : "") + bad[i].field + ": " + bad[i].description;
  }
  return ToGrpcStatus(InvalidArgument(message, bad));
}

}  // namespace

void HandleCreateSnapshot(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                          const v1::CreateSnapshotRequest* request, v1::Snapshot* response,
                          UnaryCall* call) {
  const std::string& id = request->session_id();
  if (request->label().size() > kMaxLabelBytes) {
    return ReplyInline(
        call, tenant, "CreateSnapshot", id,
        InvalidField("label", "at most " + std::to_string(kMaxLabelBytes) + " bytes"));
  }
  std::shared_ptr<Session> session;
  if (grpc::Status s = Lease(core, tenant, id, "CreateSnapshot", true, &session); !s.ok()) {
    return ReplyInline(call, tenant, "CreateSnapshot", id, s);
  }
  Status s = session->SaveSnapshot(request->label(), core->options().max_snapshots, response);
  session->Release();
  return ReplyInline(call, tenant, "CreateSnapshot", id, ToGrpcStatus(s));
}

void HandleListSnapshots(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                         const v1::ListSnapshotsRequest* request,
                         v1::ListSnapshotsResponse* response, UnaryCall* call) {
  const std::string& id = request->session_id();
  if (core->shutting_down()) return ReplyInline(call, tenant, "ListSnapshots", id, Unavailable());
  if (grpc::Status s = CheckSessionId(id); !s.ok()) {
    return ReplyInline(call, tenant, "ListSnapshots", id, s);
  }
  std::shared_ptr<Session> session;
  if (grpc::Status s = core->FindSession(id, tenant, &session); !s.ok()) {
    return ReplyInline(call, tenant, "ListSnapshots", id, s);
  }
  session->Touch();
  for (auto& s : session->ListSnapshots()) *response->add_snapshots() = std::move(s);
  response->set_max_snapshots(static_cast<uint32_t>(core->options().max_snapshots));
  return ReplyInline(call, tenant, "ListSnapshots", id, grpc::Status::OK);
}

void HandleRestoreSnapshot(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                           const v1::RestoreSnapshotRequest* request, v1::Session* response,
                           UnaryCall* call) {
  const std::string& id = request->session_id();
  std::shared_ptr<Session> session;
  if (grpc::Status s = Lease(core, tenant, id, "RestoreSnapshot", true, &session); !s.ok()) {
    return ReplyInline(call, tenant, "RestoreSnapshot", id, s);
  }
  Status s = session->RestoreSnapshot(request->snapshot_id());
  if (s.ok()) session->Recovered();
  session->Release();
  if (!s.ok()) return ReplyInline(call, tenant, "RestoreSnapshot", id, ToGrpcStatus(s));
  session->ToProto(response);
  spdlog::info("snapshot restored: tenant={} session={} snapshot={} step={}", tenant->name(), id,
               request->snapshot_id(), response->step());
  return ReplyInline(call, tenant, "RestoreSnapshot", id, grpc::Status::OK);
}

void HandleDeleteSnapshot(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                          const v1::DeleteSnapshotRequest* request,
                          v1::DeleteSnapshotResponse* /*response*/, UnaryCall* call) {
  const std::string& id = request->session_id();
  if (core->shutting_down()) {
    return ReplyInline(call, tenant, "DeleteSnapshot", id, Unavailable());
  }
  if (grpc::Status s = CheckSessionId(id); !s.ok()) {
    return ReplyInline(call, tenant, "DeleteSnapshot", id, s);
  }
  std::shared_ptr<Session> session;
  if (grpc::Status s = core->FindSession(id, tenant, &session); !s.ok()) {
    return ReplyInline(call, tenant, "DeleteSnapshot", id, s);
  }
  session->Touch();
  return ReplyInline(call, tenant, "DeleteSnapshot", id,
                     ToGrpcStatus(session->DeleteSnapshot(request->snapshot_id())));
}

void HandleExportSession(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                         const v1::ExportSessionRequest* request,
                         v1::ExportSessionResponse* response, UnaryCall* call) {
  const std::string& id = request->session_id();
  if (request->snapshot_id() != 0) {
    // A snapshot: no lease (it never changes), so also while a stream runs.
    if (core->shutting_down()) return ReplyInline(call, tenant, "ExportSession", id, Unavailable());
    if (grpc::Status s = CheckSessionId(id); !s.ok()) {
      return ReplyInline(call, tenant, "ExportSession", id, s);
    }
    std::shared_ptr<Session> found;
    if (grpc::Status s = core->FindSession(id, tenant, &found); !s.ok()) {
      return ReplyInline(call, tenant, "ExportSession", id, s);
    }
    found->Touch();
    v1::Snapshot meta;
    Status s = found->ExportSnapshot(request->snapshot_id(), response->mutable_data(), &meta);
    if (s.ok()) {
      response->set_step(meta.step());
      response->set_t(meta.t());
    }
    return ReplyInline(call, tenant, "ExportSession", id, ToGrpcStatus(s));
  }
  std::shared_ptr<Session> session;
  if (grpc::Status s = Lease(core, tenant, id, "ExportSession", true, &session); !s.ok()) {
    return ReplyInline(call, tenant, "ExportSession", id, s);
  }
  Simulation* sim = session->simulation();
  response->set_data(ExportSimulation(*sim, session->display_name()));
  response->set_step(sim->step());
  response->set_t(sim->time());
  session->Release();
  return ReplyInline(call, tenant, "ExportSession", id, grpc::Status::OK);
}

void HandleImportSession(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                         const v1::ImportSessionRequest* request, v1::Session* response,
                         UnaryCall* call) {
  if (core->shutting_down()) return ReplyInline(call, tenant, "ImportSession", "", Unavailable());
  if (request->display_name().size() > kMaxDisplayNameBytes) {
    return ReplyInline(
        call, tenant, "ImportSession", "",
        InvalidField("display_name", "at most " + std::to_string(kMaxDisplayNameBytes) + " bytes"));
  }
  if (Status s = core->sessions().Reserve(tenant); !s.ok()) {
    return ReplyInline(call, tenant, "ImportSession", "", ToGrpcStatus(s));
  }
  OnCompileLane(
      core, tenant, call, "ImportSession", *request,
      [core, tenant, context, request, response](std::string* session_id) {
        std::string name;
        auto imported =
            ImportSimulation(request->data(), CallCompileOptions(core, context), &name, "data");
        if (!imported.ok()) {
          core->sessions().Unreserve(tenant);
          return CompileFailed(core, context, imported.status(), "");
        }
        if (!request->display_name().empty()) name = request->display_name();
        // An exported name longer than the limit (a hand-made export) is cut
        // at a character boundary: a partial UTF-8 sequence would make every
        // later response that carries the name unparseable for clients.
        name = std::string(Utf8Prefix(name, kMaxDisplayNameBytes));
        std::shared_ptr<Session> session;
        if (Status s = core->sessions().AddWithinBudget(std::move(imported).value(), name, tenant,
                                                        "the imported session", &session);
            !s.ok()) {
          return ToGrpcStatus(s);
        }
        *session_id = session->id();
        session->ToProto(response);
        if (grpc::Status s = core->Share(session); !s.ok()) return s;
        spdlog::info("session imported: tenant={} session={} step={}", tenant->name(),
                     session->id(), response->step());
        return grpc::Status::OK;
      },
      [core, tenant] { core->sessions().Unreserve(tenant); });
}

void HandleUpdateSession(ServiceCore* core, Tenant* tenant, grpc::CallbackServerContext* context,
                         const v1::UpdateSessionRequest* request, v1::Session* response,
                         UnaryCall* call) {
  const std::string& id = request->session_id();
  std::shared_ptr<Session> session;
  if (grpc::Status s = Lease(core, tenant, id, "UpdateSession", true, &session); !s.ok()) {
    return ReplyInline(call, tenant, "UpdateSession", id, s);
  }
  Simulation* old = session->simulation();
  v1::State current;
  old->GetState(&current);
  auto spec = std::make_shared<v1::SimulationSpec>(old->spec());
  std::vector<FieldViolation> bad;
  const bool recompile = MergeUpdate(*request, current, spec.get(), &bad);
  if (!bad.empty()) {
    session->Release();
    return ReplyInline(call, tenant, "UpdateSession", id, Violations(bad));
  }
  // The update builds a new simulation and swaps it in only when every
  // change was accepted: a refused update leaves the session as it was.
  auto apply = [core, tenant, context, request, response, session, spec,
                recompile](std::string* session_id) -> grpc::Status {
    *session_id = session->id();
    Simulation* old = session->simulation();
    std::vector<v1::Diagnostic> warnings;
    std::unique_ptr<Simulation> next;
    if (recompile) {
      auto created = Simulation::Create(*spec, &warnings, CallCompileOptions(core, context));
      if (!created.ok()) {
        session->Release();
        if (created.status().code() == StatusCode::kInvalidArgument) {
          return ToGrpcStatus(WithUpdatePaths(created.status(), *spec));
        }
        return CompileFailed(core, context, created.status());
      }
      next = std::move(created).value();
    } else {
      next = Simulation::FromModel(*spec, old->shared_model());
    }
    v1::SimulationState carried;
    old->SaveState(&carried);
    // Named input defaults become the inputs' current values too.
    for (int k = 0; k < spec->system().inputs_size(); ++k) {
      if (request->input_defaults().contains(spec->system().inputs(k).name())) {
        carried.set_inputs(k, spec->system().inputs(k).default_value());
      }
    }
    Status s = next->RestoreState(carried, "state");
    if (s.ok() && request->has_state()) s = next->SetState(request->state(), "state");
    grpc::Status g = s.ok() ? ApplyInputs(next.get(), request->inputs()) : ToGrpcStatus(s);
    if (g.ok() && (request->has_state() || recompile)) {
      // The new description must evaluate at the state it continues from.
      v1::Frame frame;
      if (Status e = next->Evaluate(&frame); !e.ok()) {
        g = ToGrpcStatus(InvalidArgument(
            "UpdateSession: the updated session cannot be evaluated at its state: " + e.message(),
            {{request->has_state() ? "state" : "spec", e.message()}}));
      }
    }
    if (!g.ok()) {
      session->Release();
      return g;
    }
    if (Status s = session->ReplaceSimulation(std::move(next)); !s.ok()) {
      session->Release();
      return ToGrpcStatus(s);
    }
    if (request->has_state()) session->Recovered();
    session->Release();
    session->ToProto(response);
    for (auto& w : warnings) {
      w.set_field(UpdatePath(w.field(), *spec));
      *response->add_warnings() = std::move(w);
    }
    spdlog::info("session updated: tenant={} session={} recompiled={}", tenant->name(),
                 session->id(), recompile);
    return grpc::Status::OK;
  };
  if (!recompile) {
    std::string unused;
    return ReplyInline(call, tenant, "UpdateSession", id, apply(&unused));
  }
  OnCompileLane(core, tenant, call, "UpdateSession", *request, apply,
                [session] { session->Release(); });
}

}  // namespace tether::service
