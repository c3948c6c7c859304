// EnsembleRunner (engine/ensemble.h): the expansion of an EnsembleSpec into
// instances, and each instance's run on a Simulation of its own.
// Compiled with -ffp-contract=off (server/CMakeLists.txt): the grid values
// and random draws are the same bits on every platform.
#include "engine/ensemble.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

#include "engine/integration_methods.h"
#include "engine/internal/model/model.h"
#include "engine/internal/simulation/ensemble_lanes.h"
#include "engine/internal/simulation/ensemble_random.h"
#include "engine/spec_json.h"

namespace tether {

namespace {

std::string Num(double x) { return FormatNumber(x); }

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgument(field + ": " + what, {{field, what}});
}

// What an EnsembleValue's name sets.
struct Target {
  enum Kind { kParameter, kPosition, kVelocity, kInput } kind;
  int index;  // parameter, coordinate or input index
};

// Resolves `name` against the description; false when it names nothing.
bool Resolve(const v1::SimulationSpec& spec, const std::string& name, Target* target) {
  const auto& sys = spec.system();
  for (int i = 0; i < sys.parameters_size(); ++i) {
    if (sys.parameters(i).name() == name) {
      *target = {Target::kParameter, i};
      return true;
    }
  }
  for (int i = 0; i < sys.coordinates_size(); ++i) {
    if (sys.coordinates(i) == name) {
      *target = {Target::kPosition, i};
      return true;
    }
    if ("der(" + sys.coordinates(i) + ")" == name) {
      *target = {Target::kVelocity, i};
      return true;
    }
  }
  for (int i = 0; i < sys.inputs_size(); ++i) {
    if (sys.inputs(i).name() == name) {
      *target = {Target::kInput, i};
      return true;
    }
  }
  return false;
}

std::string NameProblem(const v1::SimulationSpec& spec, const std::string& name) {
  std::string valid;
  auto add = [&valid](const std::string& n) {
    if (valid.size() > 400) return;
    if (!valid.empty()) valid += ", ";
    valid += n;
  };
  for (const auto& p : spec.system().parameters()) add(p.name());
  for (const auto& c : spec.system().coordinates()) add(c);
  for (const auto& c : spec.system().coordinates()) add("der(" + c + ")");
  for (const auto& in : spec.system().inputs()) add(in.name());
  return "no parameter, coordinate, der(coordinate) or input named " + QuoteForMessage(name) +
         " (expected one of: " + valid + ")";
}

// a * b, false on overflow past `limit`.
bool MultiplyWithin(uint64_t a, uint64_t b, uint64_t limit, uint64_t* out) {
  if (a != 0 && b > limit / a) return false;
  *out = a * b;
  return *out <= limit;
}

// The k-th of `count` grid values from start to stop.
double GridValue(const v1::EnsembleSweep& s, uint64_t k) {
  if (s.count() <= 1) return s.start();
  if (k + 1 == s.count()) return s.stop();
  return s.start() + static_cast<double>(k) * ((s.stop() - s.start()) / (s.count() - 1));
}

bool IsFinite(double x) { return std::isfinite(x); }

class NullSink final : public FrameSink {
 public:
  void Add(const FrameView&) override {}
};

// The output grid's frames into the result.
class ResultSink final : public FrameSink {
 public:
  explicit ResultSink(v1::EnsembleInstanceResult* result) : result_(result) {}
  void Add(const FrameView& frame) override { FrameToProto(frame, result_->add_frames()); }

 private:
  v1::EnsembleInstanceResult* result_;
};

}  // namespace

// ---- EnsembleInstanceRun ---------------------------------------------------

EnsembleInstanceRun::~EnsembleInstanceRun() = default;

uint64_t EnsembleInstanceRun::steps() const {
  // Once finished the simulation is gone and the result holds the count.
  return sim_ ? sim_->step() : result_.steps();
}

void EnsembleInstanceRun::SetInterrupt(std::function<bool()> interrupted) {
  if (sim_) sim_->SetInterrupt(std::move(interrupted));
}

bool EnsembleInstanceRun::Advance(uint64_t max_steps) {
  if (done_) return true;
  NullSink discard;
  ResultSink keep(&result_);
  Status s = sim_->Advance(max_steps, frames_ ? static_cast<FrameSink*>(&keep) : &discard);
  if (s.code() == StatusCode::kCancelled) {
    interrupted_ = true;
    return false;
  }
  if (!s.ok()) {
    Fail(s);
    return true;
  }
  if (sim_->run_done()) Finish();
  return done_;
}

void EnsembleInstanceRun::Fail(const Status& status) {
  result_.set_ok(false);
  result_.set_error(std::string(Utf8Prefix(status.message(), kMaxEnsembleErrorBytes)));
  if (sim_) {
    result_.set_failed_step(sim_->step());
    result_.set_failed_time(sim_->time());
  }
  Finish();
  result_.set_ok(false);
}

void EnsembleInstanceRun::Finish() {
  done_ = true;
  if (result_.error().empty()) result_.set_ok(true);
  if (!sim_) return;
  sim_->GetState(result_.mutable_final_state());
  result_.set_steps(sim_->step());
  if (certificate_) {
    v1::Certificate c;
    sim_->GetCertificate(&c);
    SetCertificateSummary(c);
  }
  sim_.reset();  // the memory goes with the run
}

void EnsembleInstanceRun::SetCertificateSummary(const v1::Certificate& c) {
  auto* summary = result_.mutable_certificate();
  summary->set_initial_consistent(c.initial_consistent());
  summary->set_feedback_verified(c.feedback_verified());
  summary->set_step_stable(c.step_stable());
  summary->set_max_position_residual(c.max_position_residual());
  summary->set_max_velocity_residual(c.max_velocity_residual());
  summary->set_position_bound(c.position_bound());
  summary->set_steps(c.steps());
}

