// Large benchmark and test models, as JSON descriptions (the protobuf JSON
// mapping users write): point masses in the vertical plane joined by
// distance constraints g = (|p_a - p_b|^2 - l^2)/2, gravity 9.81.
//
//   Chain(n)         n masses in a chain hung from the origin (bench/
//                    engine_bench.cc's chain/N): W tridiagonal.
//   Ladder(panels)   two rails of `panels` masses each, joined by rungs:
//                    every panel a closed four-bar loop; the first rung's
//                    ends hang from two fixed points. 2 x panels masses,
//                    3 x panels constraints; W banded.
//   Grid(k)          a k x k net of masses with horizontal and vertical
//                    links, the top row hung from fixed points: k^2 masses,
//                    2k^2 - k constraints; W's graph is a 2D mesh, not banded.
//   KineticChain(n)  Chain(n) with the mass matrix from a kinetic energy,
//                    diagonal but q-dependent: T = sum m_i ((1 + x_i^2/10)
//                    der(x_i)^2 + der(y_i)^2) / 2.
//   AngleChain(n)    n links in absolute angles, T written out (compile
//                    benchmark angles/N); AngleChainDefinitions(n) the
//                    same chain written with definitions (angles-defs/N).
// Every model starts consistent (g = 0, G v = 0) and at rest, off
// equilibrium; Baumgarte alpha = beta = 10 unless given.
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace tether_bench {

struct LargeModel {
  std::string json;
  int masses = 0;
  int constraints = 0;
};

struct LargeModelOptions {
  std::string method = "RK4";
  double step = 1e-3;
  double alpha = 10, beta = 10;
};

namespace large_models_internal {

inline std::string Num(double x) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

inline double Mass(int i) { return 1.0 + 0.5 * (i % 3); }

struct Builder {
  std::vector<std::string> coords;
  std::vector<double> masses, q0;
  std::vector<std::pair<std::string, std::string>> constraints;
  std::string potential;
  std::string kinetic;  // empty: masses

  // Adds a mass at (x, y); returns its index.
  int AddMass(double x, double y) {
    const int i = static_cast<int>(coords.size() / 2);
    coords.push_back("x" + std::to_string(i));
    coords.push_back("y" + std::to_string(i));
    masses.push_back(Mass(i));
    masses.push_back(Mass(i));
    q0.push_back(x);
    q0.push_back(y);
    potential += (potential.empty() ? "" : " + ") + Num(Mass(i)) + "*y" + std::to_string(i);
    return i;
  }
  static std::string Sq(const std::string& a, const std::string& b) {
    return "(" + a + " - " + b + ")^2";
  }
  void Link(int a, int b, double l) {
    const std::string sa = std::to_string(a), sb = std::to_string(b);
    constraints.push_back({"link" + sa + "_" + sb, "(" + Sq("x" + sa, "x" + sb) + " + " +
                                                       Sq("y" + sa, "y" + sb) + " - " + Num(l * l) +
                                                       ")/2"});
  }
  void Anchor(int a, double px, double py, double l) {
    const std::string sa = std::to_string(a);
    constraints.push_back({"anchor" + sa, "(" + Sq("x" + sa, Num(px)) + " + " +
                                              Sq("y" + sa, Num(py)) + " - " + Num(l * l) + ")/2"});
  }

  LargeModel Json(const LargeModelOptions& o) const {
    auto array = [](const std::vector<double>& xs) {
      std::string s = "[";
      for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + Num(xs[i]);
      return s + "]";
    };
    std::string j = R"({"system":{"coordinates":[)";
    for (size_t i = 0; i < coords.size(); ++i) j += (i ? ",\"" : "\"") + coords[i] + "\"";
    j += "],";
    if (kinetic.empty()) {
      j += R"("masses":{"values":)" + array(masses) + "},";
    } else {
      j += R"("kineticEnergy":")" + kinetic + "\",";
    }
    j += "\"potentialEnergy\":\"9.81*(" + potential + ")\",\"constraints\":[";
    for (size_t i = 0; i < constraints.size(); ++i) {
      j += std::string(i ? "," : "") + R"({"name":")" + constraints[i].first +
           R"(","expression":")" + constraints[i].second + R"("})";
    }
    j += R"(],"baumgarte":{"alpha":)" + Num(o.alpha) + R"(,"beta":)" + Num(o.beta) +
         R"(}},"initial":{"q":)" + array(q0) + R"(,"v":)" +
         array(std::vector<double>(q0.size(), 0.0)) + R"(},"integrator":{"method":")" + o.method +
         "\"" + (o.step > 0 ? R"(,"stepSize":)" + Num(o.step) : std::string()) + "}}";
    return {j, static_cast<int>(coords.size() / 2), static_cast<int>(constraints.size())};
  }
};

}  // namespace large_models_internal

