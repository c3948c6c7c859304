#include "urdf/urdf_import.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include <tinyxml2.h>

#include "engine/compile_options.h"
#include "engine/mechanism.h"
#include "engine/simulation.h"
#include "engine/spec_json.h"

namespace tether::urdf {

namespace {

using tinyxml2::XMLElement;

// Whether the space-separated `list` has `word`.
bool Listed(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    const size_t end = std::min(list.find(' '), list.size());
    if (list.substr(0, end) == word) return true;
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  return false;
}

// "a, b or c" of a space-separated list.
std::string List(std::string_view list) {
  std::vector<std::string_view> words;
  while (!list.empty()) {
    const size_t end = std::min(list.find(' '), list.size());
    words.push_back(list.substr(0, end));
    list.remove_prefix(std::min(end + 1, list.size()));
  }
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += i + 1 == words.size() ? " or " : ", ";
    out += words[i];
  }
  return out;
}

// Collects errors, each "SOURCE:LINE: <ELEMENT name='N'>: message".
class Reader {
 public:
  explicit Reader(std::string_view source) : source_(source) {}

  std::string Where(const XMLElement* e) const {
    std::string w = source_ + ":" + std::to_string(e->GetLineNum()) + ": <" + e->Name();
    if (const char* n = e->Attribute("name")) w += " name=" + QuoteForMessage(n);
    return w + ">";
  }
  void Error(const XMLElement* e, const std::string& message) {
    errors_.push_back(Where(e) + ": " + message);
  }
  void Error(const std::string& message) { errors_.push_back(source_ + ": " + message); }
  bool failed() const { return !errors_.empty(); }
  Status ToStatus() const {
    std::string msg = "URDF " + source_ + ": " + std::to_string(errors_.size()) + " error" +
                      (errors_.size() == 1 ? "" : "s");
    std::vector<FieldViolation> v;
    for (size_t i = 0; i < errors_.size(); ++i) {
      if (i < 20) msg += "\n  " + errors_[i];
      v.push_back({source_, errors_[i]});
    }
    if (errors_.size() > 20) msg += "\n  ... (" + std::to_string(errors_.size() - 20) + " more)";
    return InvalidArgument(msg, std::move(v));
  }

  // A required attribute's text.
  const char* Text(const XMLElement* e, const char* attr) {
    const char* t = e->Attribute(attr);
    if (!t) Error(e, std::string("missing attribute '") + attr + "'");
    return t;
  }
  // `count` finite numbers separated by white space.
  bool Numbers(const XMLElement* e, const char* attr, double* out, int count) {
    const char* t = e->Attribute(attr);
    if (!t) return false;
    std::string_view s(t);
    int n = 0;
    size_t i = 0;
    while (true) {
      while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
      if (i == s.size()) break;
      double x = 0;
      const char* begin = s.data() + i;
      if (*begin == '+') ++begin;  // from_chars takes no '+'
      auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), x);
      if (ec != std::errc() || !std::isfinite(x) || n == count ||
          (ptr < s.data() + s.size() && !std::isspace(static_cast<unsigned char>(*ptr)))) {
        Error(e, std::string("attribute ") + attr + "=" + QuoteForMessage(t) + ": expected " +
                     std::to_string(count) + " finite number" + (count == 1 ? "" : "s"));
        return false;
      }
      out[n++] = x;
      i = static_cast<size_t>(ptr - s.data());
    }
    if (n != count) {
      Error(e, std::string("attribute ") + attr + "=" + QuoteForMessage(t) + ": expected " +
                   std::to_string(count) + " number" + (count == 1 ? "" : "s") + ", found " +
                   std::to_string(n));
      return false;
    }
    return true;
  }
  // The children of `e`: one not in `known` (its typo, or an extension
  // this reader does not read) is a warning, since it changes nothing; a
  // second one of a kind URDF has once is an error (which one would count
  // is a guess). `known` and `once` are space-separated tag names.
  void Children(const XMLElement* e, std::string_view known, std::vector<std::string>* warnings) {
    std::map<std::string, int> seen;  // tag -> line of the first
    for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
      const std::string tag = c->Name();
      if (!Listed(known, tag)) {
        warnings->push_back("warning: " + Where(c) + ": not an element URDF reads in <" +
                            e->Name() + "> (expected " + List(known) + "); not read");
        continue;
      }
      auto [it, first] = seen.emplace(tag, c->GetLineNum());
      if (!first) {
        Error(c, "a second <" + tag + "> in <" + e->Name() + "> (the first is at line " +
                     std::to_string(it->second) + "); expected one");
      }
    }
  }
  // The attributes of `e`: one not in `known` is a warning (rpY for rpy
  // left the rotation zero without a word).
  void Attributes(const XMLElement* e, std::string_view known, std::vector<std::string>* warnings) {
    for (const tinyxml2::XMLAttribute* a = e->FirstAttribute(); a; a = a->Next()) {
      if (!Listed(known, a->Name())) {
        warnings->push_back("warning: " + Where(e) + ": attribute " + QuoteForMessage(a->Name()) +
                            " is not one URDF reads there (expected " + List(known) +
                            "); not read");
      }
    }
  }
  void Origin(const XMLElement* parent, v1::Pose* pose) {
    const XMLElement* o = parent->FirstChildElement("origin");
    if (!o) return;
    double v[3];
    if (Numbers(o, "xyz", v, 3)) {
      pose->mutable_xyz()->set_x(v[0]), pose->mutable_xyz()->set_y(v[1]),
          pose->mutable_xyz()->set_z(v[2]);
    }
    if (Numbers(o, "rpy", v, 3)) {
      pose->mutable_rpy()->set_x(v[0]), pose->mutable_rpy()->set_y(v[1]),
          pose->mutable_rpy()->set_z(v[2]);
    }
  }

 private:
  std::string source_;
  std::vector<std::string> errors_;
};