void EnsembleInstanceRun::FinishFromLanes(double t, const double* q, const double* v,
                                          uint64_t steps, bool fast_functions) {
  done_ = true;
  result_.set_ok(true);
  result_.set_fast_functions(fast_functions);
  v1::State* state = result_.mutable_final_state();
  state->Clear();
  state->set_t(t);
  const int nq = sim_->model().nq;
  for (int i = 0; i < nq; ++i) state->add_q(q[i]);
  for (int i = 0; i < nq; ++i) state->add_v(v[i]);
  result_.set_steps(steps);
  // The lane path runs only without a recorder: the summary of no
  // certificate, as GetCertificate gives then.
  if (certificate_) SetCertificateSummary(v1::Certificate());
  sim_.reset();
}

// ---- EnsembleRunner --------------------------------------------------------

EnsembleRunner::~EnsembleRunner() = default;

StatusOr<std::unique_ptr<EnsembleRunner>> EnsembleRunner::Create(const v1::SimulationSpec& spec,
                                                                 const v1::EnsembleSpec& ensemble,
                                                                 const EnsembleOptions& options,
                                                                 const EnsembleLimits& limits,
                                                                 const CompileOptions& compile,
                                                                 std::string_view field_view) {
  const std::string field(field_view);
  auto template_sim = Simulation::Create(spec, nullptr, compile);
  if (!template_sim.ok()) return template_sim.status();

  std::unique_ptr<EnsembleRunner> r(new EnsembleRunner());
  r->spec_ = spec;
  r->spec_lean_ = spec;
  r->spec_lean_.clear_system();
  r->ensemble_ = ensemble;
  r->options_ = options;
  r->compile_ = compile;
  r->model_ = (*template_sim)->shared_model();

  auto check_name = [&](const std::string& path, const std::string& name) -> Status {
    Target t;
    if (!Resolve(spec, name, &t)) return Bad(path, NameProblem(spec, name));
    if (t.kind == Target::kParameter) r->varies_parameters_ = true;
    return Status::Ok();
  };
  auto check_value = [](const std::string& path, double x) -> Status {
    if (!IsFinite(x)) return Bad(path, "expected a finite number, found " + Num(x));
    return Status::Ok();
  };

  // A name is varied once per instance: by its explicit values, a sweep or
  // a random draw, never two of them (the last would win while both were
  // reported). First the sweeps' and draws' names, then each instance's.
  std::map<std::string, std::string, std::less<>> varied;  // name -> its field
  auto once = [&](const std::map<std::string, std::string, std::less<>>& seen,
                  const std::string& path, const std::string& name) -> Status {
    if (auto it = seen.find(name); it != seen.end()) {
      return Bad(path, QuoteForMessage(name) + " is already varied by " + it->second +
                           "; expected each name once per instance");
    }
    return Status::Ok();
  };
  for (int i = 0; i < ensemble.sweeps_size(); ++i) {
    const std::string path = field + ".sweeps[" + std::to_string(i) + "].name";
    if (Status s = once(varied, path, ensemble.sweeps(i).name()); !s.ok()) return s;
    varied.emplace(ensemble.sweeps(i).name(), path);
  }
  for (int i = 0; i < ensemble.random_size(); ++i) {
    const std::string path = field + ".random[" + std::to_string(i) + "].name";
    if (Status s = once(varied, path, ensemble.random(i).name()); !s.ok()) return s;
    varied.emplace(ensemble.random(i).name(), path);
  }
  // Each instance's own names beside the shared ones (not a copy of them
  // per instance: 100 000 instances beside 4000 sweeps): name -> its value's
  // index.
  std::map<std::string_view, int, std::less<>> own;
  for (int i = 0; i < ensemble.instances_size(); ++i) {
    own.clear();
    const auto& inst = ensemble.instances(i);
    const auto value_field = [&](int j) {
      return field + ".instances[" + std::to_string(i) + "].values[" + std::to_string(j) + "].name";
    };
    for (int j = 0; j < inst.values_size(); ++j) {
      const std::string& name = inst.values(j).name();
      if (varied.count(name) != 0) return once(varied, value_field(j), name);
      if (auto [it, added] = own.emplace(name, j); !added) {
        return Bad(value_field(j), QuoteForMessage(name) + " is already varied by " +
                                       value_field(it->second) +
                                       "; expected each name once per instance");
      }
    }
  }

  const uint64_t max = limits.max_instances;
  uint64_t n = std::max<uint64_t>(1, static_cast<uint64_t>(ensemble.instances_size()));
  if (n > max) {
    return Bad(field + ".instances", "expected at most " + std::to_string(max) +
                                         " instances, found " + std::to_string(n));
  }
  for (int i = 0; i < ensemble.instances_size(); ++i) {
    const auto& inst = ensemble.instances(i);
    for (int j = 0; j < inst.values_size(); ++j) {
      const std::string path =
          field + ".instances[" + std::to_string(i) + "].values[" + std::to_string(j) + "]";
      if (Status s = check_name(path + ".name", inst.values(j).name()); !s.ok()) return s;
      if (Status s = check_value(path + ".value", inst.values(j).value()); !s.ok()) return s;
    }
  }
  for (int i = 0; i < ensemble.sweeps_size(); ++i) {
    const auto& sw = ensemble.sweeps(i);
    const std::string path = field + ".sweeps[" + std::to_string(i) + "]";
    if (Status s = check_name(path + ".name", sw.name()); !s.ok()) return s;
    if (Status s = check_value(path + ".start", sw.start()); !s.ok()) return s;
    if (Status s = check_value(path + ".stop", sw.stop()); !s.ok()) return s;
    if (sw.count() == 0) return Bad(path + ".count", "expected >= 1, found 0");
    // count values from start to stop, the last exactly stop: one value
    // cannot be both unless they are equal.
    if (sw.count() == 1 && sw.stop() != sw.start()) {
      return Bad(path + ".count", "a sweep of one value from start = " + Num(sw.start()) +
                                      " to stop = " + Num(sw.stop()) +
                                      " cannot end at stop; expected count >= 2, or stop = start");
    }
    // GridValue steps by (stop - start) / (count - 1): a span beyond the
    // doubles gave NaN and inf values between finite ends.
    if (!std::isfinite(sw.stop() - sw.start())) {
      return Bad(path + ".stop", "expected stop - start to be finite, found start = " +
                                     Num(sw.start()) + ", stop = " + Num(sw.stop()));
    }
    if (!MultiplyWithin(n, sw.count(), max, &n)) {
      return Bad(path + ".count",
                 "the instances' count (explicit instances x the sweeps' counts up to this one) "
                 "exceeds the limit of " +
                     std::to_string(max) + " instances");
    }
  }
  for (int i = 0; i < ensemble.random_size(); ++i) {
    const auto& d = ensemble.random(i);
    const std::string path = field + ".random[" + std::to_string(i) + "]";
    if (Status s = check_name(path + ".name", d.name()); !s.ok()) return s;
    if (Status s = check_value(path + ".a", d.a()); !s.ok()) return s;
    if (Status s = check_value(path + ".b", d.b()); !s.ok()) return s;
    switch (d.kind()) {
      case v1::EnsembleDistribution::UNIFORM:
        if (!(d.b() > d.a())) {
          return Bad(path + ".b",
                     "a uniform draw needs b > a, found a = " + Num(d.a()) + ", b = " + Num(d.b()));
        }
        // A draw is a + (b - a) u: a span beyond the doubles drew inf.
        if (!std::isfinite(d.b() - d.a())) {
          return Bad(path + ".b", "expected b - a to be finite, found a = " + Num(d.a()) +
                                      ", b = " + Num(d.b()));
        }
        break;
      case v1::EnsembleDistribution::NORMAL:
        if (d.b() < 0) {
          return Bad(path + ".b",
                     "the standard deviation of a normal draw must be >= 0, found " + Num(d.b()));
        }
        // A draw is a + b z: 64 standard deviations from a must be finite.
        if (!std::isfinite(std::fabs(d.a()) + 64 * d.b())) {
          return Bad(path + ".b",
                     "expected |a| + 64 b to be finite (the draws' range), found a = " +
                         Num(d.a()) + ", b = " + Num(d.b()));
        }
        break;
      default:
        return Bad(path + ".kind", "expected UNIFORM or NORMAL, found " +
                                       std::to_string(static_cast<int>(d.kind())));
    }
  }
  if (ensemble.random_size() > 0 && ensemble.random_count() == 0) {
    return Bad(field + ".random_count", "expected >= 1 with random draws, found 0");
  }
  if (ensemble.random_size() == 0 && ensemble.random_count() != 0) {
    return Bad(field + ".random_count",
               "expected 0 without random draws, found " + std::to_string(ensemble.random_count()));
  }
  // Each result repeats its instance's values: bounded, as every list a
  // request gives is.
  int most_explicit = 0;
  for (const auto& inst : ensemble.instances())
    most_explicit = std::max(most_explicit, inst.values_size());
  const int64_t values = int64_t{most_explicit} + ensemble.sweeps_size() + ensemble.random_size();
  if (values > kMaxEnsembleValuesPerInstance) {
    return Bad(field, "expected at most " + std::to_string(kMaxEnsembleValuesPerInstance) +
                          " values per instance (an instance's values, the sweeps and the random "
                          "draws), found " +
                          std::to_string(values));
  }
  if (ensemble.random_count() > 0 && !MultiplyWithin(n, ensemble.random_count(), max, &n)) {
    return Bad(field + ".random_count",
               "the instances' count (explicit instances x the sweeps' counts x random_count) "
               "exceeds the limit of " +
                   std::to_string(max) + " instances");
  }
  r->size_ = n;

  // The end time and the steps an instance takes.
  const double t0 = spec.initial().t();
  if (!IsFinite(options.until_time) || !(options.until_time > t0)) {
    return Bad("until_time", "expected a finite time after the initial time " + Num(t0) +
                                 ", found " + Num(options.until_time));
  }
  if (options.output_interval) {
    const std::string m = OutputIntervalProblem(t0, options.until_time, *options.output_interval);
    if (!m.empty()) return Bad("output_interval", m);
    const double frames = (options.until_time - t0) / *options.output_interval;
    if (!(frames < static_cast<double>(EnsembleOptions::kMaxFramesPerInstance))) {
      return Bad("output_interval", "expected at most " +
                                        std::to_string(EnsembleOptions::kMaxFramesPerInstance) +
                                        " frames per instance, found about " + Num(frames) +
                                        " (a larger output_interval)");
    }
  }
  const auto& integ = spec.integrator();
  double h = integ.step_size();
  bool adaptive = false;
  for (const auto& m : IntegrationMethods()) {
    if (m.method == integ.method() && m.adaptive) {
      adaptive = true;
      if (integ.max_step() > 0) h = integ.max_step();
    }
  }
  // An end a fixed step cannot reach is bad input for the whole ensemble,
  // as for a run (BeginRun's check), not a failure of every instance (nor
  // an estimate of 2^64 steps against the limit below).
  if (!adaptive && h > 0) {
    const std::string m = FixedStepUntilProblem(t0, options.until_time, h, 0);
    if (!m.empty()) return Bad("until_time", m);
  }
  const double steps = h > 0 ? std::ceil((options.until_time - t0) / h) : 1;
  r->steps_per_instance_ =
      steps >= 0x1p63 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(steps);
  if (limits.max_instance_steps > 0) {
    uint64_t total = 0;
    if (!MultiplyWithin(n, std::max<uint64_t>(r->steps_per_instance_, 1), limits.max_instance_steps,
                        &total)) {
      return ResourceExhausted("the ensemble needs " + std::to_string(n) + " instances x about " +
                                   std::to_string(r->steps_per_instance_) +
                                   " steps, over the limit of " +
                                   std::to_string(limits.max_instance_steps) + " instance steps",
                               ErrorSubject{"", "ensemble",
                                            "at most " + std::to_string(limits.max_instance_steps) +
                                                " instance steps per ensemble"});
    }
  }
  // The compilations: how many parameter sets the values make.
  if (r->varies_parameters_) {
    auto names_parameter = [&](const std::string& name) {
      Target t;
      return Resolve(spec, name, &t) && t.kind == Target::kParameter;
    };
    uint64_t sets = 1;
    bool per_instance = false;
    bool explicit_sets = false;
    for (const auto& inst : ensemble.instances()) {
      for (const auto& v : inst.values())
        explicit_sets = explicit_sets || names_parameter(v.name());
    }
    if (explicit_sets) sets = static_cast<uint64_t>(ensemble.instances_size());
    for (const auto& sw : ensemble.sweeps()) {
      if (names_parameter(sw.name())) sets *= sw.count();  // within n: checked above
    }
    for (const auto& d : ensemble.random())
      per_instance = per_instance || names_parameter(d.name());
    if (per_instance || sets > options.model_cache_entries) sets = n;
    r->max_compilations_ = std::min(sets, n);
    if (limits.max_compilations > 0 && r->max_compilations_ > limits.max_compilations) {
      return ResourceExhausted(
          "the ensemble's parameter values may need " + std::to_string(r->max_compilations_) +
              " compilations (each parameter set is compiled; beyond the model cache's " +
              std::to_string(options.model_cache_entries) +
              " sets, or with random parameters, one per instance), over the limit of " +
              std::to_string(limits.max_compilations) +
              "; expected fewer parameter sets, or the parameters' sweeps first (slowest)",
          ErrorSubject{
              "", "ensemble",
              "at most " + std::to_string(limits.max_compilations) + " compilations per ensemble"});
    }
  }
  // The lane path: a run that nothing but its final state reads (no
  // recorder, no frames), by RK4, of a size the lanes are built for.
  r->lanes_ = options.lanes && !options.output_interval &&
              (!options.certificate || spec.certificate().disabled()) &&
              spec.integrator().method() == v1::IntegratorSpec::RK4 &&
              internal::LanesSupport((*template_sim)->model());
  r->fast_functions_ = r->lanes_ && options.fast_functions;
  if (r->lanes_) r->lane_programs_ = std::make_unique<internal::LanePrograms>();
  const Simulation::MemoryUse use = (*template_sim)->memory_use();
  r->instance_bytes_ = use.own;
  r->model_bytes_ = use.model;
  if (Status s = r->BoundResults(field, limits); !s.ok()) return s;
  return r;
}

