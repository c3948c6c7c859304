// A URDF file loaded into MuJoCo (Debian's libmujoco, its own URDF importer)
// the way Tether's mechanism comparisons run it: RK4 at step h, contacts,
// joint limits and friction loss off, no damping or armature, and the
// links' inertias set to the file's to double precision (RefineInertias).
// Shared by tests/mechanism_mujoco_test.cc (issue 23 point 4) and
// bench/mechanism_bench.cc (point 5). Header-only: the callers link MuJoCo,
// Eigen and the engine's protobuf messages themselves.
#pragma once

#include <mujoco/mujoco.h>

#include <Eigen/Dense>

#include <string>

#include "tether/v1/simulation.pb.h"

namespace tether::mujoco_urdf {

inline Eigen::Matrix3d Rpy(const v1::Vector3& rpy) {
  using Eigen::AngleAxisd;
  using Eigen::Vector3d;
  return (AngleAxisd(rpy.z(), Vector3d::UnitZ()) * AngleAxisd(rpy.y(), Vector3d::UnitY()) *
          AngleAxisd(rpy.x(), Vector3d::UnitX()))
      .toRotationMatrix();
}

// MuJoCo 2.2.2 diagonalizes a full inertia tensor (body_inertia, body_iquat)
// to about 3e-7 relative (measured: R diag R^T against the file's tensor for
// the spatial arm's `hand`), which alone moves q(1 s) by ~3e-6. The fixtures
// ask it not to merge bodies (<compiler fusestatic="false">), so each of its
// bodies is one link, whose principal axes and moments are set here from the
// file's numbers (the link's inertia in the body frame, R I R^T, R the
// inertial origin's rpy) with Eigen's eigensolver, to double precision.
// MuJoCo's own dynamics, frames and integrator are untouched. Returns an
// empty string, or what is wrong (a body MuJoCo does not have, a mass that
// differs).
inline std::string RefineInertias(mjModel* m, const v1::Mechanism& mech) {
  for (const v1::Body& b : mech.bodies()) {
    const int id = mj_name2id(m, mjOBJ_BODY, b.name().c_str());
    if (id < 0) return "MuJoCo has no body " + b.name();
    if (b.mass() == 0) continue;
    const auto& in = b.inertia();
    Eigen::Matrix3d I;
    I << in.ixx(), in.ixy(), in.ixz(), in.ixy(), in.iyy(), in.iyz(), in.ixz(), in.iyz(), in.izz();
    const Eigen::Matrix3d R = Rpy(b.inertial_origin().rpy());
    Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d> es(R * I * R.transpose());
    Eigen::Matrix3d V = es.eigenvectors();
    if (V.determinant() < 0) V.col(2) *= -1;
    const Eigen::Quaterniond q(V);
    const double mj_quat[4] = {q.w(), q.x(), q.y(), q.z()};
    for (int k = 0; k < 3; ++k) m->body_inertia[3 * id + k] = es.eigenvalues()(k);
    for (int k = 0; k < 4; ++k) m->body_iquat[4 * id + k] = mj_quat[k];
    if (std::abs(m->body_mass[id] - b.mass()) > 1e-15 * b.mass()) {
      return "MuJoCo's mass of " + b.name() + " differs from the file's";
    }
  }
  return "";
}

// Loads `urdf` and sets it up as above (`mech`: Tether's import of the same
// file, for RefineInertias). Null with `error` set on failure; the caller
// owns the model (mj_deleteModel).
inline mjModel* Load(const std::string& urdf, const v1::Mechanism& mech, double h,
                     std::string* error) {
  char buf[1000] = "";
  mjModel* m = mj_loadXML(urdf.c_str(), nullptr, buf, sizeof buf);
  if (!m) {
    *error = buf;
    return nullptr;
  }
  m->opt.integrator = mjINT_RK4;
  m->opt.timestep = h;
  m->opt.disableflags |= mjDSBL_CONTACT | mjDSBL_LIMIT | mjDSBL_FRICTIONLOSS;
  for (int i = 0; i < m->nv; ++i) {
    m->dof_damping[i] = 0;
    m->dof_armature[i] = 0;
  }
  *error = RefineInertias(m, mech);
  if (!error->empty()) {
    mj_deleteModel(m);
    return nullptr;
  }
  return m;
}

}  // namespace tether::mujoco_urdf