inline LargeModel Chain(int n, const LargeModelOptions& o = {}) {
  large_models_internal::Builder b;
  for (int i = 0; i < n; ++i) {
    b.AddMass(i + 1.0, 0);
    if (i == 0) {
      b.Anchor(0, 0, 0, 1);
    } else {
      b.Link(i - 1, i, 1);
    }
  }
  return b.Json(o);
}

inline LargeModel KineticChain(int n, const LargeModelOptions& o = {}) {
  large_models_internal::Builder b;
  for (int i = 0; i < n; ++i) {
    b.AddMass(i + 1.0, 0);
    if (i == 0) {
      b.Anchor(0, 0, 0, 1);
    } else {
      b.Link(i - 1, i, 1);
    }
    const std::string s = std::to_string(i), m = large_models_internal::Num(b.masses.back());
    b.kinetic +=
        (i ? " + " : "(") + m + "*((1 + x" + s + "^2/10)*der(x" + s + ")^2 + der(y" + s + ")^2)";
  }
  b.kinetic += ")/2";
  return b.Json(o);
}

inline LargeModel Ladder(int panels, const LargeModelOptions& o = {}) {
  large_models_internal::Builder b;
  for (int i = 0; i < panels; ++i) {
    const int top = b.AddMass(i + 1.0, 0);
    const int bottom = b.AddMass(i + 1.0, -1);
    if (i == 0) {
      b.Anchor(top, 0, 0, 1);
      b.Anchor(bottom, 0, -1, 1);
    } else {
      b.Link(top - 2, top, 1);
      b.Link(bottom - 2, bottom, 1);
    }
    b.Link(top, bottom, 1);
  }
  return b.Json(o);
}

inline LargeModel Grid(int k, const LargeModelOptions& o = {}) {
  large_models_internal::Builder b;
  for (int r = 0; r < k; ++r) {
    for (int c = 0; c < k; ++c) {
      const int i = b.AddMass(c, -r);
      if (r == 0) b.Anchor(i, c - 0.6, 0.8, 1);  // hung at an angle: it swings
      if (c > 0) b.Link(i - 1, i, 1);
      if (r > 0) b.Link(i - k, i, 1);
    }
  }
  return b.Json(o);
}

// n coordinates with a configuration-dependent kinetic energy, T = sum_j
// (1 + x_j^2/10) der(x_j)^2 / 2 (M(q) diagonal: the sparse-friendly form),
// or with `coupled` also der(x_j) der(x_j+1) / 4 (M(q) dense), a potential
// sum_j x_j^2, no constraints; at x = 0.1, at rest, RK4 at 1 ms. The
// audit's many-coordinate description (its memory and compile cost grow
// with n; coupled, as n^2).
inline std::string KineticEnergyModel(int n, bool coupled = false) {
  std::string json = R"({"system":{"coordinates":[)";
  for (int j = 0; j < n; ++j) json += (j ? ",\"x" : "\"x") + std::to_string(j) + "\"";
  json += R"(],"kineticEnergy":")";
  for (int j = 0; j < n; ++j) {
    const std::string x = "x" + std::to_string(j), y = "x" + std::to_string((j + 1) % n);
    json += (j ? "+" : "") + std::string("(1+") + x + "^2/10)*der(" + x + ")^2/2";
    if (coupled) json += "+der(" + x + ")*der(" + y + ")/4";
  }
  json += R"(","potentialEnergy":")";
  for (int j = 0; j < n; ++j) json += (j ? "+" : "") + std::string("x") + std::to_string(j) + "^2";
  json += R"("},"initial":{"q":[)";
  for (int j = 0; j < n; ++j) json += j ? ",0.1" : "0.1";
  json += R"(],"v":[)";
  for (int j = 0; j < n; ++j) json += j ? ",0" : "0";
  json += R"(]},"integrator":{"method":"RK4","stepSize":0.001}})";
  return json;
}