int EnsembleRunner::lane_programs() const { return lane_programs_ ? lane_programs_->made() : 0; }

namespace {

// The largest frame `m` makes, as the engine makes it (FrameToProto on a
// view of the model's sizes, every scalar nonzero and the step the longest
// varint): packed doubles are fixed-width, so its serialized size bounds
// every frame's, and its repeated fields are filled as every frame's are,
// so its heap bytes bound theirs.
v1::Frame LargestFrame(const Model& m) {
  const std::vector<double> ones(static_cast<size_t>(std::max({m.nq, m.nc, m.ny, 1})), 1.0);
  auto first = [&](int k) { return std::span<const double>(ones.data(), static_cast<size_t>(k)); };
  FrameView view;
  view.step = std::numeric_limits<uint64_t>::max();
  view.t = 1;
  view.q = view.v = view.a = first(m.nq);
  view.lambda = view.position = view.velocity = first(m.nc);
  view.dynamics = view.constraint = 1;
  view.outputs = first(m.ny);
  v1::Frame frame;
  FrameToProto(view, &frame);
  return frame;
}

}  // namespace

Status EnsembleRunner::BoundResults(const std::string& field, const EnsembleLimits& limits) {
  // A result without frames as large as any instance's: the explicit
  // instance whose values take the most bytes, the sweeps and draws, every
  // number nonzero and every counter the longest varint, the longest
  // error, the final state and the certificate summary.
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  v1::EnsembleInstanceResult probe;
  probe.set_index(kMax);
  probe.set_seed(kMax);
  int widest = -1;
  int64_t widest_bytes = -1;
  for (int i = 0; i < ensemble_.instances_size(); ++i) {
    int64_t bytes = 0;
    for (const auto& v : ensemble_.instances(i).values())
      bytes += 16 + static_cast<int64_t>(v.name().size());
    if (bytes > widest_bytes) {
      widest_bytes = bytes;
      widest = i;
    }
  }
  auto add_value = [&](const std::string& name) {
    auto* v = probe.add_values();
    v->set_name(name);
    v->set_value(1);
  };
  if (widest >= 0) {
    for (const auto& v : ensemble_.instances(widest).values()) add_value(v.name());
  }
  for (const auto& s : ensemble_.sweeps()) add_value(s.name());
  for (const auto& d : ensemble_.random()) add_value(d.name());
  probe.set_ok(true);
  probe.set_error(std::string(kMaxEnsembleErrorBytes, 'x'));
  probe.set_failed_step(kMax);
  probe.set_failed_time(1);
  probe.set_steps(kMax);
  auto* state = probe.mutable_final_state();
  state->set_t(1);
  for (int k = 0; k < model_->nq; ++k) {
    state->add_q(1);
    state->add_v(1);
  }
  auto* c = probe.mutable_certificate();
  c->set_initial_consistent(true);
  c->set_feedback_verified(true);
  c->set_step_stable(true);
  c->set_max_position_residual(1);
  c->set_max_velocity_residual(1);
  c->set_position_bound(1);
  c->set_steps(kMax);
  probe.set_fast_functions(true);
  int64_t wire = static_cast<int64_t>(probe.ByteSizeLong());
  int64_t heap = MessageHeapBytes(probe);
  uint64_t frames = 0;
  if (options_.output_interval) {
    // The grid's times t0 + k dt up to the end and the last step's frame
    // (with a margin of one for the rounding of (until - t0) / dt).
    // Create checked that this is below kMaxFramesPerInstance + 3.
    frames = static_cast<uint64_t>(std::floor((options_.until_time - spec_.initial().t()) /
                                              *options_.output_interval)) +
             3;
    const v1::Frame frame = LargestFrame(*model_);
    // Each frame in `frames`: its tag and length (at most 5 bytes), and in
    // the heap its message and its slot in the repeated field (whose
    // capacity doubles: at most two slots a frame).
    wire += static_cast<int64_t>(frames) * (static_cast<int64_t>(frame.ByteSizeLong()) + 6);
    heap += static_cast<int64_t>(frames) *
            (MessageHeapBytes(frame) + 2 * static_cast<int64_t>(sizeof(void*)));
  }
  result_wire_bound_ = wire;
  result_heap_bound_ = heap;
  if (limits.max_result_bytes > 0 && static_cast<uint64_t>(wire) > limits.max_result_bytes) {
    const std::string what = "an instance's result may take " + std::to_string(wire) + " bytes" +
                             (frames ? " (" + std::to_string(frames) + " frames)" : std::string()) +
                             ", over the limit of " + std::to_string(limits.max_result_bytes) +
                             " bytes a result";
    if (frames) return Bad("output_interval", what + "; expected a larger output_interval");
    return Bad(field, what + "; expected fewer values per instance");
  }
  return Status::Ok();
}

