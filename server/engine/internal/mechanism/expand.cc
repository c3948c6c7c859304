// ExpandMechanism (engine/mechanism.h): checks, tree, emitter, then the
// description's own fields merged in, and optionally the definitions
// inlined.
#include <cctype>
#include <map>
#include <set>

#include "engine/internal/mechanism/emitter.h"
#include "engine/internal/mechanism/tree.h"
#include "engine/mechanism.h"
#include "engine/status.h"

namespace tether {

namespace {

void Error(std::vector<v1::Diagnostic>* d, std::string field, std::string message) {
  mechanism::AddError(d, std::move(field), std::move(message));
}

// `text` with every identifier that names a definition replaced by its
// (already inlined) text in parentheses.
std::string Substitute(const std::string& text, const std::map<std::string, std::string>& defs) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      // A number, with its exponent: 1e-07 is no identifier "e".
      size_t j = i;
      while (j < text.size() &&
             (std::isdigit(static_cast<unsigned char>(text[j])) || text[j] == '.'))
        ++j;
      if (j < text.size() && (text[j] == 'e' || text[j] == 'E')) {
        size_t k = j + 1;
        if (k < text.size() && (text[k] == '+' || text[k] == '-')) ++k;
        if (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) {
          j = k;
          while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        }
      }
      out.append(text, i, j - i);
      i = j;
    } else if (ident(c)) {
      size_t j = i;
      while (j < text.size() && ident(text[j])) ++j;
      const std::string name = text.substr(i, j - i);
      auto it = defs.find(name);
      if (it != defs.end()) {
        out += "(" + it->second + ")";
      } else {
        out += name;
      }
      i = j;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

// The identifiers `text` uses (numbers skipped).
void Identifiers(const std::string& text, std::set<std::string>* out) {
  std::map<std::string, std::string> none;
  size_t i = 0;
  const auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  while (i < text.size()) {
    if (std::isalpha(static_cast<unsigned char>(text[i])) || text[i] == '_') {
      size_t j = i;
      while (j < text.size() && ident(text[j])) ++j;
      out->insert(text.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.') {
      // Skip the number and its exponent ("1e-07" uses no "e").
      while (i < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
        if ((text[i] == 'e' || text[i] == 'E') && i + 1 < text.size() &&
            (text[i + 1] == '-' || text[i + 1] == '+')) {
          ++i;
        }
        ++i;
      }
    } else {
      ++i;
    }
  }
}

// Drops the generated definitions (the first `generated` of s) that nothing
// uses (a fixed point: a leaf body's rotation when gravity pulls along an
// axis its centre of mass does not leave, say), so that the compiler's
// unused-definition warning speaks of the user's definitions only.
void PruneDefinitions(v1::SystemSpec* s, int generated) {
  std::set<std::string> used;
  Identifiers(s->kinetic_energy(), &used);
  Identifiers(s->potential_energy(), &used);
  for (const auto& f : s->generalized_forces()) Identifiers(f, &used);
  for (const auto& c : s->constraints()) Identifiers(c.expression(), &used);
  for (const auto& o : s->outputs()) Identifiers(o.expression(), &used);
  const int n = s->definitions_size();
  std::vector<bool> keep(static_cast<size_t>(n), false);
  for (int i = n - 1; i >= 0; --i) {
    const auto& d = s->definitions(i);
    if (i >= generated || used.count(d.name())) {
      keep[static_cast<size_t>(i)] = true;
      Identifiers(d.expression(), &used);
    }
  }
  google::protobuf::RepeatedPtrField<v1::Definition> kept;
  for (int i = 0; i < n; ++i) {
    if (keep[static_cast<size_t>(i)]) *kept.Add() = std::move(*s->mutable_definitions(i));
  }
  s->mutable_definitions()->Swap(&kept);
}

void InlineDefinitions(v1::SystemSpec* s) {
  std::map<std::string, std::string> defs;
  for (const auto& d : s->definitions()) defs[d.name()] = Substitute(d.expression(), defs);
  auto sub = [&](std::string* text) { *text = Substitute(*text, defs); };
  if (s->has_kinetic_energy()) sub(s->mutable_kinetic_energy());
  sub(s->mutable_potential_energy());
  for (auto& f : *s->mutable_generalized_forces()) sub(&f);
  for (auto& c : *s->mutable_constraints()) sub(c.mutable_expression());
  for (auto& o : *s->mutable_outputs()) sub(o.mutable_expression());
  s->clear_definitions();
}

}  // namespace

v1::SystemSpec ExpandMechanism(const v1::SystemSpec& system, std::vector<v1::Diagnostic>* diags,
                               const ExpandOptions& options) {
  if (!system.has_mechanism()) {
    v1::SystemSpec out = system;
    if (options.inline_definitions) InlineDefinitions(&out);
    return out;
  }
  const std::string path = "system.mechanism";
  const size_t before = diags->size();
  if (system.coordinates_size() > 0) {
    Error(diags, "system.coordinates",
          "leave empty with a mechanism: its coordinates are its joints' (tether expand lists "
          "them)");
  }
  if (system.inertia_case() != v1::SystemSpec::INERTIA_NOT_SET) {
    Error(diags,
          system.has_masses()        ? "system.masses"
          : system.has_mass_matrix() ? "system.mass_matrix"
                                     : "system.kinetic_energy",
          "leave the inertia unset with a mechanism: its bodies' masses and inertias give the "
          "kinetic energy");
  }
  std::vector<std::string> inputs;
  std::set<std::string> taken;
  for (const auto& in : system.inputs()) {
    inputs.push_back(in.name());
    taken.insert(in.name());
  }
  for (const auto& p : system.parameters()) taken.insert(p.name());
  for (const auto& d : system.definitions()) taken.insert(d.name());
  mechanism::Tree tree;
  if (!mechanism::BuildTree(system.mechanism(), path, inputs, &tree, diags) ||
      diags->size() > before) {
    return system;
  }
  v1::SystemSpec out;
  *out.mutable_parameters() = system.parameters();
  *out.mutable_inputs() = system.inputs();
  // The description's own constraints first: their field paths stay.
  *out.mutable_constraints() = system.constraints();
  mechanism::Emitter emitter(system.mechanism(), tree, path, std::move(taken), &out, diags);
  emitter.Kinematics();
  if (!emitter.failed()) emitter.Energies();
  if (!emitter.failed()) emitter.Loops();
  if (emitter.failed()) return system;
  const int generated = out.definitions_size();
  for (const auto& d : system.definitions()) *out.add_definitions() = d;
  out.set_kinetic_energy("mechanism_T");
  out.set_potential_energy(system.potential_energy().empty()
                               ? "mechanism_V"
                               : "mechanism_V + (" + system.potential_energy() + ")");
  const auto& forces = emitter.forces();
  const int nq = out.coordinates_size();
  if (system.generalized_forces_size() != 0 && system.generalized_forces_size() != nq) {
    Error(diags, "system.generalized_forces",
          "expected none or one per coordinate of the mechanism (" + std::to_string(nq) +
              ", in the order tether expand lists), found " +
              std::to_string(system.generalized_forces_size()));
    return system;
  }
  bool any = system.generalized_forces_size() > 0;
  for (const auto& f : forces) any = any || !f.IsZero();
  if (any) {
    for (int i = 0; i < nq; ++i) {
      std::string f = forces[static_cast<size_t>(i)].Text();
      if (system.generalized_forces_size() > 0) {
        const std::string& user = system.generalized_forces(i);
        if (!user.empty())
          f = forces[static_cast<size_t>(i)].IsZero() ? user : f + " + (" + user + ")";
      }
      out.add_generalized_forces(f);
    }
  }
  if (system.has_baumgarte()) *out.mutable_baumgarte() = system.baumgarte();
  *out.mutable_outputs() = system.outputs();
  PruneDefinitions(&out, generated);
  if (options.inline_definitions) InlineDefinitions(&out);
  return out;
}

}  // namespace tether
