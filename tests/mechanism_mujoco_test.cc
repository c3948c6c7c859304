// Mechanisms against an independent multibody engine (issue 23 point 4):
// the same URDF file imported by Tether (`tether urdf`'s reader, the
// mechanism compiler, the engine) and by MuJoCo (Debian's libmujoco, its own
// URDF importer), both integrated with RK4 at h = 1e-4 with contacts,
// limits, damping and armature off, from the same initial state; the joint
// coordinates at t = 1 s must agree to 1e-6. Plus energy conservation
// without dampers, on Tether's `energy` output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/simulation.h"
#include "support/mujoco_urdf.h"
#include "urdf/urdf_import.h"

namespace tether {
namespace {

const std::string kData = std::string(TETHER_SOURCE_DIR) + "/tests/data/mechanism/";

struct Trajectory {
  v1::Mechanism mechanism;
  std::vector<std::string> names;
  std::vector<double> q;  // at the end
  double energy_start = 0, energy_end = 0, max_energy_drift = 0;
};

// Tether: the URDF's description, initial state (q0, v0), RK4 at h until T.
Trajectory RunTether(const std::string& urdf, const std::vector<double>& q0,
                     const std::vector<double>& v0, double h, double T) {
  urdf::Import imp;
  Status s = urdf::ImportUrdfFile(urdf, &imp);
  EXPECT_TRUE(s.ok()) << s.message();
  v1::SimulationSpec spec = imp.spec;
  spec.mutable_integrator()->set_step_size(h);
  spec.mutable_certificate()->set_disabled(true);
  spec.mutable_initial()->clear_q();
  spec.mutable_initial()->clear_v();
  for (double x : q0) spec.mutable_initial()->add_q(x);
  for (double x : v0) spec.mutable_initial()->add_v(x);
  auto sim = Simulation::Create(spec);
  EXPECT_TRUE(sim.ok()) << sim.status().message();
  Trajectory out;
  out.mechanism = spec.system().mechanism();
  if (!sim.ok()) return out;
  out.names = (*sim)->coordinate_names();
  RunOptions run;
  run.until_time = T;
  run.every = 1000;
  run.certificate = false;
  EXPECT_TRUE((*sim)->BeginRun(run).ok());
  google::protobuf::RepeatedPtrField<v1::Frame> frames;
  Status a = (*sim)->Advance(UINT64_MAX, &frames);
  EXPECT_TRUE(a.ok()) << a.message();
  const v1::Frame& last = frames[frames.size() - 1];
  out.q.assign(last.q().begin(), last.q().end());
  out.energy_start = frames[0].outputs(0);
  out.energy_end = last.outputs(0);
  for (const auto& f : frames) {
    out.max_energy_drift =
        std::max(out.max_energy_drift, std::fabs(f.outputs(0) - out.energy_start));
  }
  return out;
}

// MuJoCo: the same file, the same state by joint name, RK4 at h until T.
std::vector<double> RunMujoco(const std::string& urdf, const v1::Mechanism& mech,
                              const std::vector<std::string>& names, const std::vector<double>& q0,
                              const std::vector<double>& v0, double h, double T) {
  std::string error;
  mjModel* m = mujoco_urdf::Load(urdf, mech, h, &error);
  EXPECT_NE(m, nullptr) << error;
  if (!m) return {};
  mjData* d = mj_makeData(m);
  std::vector<int> qadr, vadr;
  for (const auto& n : names) {
    const int id = mj_name2id(m, mjOBJ_JOINT, n.c_str());
    EXPECT_GE(id, 0) << "MuJoCo has no joint " << n;
    qadr.push_back(id >= 0 ? m->jnt_qposadr[id] : 0);
    vadr.push_back(id >= 0 ? m->jnt_dofadr[id] : 0);
  }
  EXPECT_EQ(m->nq, static_cast<int>(names.size()));
  for (size_t k = 0; k < names.size(); ++k) {
    d->qpos[qadr[k]] = q0[k];
    d->qvel[vadr[k]] = v0[k];
  }
  const long steps = std::lround(T / h);
  for (long k = 0; k < steps; ++k) mj_step(m, d);
  std::vector<double> q;
  for (size_t k = 0; k < names.size(); ++k) q.push_back(d->qpos[qadr[k]]);
  mj_deleteData(d);
  mj_deleteModel(m);
  return q;
}

void Compare(const std::string& file, const std::vector<double>& q0,
             const std::vector<double>& v0) {
  const double h = 1e-4, T = 1;
  const Trajectory t = RunTether(kData + file, q0, v0, h, T);
  ASSERT_EQ(t.q.size(), q0.size());
  const std::vector<double> mj = RunMujoco(kData + file, t.mechanism, t.names, q0, v0, h, T);
  ASSERT_EQ(mj.size(), q0.size());
  double worst = 0;
  for (size_t k = 0; k < q0.size(); ++k) {
    worst = std::max(worst, std::fabs(t.q[k] - mj[k]));
    // Issue 23 asks for 1e-6; measured 1e-14 (the two RK4 maps on one model).
    EXPECT_NEAR(t.q[k], mj[k], 1e-10) << t.names[k];
  }
  std::printf(
      "%s: |q_tether - q_mujoco|_inf at t = 1 s = %.3g; energy %.12g -> %.12g (max drift %.3g)\n",
      file.c_str(), worst, t.energy_start, t.energy_end, t.max_energy_drift);
  // RK4 at h = 1e-4 conserves energy to far below this on these systems.
  EXPECT_LT(t.max_energy_drift, 1e-9 * std::max(1.0, std::fabs(t.energy_start)));
}

TEST(MechanismMujoco, SpatialArmFromRest) {
  Compare("spatial_arm.urdf", {0, 0, 0, 0}, {0, 0, 0, 0});
}

TEST(MechanismMujoco, SpatialArmMoving) {
  Compare("spatial_arm.urdf", {0.3, -0.7, 1.1, 0.4}, {0.5, -0.3, 0.8, 1.0});
}

TEST(MechanismMujoco, BranchedTreeMoving) {
  Compare("branched_tree.urdf", {0.1, 0.4, -0.6, 0.9}, {0.3, -1.0, 0.7, 2.0});
}

}  // namespace
}  // namespace tether