std::vector<v1::EnsembleValue> EnsembleRunner::Values(uint64_t index) const {
  std::vector<v1::EnsembleValue> values;
  // Mixed radix, the random draw fastest, the explicit instance slowest.
  const uint64_t draws = std::max<uint64_t>(1, ensemble_.random_count());
  uint64_t rest = index / draws;
  std::vector<uint64_t> grid(static_cast<size_t>(ensemble_.sweeps_size()));
  for (int i = ensemble_.sweeps_size() - 1; i >= 0; --i) {
    const uint64_t c = ensemble_.sweeps(i).count();
    grid[static_cast<size_t>(i)] = rest % c;
    rest /= c;
  }
  if (ensemble_.instances_size() > 0) {
    for (const auto& v : ensemble_.instances(static_cast<int>(rest)).values()) values.push_back(v);
  }
  for (int i = 0; i < ensemble_.sweeps_size(); ++i) {
    v1::EnsembleValue v;
    v.set_name(ensemble_.sweeps(i).name());
    v.set_value(GridValue(ensemble_.sweeps(i), grid[static_cast<size_t>(i)]));
    values.push_back(std::move(v));
  }
  // Each draw's stream is keyed by the instance's index (ensemble_random.h).
  for (int i = 0; i < ensemble_.random_size(); ++i) {
    const auto& d = ensemble_.random(i);
    ensemble_random::SplitMix64 g(ensemble_.seed(), index, static_cast<uint64_t>(i));
    v1::EnsembleValue v;
    v.set_name(d.name());
    if (d.kind() == v1::EnsembleDistribution::UNIFORM) {
      v.set_value(d.a() + (d.b() - d.a()) * g.Uniform());
    } else {
      v.set_value(d.a() + d.b() * ensemble_random::StandardNormal(&g));
    }
    values.push_back(std::move(v));
  }
  return values;
}