// What URDF has in the elements this reader reads (the URDF XML
// specification's <joint> and <inertial>), and the attributes of those it
// takes numbers from.
constexpr std::string_view kJointChildren =
    "origin parent child axis calibration dynamics limit mimic safety_controller";
constexpr std::string_view kInertialChildren = "origin mass inertia";
constexpr std::string_view kInertiaAttributes = "ixx ixy ixz iyy iyz izz";

// The line of the first element nested deeper than kMaxUrdfDepth, or 0.
int TooDeep(const XMLElement* e, int depth) {
  if (depth > kMaxUrdfDepth) return e->GetLineNum();
  for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
    if (int line = TooDeep(c, depth + 1)) return line;
  }
  return 0;
}

// The line of the first byte that is not UTF-8 and the byte, or line 0.
std::pair<int, unsigned char> NotUtf8(std::string_view s) {
  int line = 1;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b == '\n') ++line;
    int n = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
    if (n < 0 || i + static_cast<size_t>(n) >= s.size() + (n == 0 ? 1 : 0)) return {line, b};
    // Overlong forms, surrogates and code points past U+10FFFF are not UTF-8.
    uint32_t cp = n == 0 ? b : b & (0x3F >> n);
    for (int k = 1; k <= n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((c >> 6) != 2) return {line, b};
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kLeast[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kLeast[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {line, b};
    i += static_cast<size_t>(n) + 1;
  }
  return {0, 0};
}

// `name` as an identifier: characters other than letters, digits and '_'
// become '_', and a leading digit gets a '_' before it.
std::string Identifier(const std::string& name) {
  std::string r;
  for (char c : name) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (r.empty() || std::isdigit(static_cast<unsigned char>(r[0]))) r = "_" + r;
  return r;
}

// The ERROR diagnostics of the mechanism's checks or the description's
// validation, each at the line of the URDF element it names
// (system.mechanism.joints[i] or bodies[i]), else as it is.
void ReportAtElements(const std::vector<v1::Diagnostic>& diags,
                      const std::vector<const XMLElement*>& joint_el,
                      const std::vector<const XMLElement*>& link_el, Reader* reader) {
  Reader& r = *reader;
  for (const auto& d : diags) {
    if (d.severity() != v1::Diagnostic::ERROR) continue;
    const std::string& f = d.field();
    const XMLElement* at = nullptr;
    int idx = -1;
    if (std::sscanf(f.c_str(), "system.mechanism.joints[%d]", &idx) == 1 && idx >= 0 &&
        idx < static_cast<int>(joint_el.size())) {
      at = joint_el[static_cast<size_t>(idx)];
    } else if (std::sscanf(f.c_str(), "system.mechanism.bodies[%d]", &idx) == 1 && idx >= 0 &&
               idx < static_cast<int>(link_el.size())) {
      at = link_el[static_cast<size_t>(idx)];
    }
    if (at) {
      r.Error(at, d.message());
    } else if (f.empty() || f.rfind("system.mechanism", 0) == 0) {
      r.Error(d.message());
    } else {
      r.Error(d.message() + " (in the expanded description: " + f + ")");
    }
  }
}

}  // namespace