namespace large_models_internal {

inline std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

inline std::string AngleChainJson(const std::vector<std::string>& coords,
                                  const std::vector<std::string>& q, const std::string& definitions,
                                  const std::string& kinetic, const std::string& potential) {
  std::vector<std::string> quoted;
  for (const auto& c : coords) quoted.push_back("\"" + c + "\"");
  return "{\"system\":{\"coordinates\":[" + Join(quoted, ",") + "]," + definitions +
         "\"kineticEnergy\":\"0.5*(" + kinetic + ")\",\"potentialEnergy\":\"9.81*(" + potential +
         ")\"},\"initial\":{\"q\":[" + Join(q, ",") +
         "]},\"integrator\":{\"method\":\"RK4\",\"stepSize\":0.001}}";
}

}  // namespace large_models_internal

// N links of unit length in absolute angles th_i (from the horizontal),
// masses Mass(i) at the link ends, released at rest at alternating angles
// +-0.1; gravity along -y; no constraints. The kinetic energy written out
// in the angles, T = 1/2 sum_i m_i ((sum_{j<=i} cos th_j th_j')^2 +
// (sum_{j<=i} sin th_j th_j')^2), so M(q) comes from the compiler's second
// derivatives of T: O(N^2) characters (the 100,000 of one expression are
// exceeded past about 90 links).
inline std::string AngleChain(int n) {
  using namespace large_models_internal;
  std::vector<std::string> coords, q, terms;
  std::string potential;
  for (int i = 0; i < n; ++i) {
    coords.push_back("th" + std::to_string(i + 1));
    q.push_back(Num(0.1 * (i % 2 ? -1 : 1)));
  }
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> cx, cy, y;
    for (int j = 0; j <= i; ++j) {
      const std::string& th = coords[static_cast<size_t>(j)];
      cx.push_back("cos(" + th + ")*der(" + th + ")");
      cy.push_back("sin(" + th + ")*der(" + th + ")");
      y.push_back("sin(" + th + ")");
    }
    terms.push_back(Num(Mass(i)) + "*((" + Join(cx, " + ") + ")^2 + (" + Join(cy, " + ") + ")^2)");
    potential += (i ? " + " : "") + Num(Mass(i)) + "*(" + Join(y, " + ") + ")";
  }
  return AngleChainJson(coords, q, "", Join(terms, " + "), potential);
}

// AngleChain(n) written with definitions, O(N) characters: each link's
// velocity and height from the previous link's, vx_i = vx_(i-1) +
// cos(th_i)*der(th_i), vy_i likewise with sin, y_i = y_(i-1) + sin(th_i),
// and T = 1/2 sum_i m_i (vx_i^2 + vy_i^2), V = 9.81 sum_i m_i y_i. The
// same expressions as AngleChain's, so the same graph after hash-consing.
inline std::string AngleChainDefinitions(int n) {
  using namespace large_models_internal;
  std::vector<std::string> coords, q, terms, defs;
  std::string potential;
  for (int i = 0; i < n; ++i) {
    coords.push_back("th" + std::to_string(i + 1));
    q.push_back(Num(0.1 * (i % 2 ? -1 : 1)));
  }
  auto def = [&defs](const std::string& name, const std::string& expression) {
    defs.push_back("{\"name\":\"" + name + "\",\"expression\":\"" + expression + "\"}");
  };
  for (int i = 0; i < n; ++i) {
    const std::string k = std::to_string(i + 1), prev = std::to_string(i);
    const std::string& th = coords[static_cast<size_t>(i)];
    def("vx" + k, (i ? "vx" + prev + " + " : "") + "cos(" + th + ")*der(" + th + ")");
    def("vy" + k, (i ? "vy" + prev + " + " : "") + "sin(" + th + ")*der(" + th + ")");
    def("y" + k, (i ? "y" + prev + " + " : "") + "sin(" + th + ")");
    terms.push_back(Num(Mass(i)) + "*(vx" + k + "^2 + vy" + k + "^2)");
    potential += (i ? " + " : "") + Num(Mass(i)) + "*y" + k;
  }
  return AngleChainJson(coords, q, "\"definitions\":[" + Join(defs, ",") + "],", Join(terms, " + "),
                        potential);
}

}  // namespace tether_bench