v1::SimulationSpec EnsembleRunner::InstanceSpec(uint64_t index,
                                                std::vector<v1::EnsembleValue>* inputs) const {
  return MakeInstanceSpec(index, inputs, spec_);
}

v1::SimulationSpec EnsembleRunner::MakeInstanceSpec(uint64_t index,
                                                    std::vector<v1::EnsembleValue>* inputs,
                                                    const v1::SimulationSpec& base) const {
  v1::SimulationSpec spec = base;
  auto* initial = spec.mutable_initial();
  for (const auto& v : Values(index)) {
    Target t;
    if (!Resolve(spec_, v.name(), &t)) continue;  // checked in Create
    switch (t.kind) {
      case Target::kParameter:  // only with parameters varied: base is spec_
        spec.mutable_system()->mutable_parameters(t.index)->set_value(v.value());
        break;
      case Target::kPosition: initial->set_q(t.index, v.value()); break;
      case Target::kVelocity:
        while (initial->v_size() < spec_.system().coordinates_size()) initial->add_v(0);
        initial->set_v(t.index, v.value());
        break;
      case Target::kInput:
        if (inputs) inputs->push_back(v);
        break;
    }
  }
  return spec;
}

StatusOr<std::shared_ptr<const Model>> EnsembleRunner::ModelFor(
    const v1::SimulationSpec& spec) const {
  if (!varies_parameters_) return model_;
  std::vector<double> values;
  for (const auto& p : spec.system().parameters()) values.push_back(p.value());
  std::vector<double> base;
  for (const auto& p : spec_.system().parameters()) base.push_back(p.value());
  // Compared as bits: -0.0 and 0.0 compile to different constants.
  auto same = [](const std::vector<double>& a, const std::vector<double>& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(),
                      [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; });
  };
  if (same(values, base)) return model_;
  auto find = [&]() -> std::shared_ptr<const Model> {
    for (auto it = cache_.begin(); it != cache_.end(); ++it) {
      if (!same(values, it->parameters)) continue;
      cache_.splice(cache_.begin(), cache_, it);
      return cache_.front().model;
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (auto model = find()) return model;
  }
  // Compiled without the lock (two threads may compile the same set at
  // once; the first cached is kept, the models being identical), behind
  // the caller's gate when there is one.
  std::unique_lock<std::mutex> gate;
  if (options_.compile_gate) gate = std::unique_lock<std::mutex>(*options_.compile_gate);
  auto sim = Simulation::Create(spec, nullptr, compile_);
  if (gate) gate.unlock();
  if (!sim.ok()) return sim.status();
  std::lock_guard<std::mutex> lock(cache_mu_);
  ++compilations_;
  if (auto model = find()) return model;
  if (options_.model_cache_entries == 0) return (*sim)->shared_model();
  cache_.push_front({std::move(values), (*sim)->shared_model()});
  while (cache_.size() > options_.model_cache_entries) cache_.pop_back();
  return cache_.front().model;
}