Status ImportUrdf(std::string_view xml, std::string_view source, Import* out) {
  Reader r(source);
  if (xml.size() > kMaxUrdfBytes) {
    r.Error("the file has " + std::to_string(xml.size()) + " bytes, more than the limit of " +
            std::to_string(kMaxUrdfBytes));
    return r.ToStatus();
  }
  if (const size_t tags = static_cast<size_t>(std::count(xml.begin(), xml.end(), '<'));
      tags > kMaxUrdfTags) {
    r.Error("the file has " + std::to_string(tags) + " tags ('<'), more than the limit of " +
            std::to_string(kMaxUrdfTags) + " (a URDF of 1000 links has about 25000)");
    return r.ToStatus();
  }
  // No DOCTYPE: no entity declarations, so nothing to expand (tinyxml2
  // expands none either, but says nothing about skipping them).
  if (xml.find("<!DOCTYPE") != std::string_view::npos ||
      xml.find("<!ENTITY") != std::string_view::npos) {
    r.Error(
        "a DOCTYPE or ENTITY declaration: not accepted (URDF needs none, and entities are not "
        "expanded)");
    return r.ToStatus();
  }
  if (xml.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    r.Error("the file is empty; expected a URDF document (<robot>...</robot>)");
    return r.ToStatus();
  }
  // XML is UTF-8 here (tinyxml2 does not check; expat, the Python reader's,
  // does): a name of other bytes would reach messages and the description.
  if (auto [line, byte] = NotUtf8(xml); line > 0) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", byte);
    r.Error("line " + std::to_string(line) + ": not well-formed XML: a byte " + hex +
            " that is not UTF-8");
    return r.ToStatus();
  }
  tinyxml2::XMLDocument doc(true, tinyxml2::COLLAPSE_WHITESPACE);
  if (doc.Parse(xml.data(), xml.size()) != tinyxml2::XML_SUCCESS) {
    r.Error("line " + std::to_string(doc.ErrorLineNum()) +
            ": not well-formed XML: " + doc.ErrorName() +
            (doc.ErrorStr() ? std::string(" (") + doc.ErrorStr() + ")" : std::string()));
    return r.ToStatus();
  }
  const XMLElement* robot = doc.RootElement();
  if (!robot || std::string(robot->Name()) != "robot") {
    r.Error("expected the root element <robot>");
    return r.ToStatus();
  }
  if (const XMLElement* junk = robot->NextSiblingElement()) {
    // One document, one root (tinyxml2 reads on; expat stops).
    r.Error("line " + std::to_string(junk->GetLineNum()) + ": not well-formed XML: an element <" +
            junk->Name() + "> after the root element <robot>");
    return r.ToStatus();
  }
  if (int line = TooDeep(robot, 1)) {
    r.Error("line " + std::to_string(line) + ": elements nested more than " +
            std::to_string(kMaxUrdfDepth) + " deep");
    return r.ToStatus();
  }
  *out = Import{};
  out->robot_name = robot->Attribute("name") ? robot->Attribute("name") : "";
  v1::SystemSpec* sys = out->spec.mutable_system();
  v1::Mechanism* mech = sys->mutable_mechanism();
  mech->mutable_gravity()->set_z(-9.81);
  std::vector<const XMLElement*> link_el, joint_el;
  std::map<std::string, int> links;  // URDF name -> body index
  std::set<std::string> ignored;
  std::vector<std::string> renamed, limited;
  std::vector<std::string> checks;  // warnings of Children and Attributes, in file order
  auto name_of = [&](const XMLElement* e, std::set<std::string>* ids) -> std::string {
    const char* n = r.Text(e, "name");
    if (!n) return "";
    if (*n == '\0') {
      r.Error(e, "the name is empty; expected a name (URDF requires one)");
      return "";
    }
    std::string id = Identifier(n);
    if (id != n) renamed.push_back(std::string("'") + n + "' -> " + id);
    if (!ids->insert(id).second)
      r.Error(e, "the name " + QuoteForMessage(n) + " (identifier " + id + ") is used twice");
    return id;
  };
  std::set<std::string> link_ids, joint_ids;
  for (const XMLElement* e = robot->FirstChildElement(); e; e = e->NextSiblingElement()) {
    const std::string tag = e->Name();
    if (tag == "link") {
      if (static_cast<int>(link_el.size()) >= kMaxMechanismElements) {
        r.Error(e, "more than " + std::to_string(kMaxMechanismElements) + " links");
        return r.ToStatus();
      }
      const std::string id = name_of(e, &link_ids);
      links[e->Attribute("name") ? e->Attribute("name") : ""] = static_cast<int>(link_el.size());
      link_el.push_back(e);
      v1::Body* b = mech->add_bodies();
      b->set_name(id);
      int inertials = 0;
      for (const XMLElement* c = e->FirstChildElement(); c; c = c->NextSiblingElement()) {
        const std::string ct = c->Name();
        if (ct != "inertial") {
          ignored.insert("<" + ct + ">");
        } else if (++inertials == 2) {
          r.Error(c, "a second <inertial> in <link> (the first is at line " +
                         std::to_string(e->FirstChildElement("inertial")->GetLineNum()) +
                         "); expected one");
        }
      }
      if (const XMLElement* in = e->FirstChildElement("inertial")) {
        r.Children(in, kInertialChildren, &checks);
        if (const XMLElement* o = in->FirstChildElement("origin"))
          r.Attributes(o, "xyz rpy", &checks);
        r.Origin(in, b->mutable_inertial_origin());
        const XMLElement* m = in->FirstChildElement("mass");
        const XMLElement* i = in->FirstChildElement("inertia");
        if (m) r.Attributes(m, "value", &checks);
        if (i) r.Attributes(i, kInertiaAttributes, &checks);
        double v[1];
        if (!m)
          r.Error(in, "missing <mass value=...>");
        else if (r.Text(m, "value") && r.Numbers(m, "value", v, 1))
          b->set_mass(v[0]);
        if (!i) {
          r.Error(in, "missing <inertia ixx=... ixy=... ixz=... iyy=... iyz=... izz=...>");
        } else {
          double x[1];
          auto* I = b->mutable_inertia();
          const std::pair<const char*, void (v1::Inertia::*)(double)> entries[] = {
              {"ixx", &v1::Inertia::set_ixx}, {"ixy", &v1::Inertia::set_ixy},
              {"ixz", &v1::Inertia::set_ixz}, {"iyy", &v1::Inertia::set_iyy},
              {"iyz", &v1::Inertia::set_iyz}, {"izz", &v1::Inertia::set_izz}};
          for (const auto& [attr, set] : entries) {
            if (r.Text(i, attr) && r.Numbers(i, attr, x, 1)) (I->*set)(x[0]);
          }
        }
      }
    } else if (tag == "joint") {
      if (static_cast<int>(joint_el.size()) >= kMaxMechanismElements) {
        r.Error(e, "more than " + std::to_string(kMaxMechanismElements) + " joints");
        return r.ToStatus();
      }
      joint_el.push_back(e);
      r.Children(e, kJointChildren, &checks);
      r.Attributes(e, "name type", &checks);
      for (const char* tag : {"origin", "parent", "child", "axis", "dynamics"}) {
        static const std::map<std::string, std::string_view> kAttributes = {
            {"origin", "xyz rpy"},
            {"parent", "link"},
            {"child", "link"},
            {"axis", "xyz"},
            {"dynamics", "damping friction"}};
        if (const XMLElement* c = e->FirstChildElement(tag))
          r.Attributes(c, kAttributes.at(tag), &checks);
      }
      v1::Joint* j = mech->add_joints();
      j->set_name(name_of(e, &joint_ids));
      const char* type = r.Text(e, "type");
      const std::string t = type ? type : "";
      static const std::map<std::string, v1::Joint::Type> kTypes = {
          {"revolute", v1::Joint::REVOLUTE},
          {"continuous", v1::Joint::CONTINUOUS},
          {"prismatic", v1::Joint::PRISMATIC},
          {"fixed", v1::Joint::FIXED},
          {"floating", v1::Joint::FLOATING}};
      if (type) {
        auto it = kTypes.find(t);
        if (it == kTypes.end()) {
          r.Error(
              e, "joint type " + QuoteForMessage(t) +
                     (t == "planar"
                          ? " is not supported (build it from two prismatic and one revolute joint)"
                          : ": expected revolute, continuous, prismatic, fixed or floating"));
        } else {
          j->set_type(it->second);
        }
      }
      for (const char* which : {"parent", "child"}) {
        const XMLElement* pc = e->FirstChildElement(which);
        const char* link = pc ? r.Text(pc, "link") : nullptr;
        if (!pc) r.Error(e, std::string("missing <") + which + " link=...>");
        if (!link) continue;
        std::string id = Identifier(link);
        (std::string(which) == "parent" ? j->mutable_parent() : j->mutable_child())->assign(id);
      }
      r.Origin(e, j->mutable_origin());
      j->mutable_axis()->set_x(1);  // URDF's default axis
      if (const XMLElement* a = e->FirstChildElement("axis")) {
        double v[3];
        if (r.Text(a, "xyz") && r.Numbers(a, "xyz", v, 3)) {
          j->mutable_axis()->set_x(v[0]), j->mutable_axis()->set_y(v[1]),
              j->mutable_axis()->set_z(v[2]);
          if (!(std::fabs(v[0]) + std::fabs(v[1]) + std::fabs(v[2]) > 0) &&
              (t == "revolute" || t == "continuous" || t == "prismatic")) {
            r.Error(a, "the axis has length zero");
          }
        }
      }
      if (e->FirstChildElement("limit") && t != "fixed" && t != "continuous")
        limited.push_back(j->name());
      if (const XMLElement* d = e->FirstChildElement("dynamics")) {
        double v[1];
        if (d->Attribute("damping") && r.Numbers(d, "damping", v, 1) && v[0] != 0) {
          // Dampers act on one-coordinate joints; on a fixed joint there is
          // nothing to damp, and a floating joint's has no single rate (as
          // MuJoCo's reader, it is not an error in the file).
          if (t == "revolute" || t == "continuous" || t == "prismatic") {
            j->set_damping(v[0]);
          } else {
            ignored.insert("<dynamics damping> on a " + t + " joint");
          }
        }
        if (d->Attribute("friction")) {
          double f[1];
          if (r.Numbers(d, "friction", f, 1) && f[0] != 0) ignored.insert("<dynamics friction>");
        }
      }
      if (e->FirstChildElement("mimic"))
        r.Error(e->FirstChildElement("mimic"), "<mimic> is not supported");
    } else if (tag != "mujoco") {
      ignored.insert("<" + tag + ">");
    }
  }
  if (r.failed()) return r.ToStatus();
  // Links and joints that refer to nothing, with their lines.
  for (size_t k = 0; k < joint_el.size(); ++k) {
    for (const char* which : {"parent", "child"}) {
      const char* link = joint_el[k]->FirstChildElement(which)->Attribute("link");
      if (!links.count(link)) {
        r.Error(joint_el[k]->FirstChildElement(which),
                std::string("no link named ") + QuoteForMessage(link));
      }
    }
  }
  if (r.failed()) return r.ToStatus();
  // Moving links need an <inertial>; the root and links on fixed joints
  // may be massless frames.
  std::map<std::string, const XMLElement*> parent_joint;
  for (const XMLElement* j : joint_el)
    parent_joint[j->FirstChildElement("child")->Attribute("link")] = j;
  for (const XMLElement* l : link_el) {
    auto it = parent_joint.find(l->Attribute("name"));
    if (it == parent_joint.end() && l->FirstChildElement("inertial")) {
      out->warnings.push_back(
          "note: the root link " + QuoteForMessage(l->Attribute("name")) +
          " does not move: its <inertial> (and that of links fixed to it) is not simulated");
    }
    if (l->FirstChildElement("inertial") || it == parent_joint.end()) continue;
    const char* type = it->second->Attribute("type");
    if (std::string(type) != "fixed") {
      r.Error(l, "missing <inertial>: the link moves on joint " +
                     QuoteForMessage(it->second->Attribute("name")) +
                     " and needs a mass and an inertia (only the root and links on fixed joints "
                     "may omit it)");
    }
  }
  if (r.failed()) return r.ToStatus();
  // The initial state: zero, a floating joint's quaternion the identity.
  bool quaternions = false;
  for (const auto& j : mech->joints()) {
    switch (j.type()) {
      case v1::Joint::FIXED: break;
      case v1::Joint::FLOATING:
        for (double x : {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0}) out->spec.mutable_initial()->add_q(x);
        quaternions = true;
        break;
      default: out->spec.mutable_initial()->add_q(0);
    }
  }
  for (int i = 0; i < out->spec.initial().q_size(); ++i) out->spec.mutable_initial()->add_v(0);
  if (quaternions) {
    sys->mutable_baumgarte()->set_alpha(10);
    sys->mutable_baumgarte()->set_beta(10);
  }
  v1::Output* energy = sys->add_outputs();
  // "energy", unless a joint (a coordinate) has that name: its frames'
  // columns would be two of one name.
  std::string energy_name = "energy";
  while (joint_ids.count(energy_name)) energy_name += "_";
  energy->set_name(energy_name);
  energy->set_expression("mechanism_T + mechanism_V");
  out->spec.mutable_integrator()->set_method(v1::IntegratorSpec::RK4);
  out->spec.mutable_integrator()->set_step_size(1e-3);
  // The whole description's checks, with the lines of the elements they
  // name: the mechanism's own (tree, cycles, masses, inertias; expanded
  // once, here), the expression compiler's and the initial state's
  // evaluation (a reserved joint name, M(q) not positive definite, a number
  // that overflows in the energy), so that a URDF `tether urdf` accepts
  // runs. Within the default compile limits; a description beyond them is
  // written all the same (a server may allow more) with a warning.
  {
    v1::ValidationReport report;
    const Status s = Validate(out->spec, CompileOptions{}, &report);
    if (!s.ok()) {
      out->warnings.push_back("warning: not checked beyond the mechanism: " + s.message());
    } else {
      std::vector<v1::Diagnostic> all(report.diagnostics().begin(), report.diagnostics().end());
      ReportAtElements(all, joint_el, link_el, &r);
      if (r.failed()) return r.ToStatus();
    }
  }
  out->warnings.insert(out->warnings.end(), checks.begin(), checks.end());
  if (!limited.empty()) {
    std::string w = "joint limits are not enforced (<limit> read only for documentation): ";
    for (size_t k = 0; k < limited.size(); ++k) w += (k ? ", " : "") + limited[k];
    out->warnings.push_back(w);
  }
  if (!ignored.empty()) {
    std::string w = "note: ignored (no geometry, contact, friction or transmission model):";
    for (const auto& t : ignored) w += " " + t;
    out->warnings.push_back(w);
  }
  if (!renamed.empty()) {
    std::string w = "note: names made identifiers:";
    for (const auto& n : renamed) w += " " + n;
    out->warnings.push_back(w);
  }
  return Status::Ok();
}

Status ImportUrdfFile(const std::string& path, Import* out) {
  // As a description is read (NOT_FOUND, the command line's I/O failure,
  // exit 1, for a directory or a file that cannot be read).
  std::string bytes;
  if (Status s = ReadFileBounded(path, kMaxUrdfBytes, "a URDF file", &bytes); !s.ok()) return s;
  return ImportUrdf(bytes, path, out);
}

}  // namespace tether::urdf