uint64_t EnsembleRunner::compilations() const {
  std::lock_guard<std::mutex> lock(cache_mu_);
  return compilations_;
}

std::unique_ptr<EnsembleInstanceRun> EnsembleRunner::Start(uint64_t index) const {
  std::unique_ptr<EnsembleInstanceRun> run(new EnsembleInstanceRun());
  run->certificate_ = options_.certificate;
  run->frames_ = options_.output_interval.has_value();
  auto& result = run->result_;
  result.set_index(index);
  result.set_seed(ensemble_.seed());
  for (auto& v : Values(index)) *result.add_values() = std::move(v);
  std::vector<v1::EnsembleValue> inputs;
  // With no parameter varied the instance runs the template's model, and
  // its simulation gets the description without the system (spec_lean_):
  // copying and destroying the system for every instance took 4% of an
  // ensemble of double pendulums of 1000 steps (docs/benchmarks.md).
  v1::SimulationSpec spec =
      MakeInstanceSpec(index, &inputs, varies_parameters_ ? spec_ : spec_lean_);
  auto model = ModelFor(spec);
  if (!model.ok()) {
    run->Fail(model.status());
    *result.mutable_final_state() = spec.initial();
    return run;
  }
  // What Simulation::Create does once compiled, so the bits are a plain
  // run's.
  run->sim_ = Simulation::FromModel(std::move(spec), *model);
  if (!run->sim_) {
    run->Fail(Internal("the implicit method's Newton matrix was not built"));
    return run;
  }
  for (const auto& in : inputs) {
    if (Status s = run->sim_->SetInput(in.name(), in.value()); !s.ok()) {
      run->Fail(s);
      return run;
    }
  }
  RunOptions ro;
  ro.until_time = options_.until_time;
  if (options_.output_interval) {
    ro.every = 0;  // the grid's frames and the last
    ro.output_interval = options_.output_interval;
    ro.emit_start = true;
  } else {
    ro.every = std::numeric_limits<uint64_t>::max();  // the last frame only, discarded
    ro.emit_start = false;
  }
  ro.certificate = options_.certificate;
  if (Status s = run->sim_->BeginRun(ro); !s.ok()) run->Fail(s);
  return run;
}

v1::EnsembleInstanceResult EnsembleRunner::Run(uint64_t index) const {
  auto run = Start(index);
  while (!run->Advance(std::numeric_limits<uint64_t>::max())) {
  }
  return run->TakeResult();
}

std::unique_ptr<EnsembleGroupRun> EnsembleRunner::StartGroup(uint64_t first, int count) const {
  static_assert(kLaneGroupSize == internal::kLaneWidth);
  std::unique_ptr<EnsembleGroupRun> g(new EnsembleGroupRun());
  g->runner_ = this;
  g->first_ = first;
  g->count_ = std::clamp(count, 0, kLaneGroupSize);
  if (lanes_) {
    // Started together so the lanes can take them; without lanes each
    // starts when it runs alone (Advance).
    for (int k = 0; k < g->count_; ++k) {
      g->runs_[k] = Start(first + static_cast<uint64_t>(k));
      g->lane_of_[k] = g->runs_[k]->done() ? -2 : -1;
    }
  }
  g->forming_ = lanes_;
  g->Next();
  return g;
}

void EnsembleRunner::RunGroup(uint64_t first, int count,
                              v1::EnsembleInstanceResult* results) const {
  std::unique_ptr<EnsembleGroupRun> g = StartGroup(first, count);
  while (!g->Advance(std::numeric_limits<uint64_t>::max())) {
  }
  g->TakeResults(results);
}

// ---- EnsembleGroupRun ------------------------------------------------------

EnsembleGroupRun::EnsembleGroupRun() { std::fill(lane_of_, lane_of_ + kWidth, -2); }

EnsembleGroupRun::~EnsembleGroupRun() = default;

uint64_t EnsembleGroupRun::step_cost() const { return group_ ? static_cast<uint64_t>(kWidth) : 1; }

void EnsembleGroupRun::SetInterrupt(std::function<bool()> interrupted) {
  interrupt_ = std::move(interrupted);
  for (auto& run : runs_) {
    if (run) run->SetInterrupt(interrupt_);
  }
}

bool EnsembleGroupRun::FormLaneGroup() {
  // The waiting instances on one model (the first's; with fast functions,
  // then those on each other model in a group of their own, so that every
  // instance is computed by the same functions whatever its neighbours).
  // With exact functions a lone instance runs on the scalar engine (the
  // same bits, cheaper), and only one lane group is formed.
  const bool fast = runner_->fast_functions_;
  const int min_lanes = fast ? 1 : 2;
  auto group = std::make_unique<internal::LaneGroup>();
  group->fast_functions = fast;
  group->native_tape = runner_->options_.lane_native_tape;
  int lanes = 0;
  for (int k = 0; k < count_; ++k) {
    if (lane_of_[k] != -1) continue;
    const Model* model = &runs_[k]->sim_->model();
    if (group->model == nullptr) group->model = model;
    if (model != group->model) continue;
    in_group_[lanes++] = k;
  }
  forming_ = fast && lanes > 0;
  if (lanes < min_lanes) return false;
  const Model& m = *group->model;
  if (&m == runner_->model_.get()) {
    // The template's groups: every instance, at most (one a group of
    // eight; those with parameters of their own are not among them).
    group->programs = runner_->lane_programs_.get();
    group->shared_steps = static_cast<double>((runner_->size_ + kWidth - 1) / kWidth) *
                          static_cast<double>(runner_->steps_per_instance_);
  }
  const size_t nq = static_cast<size_t>(m.nq), nu = static_cast<size_t>(m.nu);
  group->q.assign(kWidth * nq, 0.0);
  group->v.assign(kWidth * nq, 0.0);
  group->u.assign(kWidth * nu, 0.0);
  group->h = runner_->spec_.integrator().step_size();
  group->until = runner_->options_.until_time;
  v1::SimulationState state;
  for (int l = 0; l < lanes; ++l) {
    const int k = in_group_[l];
    lane_of_[k] = l;
    runs_[k]->sim_->SaveState(&state);
    const size_t ul = static_cast<size_t>(l);
    group->t0 = state.state().t();  // the description's, the same for all
    std::copy(state.state().q().begin(), state.state().q().end(), group->q.begin() + ul * nq);
    std::copy(state.state().v().begin(), state.state().v().end(), group->v.begin() + ul * nq);
    std::copy(state.inputs().begin(), state.inputs().end(), group->u.begin() + ul * nu);
  }
  // Unused lanes repeat lane 0 (lanes never mix; their results are dropped).
  for (int l = lanes; l < kWidth; ++l) {
    const size_t ul = static_cast<size_t>(l);
    std::copy(group->q.begin(), group->q.begin() + nq, group->q.begin() + ul * nq);
    std::copy(group->v.begin(), group->v.begin() + nq, group->v.begin() + ul * nq);
    std::copy(group->u.begin(), group->u.begin() + nu, group->u.begin() + ul * nu);
  }
  group_ = std::move(group);
  group_lanes_ = lanes;
  return true;
}

void EnsembleGroupRun::FinishLaneGroup() {
  const internal::LaneGroup& g = *group_;
  const size_t nq = static_cast<size_t>(g.model->nq);
  for (int l = 0; l < group_lanes_; ++l) {
    // A failed lane's instance stays started and unstepped: it runs alone.
    if (!g.ok[l]) continue;
    const size_t off = static_cast<size_t>(l) * nq;
    runs_[in_group_[l]]->FinishFromLanes(g.t, g.q.data() + off, g.v.data() + off, g.steps,
                                         g.fast_functions);
    ++runner_->lane_instances_;
    if (g.native_tape_ran) ++runner_->lane_native_instances_;
  }
  group_.reset();
  group_lanes_ = 0;
}

void EnsembleGroupRun::Next() {
  while (!group_ && forming_) {
    if (FormLaneGroup()) return;
  }
  if (group_) return;
  // The rest alone, in order: instances the lanes did not take, and those
  // whose lane would have failed or needed a diagnosis, which the scalar
  // engine then names as a plain run does.
  while (alone_ < count_ && runs_[alone_] && runs_[alone_]->done()) ++alone_;
  done_ = alone_ >= count_;
}

bool EnsembleGroupRun::Advance(uint64_t max_steps) {
  if (done_) return true;
  if (group_) {
    const uint64_t before = group_->steps;
    internal::AdvanceLaneGroup(group_.get(), max_steps, runner_->options_.lane_kernel);
    work_ += (group_->steps - before) * static_cast<uint64_t>(kWidth);
    if (group_->done) {
      FinishLaneGroup();
      Next();
    }
    return done_;
  }
  std::unique_ptr<EnsembleInstanceRun>& run = runs_[alone_];
  if (!run) {
    // What Run does: Start, then Advance (in chunks, the same bits).
    run = runner_->Start(first_ + static_cast<uint64_t>(alone_));
    if (interrupt_) run->SetInterrupt(interrupt_);
  }
  const uint64_t before = run->steps();
  const bool finished = run->Advance(max_steps);
  work_ += run->steps() - before;
  if (!finished) {
    interrupted_ = run->interrupted();
    return false;
  }
  ++alone_;
  Next();
  return done_;
}

void EnsembleGroupRun::TakeResults(v1::EnsembleInstanceResult* results) {
  for (int k = 0; k < count_; ++k) results[k] = runs_[k]->TakeResult();
}

// ---- EnsembleReducer -------------------------------------------------------

EnsembleReducer::Shape EnsembleReducer::ShapeFor(const v1::SimulationSpec& spec,
                                                 const EnsembleOptions& options) {
  Shape shape;
  if (!options.output_interval) return shape;
  const double t0 = spec.initial().t(), dt = *options.output_interval;
  // The grid times up to the end (EnsembleRunner::Create bounds their count).
  shape.times = static_cast<std::size_t>(std::floor((options.until_time - t0) / dt)) + 1;
  while (shape.times > 1 && t0 + static_cast<double>(shape.times - 1) * dt > options.until_time) {
    --shape.times;
  }
  while (t0 + static_cast<double>(shape.times) * dt <= options.until_time) ++shape.times;
  shape.columns = 2 * static_cast<std::size_t>(spec.system().coordinates_size()) +
                  static_cast<std::size_t>(spec.system().outputs_size());
  return shape;
}

int64_t EnsembleReducer::BytesOf(const Shape& shape) {
  return static_cast<int64_t>(shape.times *
                              (sizeof(uint64_t) + 4 * shape.columns * sizeof(double)));
}

int64_t EnsembleReducer::HeapBytesFor(const v1::SimulationSpec& spec,
                                      const EnsembleOptions& options) {
  return BytesOf(ShapeFor(spec, options));
}

EnsembleReducer::EnsembleReducer(const v1::SimulationSpec& spec, const EnsembleOptions& options) {
  if (!options.output_interval) return;
  t0_ = spec.initial().t();
  dt_ = *options.output_interval;
  const Shape shape = ShapeFor(spec, options);
  times_ = shape.times;
  for (const auto& c : spec.system().coordinates()) names_.push_back("q_" + c);
  for (const auto& c : spec.system().coordinates()) names_.push_back("v_" + c);
  for (const auto& o : spec.system().outputs()) names_.push_back(o.name());
  columns_ = names_.size();
  count_.assign(times_, 0);
  mean_.assign(times_ * columns_, 0.0);
  m2_.assign(times_ * columns_, 0.0);
  min_.assign(times_ * columns_, std::numeric_limits<double>::infinity());
  max_.assign(times_ * columns_, -std::numeric_limits<double>::infinity());
}

int64_t EnsembleReducer::heap_bytes() const { return BytesOf({times_, columns_}); }

void EnsembleReducer::Add(v1::EnsembleInstanceResult* result) {
  if (times_ == 0) return;
  for (const v1::Frame& f : result->frames()) {
    const double k = std::round((f.t() - t0_) / dt_);
    if (!(k >= 0 && k < static_cast<double>(times_))) continue;
    const std::size_t row = static_cast<std::size_t>(k);
    // Not a grid time: a last step between two (the engine emits a time
    // that is both once).
    if (t0_ + static_cast<double>(row) * dt_ != f.t()) continue;
    const uint64_t n = ++count_[row];
    std::size_t col = 0;
    auto add = [&](double x) {
      const std::size_t i = row * columns_ + col++;
      // Welford: mean and the sum of squared deviations, one value at a time.
      const double delta = x - mean_[i];
      mean_[i] += delta / static_cast<double>(n);
      m2_[i] += delta * (x - mean_[i]);
      min_[i] = std::min(min_[i], x);
      max_[i] = std::max(max_[i], x);
    };
    for (double x : f.q()) add(x);
    for (int j = 0; j < f.q_size(); ++j) add(j < f.v_size() ? f.v(j) : 0.0);
    for (double x : f.outputs()) add(x);
  }
  result->clear_frames();
}

void EnsembleReducer::Fill(v1::EnsembleReduction* r) const {
  r->Clear();
  for (const auto& n : names_) r->add_columns(n);
  for (std::size_t row = 0; row < times_; ++row) {
    r->add_t(t0_ + static_cast<double>(row) * dt_);
    r->add_count(count_[row]);
    for (std::size_t col = 0; col < columns_; ++col) {
      const std::size_t i = row * columns_ + col;
      const bool any = count_[row] > 0;
      const double nan = std::numeric_limits<double>::quiet_NaN();
      r->add_mean(any ? mean_[i] : nan);
      r->add_std(any ? std::sqrt(m2_[i] / static_cast<double>(count_[row])) : nan);
      r->add_min(any ? min_[i] : nan);
      r->add_max(any ? max_[i] : nan);
    }
  }
}

void RunEnsemble(const EnsembleRunner& runner, int workers,
                 const std::function<void(v1::EnsembleInstanceResult&&)>& emit) {
  const uint64_t n = runner.size();
  workers = std::max(1, workers);
  // Instances go in groups (RunGroup: eight on the lane path, else one).
  const uint64_t width = static_cast<uint64_t>(runner.group_size());
  std::vector<v1::EnsembleInstanceResult> group(width);
  auto run_group = [&runner, n, width](uint64_t g, v1::EnsembleInstanceResult* out) {
    const uint64_t first = g * width;
    const int count = static_cast<int>(std::min(width, n - first));
    if (count == 1 && !runner.fast_functions()) {
      out[0] = runner.Run(first);
    } else {
      runner.RunGroup(first, count, out);
    }
    return count;
  };
  const uint64_t groups = (n + width - 1) / width;
  if (workers == 1) {
    for (uint64_t g = 0; g < groups; ++g) {
      const int count = run_group(g, group.data());
      for (int k = 0; k < count; ++k) emit(std::move(group[static_cast<size_t>(k)]));
    }
    return;
  }
  // Workers take indices in order; results wait in a window until every
  // earlier one is there (at most a few per worker: memory stays bounded).
  std::mutex mu;
  std::condition_variable cv;
  uint64_t next = 0, emitted = 0;
  std::unordered_map<uint64_t, v1::EnsembleInstanceResult> ready;
  const uint64_t window = static_cast<uint64_t>(workers) * 4;
  auto work = [&] {
    for (;;) {
      uint64_t g;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return next >= groups || next * width < emitted + window * width; });
        if (next >= groups) return;
        g = next++;
      }
      std::vector<v1::EnsembleInstanceResult> rs(width);
      const int count = run_group(g, rs.data());
      std::lock_guard<std::mutex> lock(mu);
      for (int k = 0; k < count; ++k) {
        ready.emplace(g * width + static_cast<uint64_t>(k), std::move(rs[static_cast<size_t>(k)]));
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) threads.emplace_back(work);
  while (emitted < n) {
    v1::EnsembleInstanceResult r;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return ready.count(emitted) > 0; });
      auto it = ready.find(emitted);
      r = std::move(it->second);
      ready.erase(it);
    }
    emit(std::move(r));
    {
      std::lock_guard<std::mutex> lock(mu);
      ++emitted;
    }
    cv.notify_all();
  }
  for (auto& t : threads) t.join();
}

std::string EnsembleResultToJson(const v1::EnsembleInstanceResult& result) {
  return ToJson(result);
}

}  // namespace tether
