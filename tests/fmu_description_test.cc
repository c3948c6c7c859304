// The FMU's model description writer (server/fmu/model_description.h):
// XML escaping (checked by parsing the result back with tinyxml2), model
// identifiers, GUIDs, and the variable list of each example.
#include "fmu/model_description.h"

#include <tinyxml2.h>

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "engine/session_export.h"
#include "engine/spec_json.h"

namespace tether::fmu {
namespace {

TEST(EscapeXml, EscapesMarkupQuotesAndControlCharacters) {
  EXPECT_EQ(EscapeXml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
  EXPECT_EQ(EscapeXml("tab\tnl\ncr\r"), "tab&#9;nl&#10;cr&#13;");
  EXPECT_EQ(EscapeXml(std::string("nul\0bell\x07"
                                  "del\x7f",
                                  13)),
            "nul?bell?del?");
  EXPECT_EQ(EscapeXml("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");  // UTF-8 unchanged
  EXPECT_EQ(EscapeXml(""), "");
}

TEST(EscapeXml, RoundTripsThroughAnXmlParserInAttributesAndText) {
  const std::string text = "x < 1 && y > \"2\" or 'z'\tand\nnew line\r&amp; literal";
  const std::string xml =
      "<r a=\"" + EscapeXml(text) + "\" b='" + EscapeXml(text) + "'>" + EscapeXml(text) + "</r>";
  tinyxml2::XMLDocument doc(true, tinyxml2::PRESERVE_WHITESPACE);
  ASSERT_EQ(doc.Parse(xml.c_str()), tinyxml2::XML_SUCCESS) << xml;
  const auto* r = doc.FirstChildElement("r");
  EXPECT_EQ(std::string(r->Attribute("a")), text);
  EXPECT_EQ(std::string(r->Attribute("b")), text);
  // Text content: a carriage return reaches the parser as a character
  // reference, which tinyxml2 keeps as written.
  EXPECT_EQ(std::string(r->GetText()), text);
}

TEST(ModelIdentifier, IsACIdentifier) {
  EXPECT_EQ(ModelIdentifier("pendulum"), "pendulum");
  EXPECT_EQ(ModelIdentifier("my-model.v2"), "my_model_v2");
  EXPECT_EQ(ModelIdentifier("2link"), "_2link");
  EXPECT_EQ(ModelIdentifier(""), "tether_model");
  EXPECT_EQ(ModelIdentifier("a b\xc3\xa9"), "a_b__");
}

v1::SimulationSpec Example(const std::string& name) {
  v1::SimulationSpec spec;
  Status s = LoadSpecFile(std::string(TETHER_SOURCE_DIR) + "/examples/" + name, &spec);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return spec;
}

TEST(Guid, IsStableAndFollowsTheDescription) {
  v1::SimulationSpec spec = Example("pendulum_force_input.json");
  const std::string g = Guid(spec);
  EXPECT_EQ(g.size(), 38u);
  EXPECT_EQ(g.front(), '{');
  EXPECT_EQ(g[9], '-');
  EXPECT_EQ(g, Guid(Example("pendulum_force_input.json")));
  spec.mutable_system()->mutable_parameters(0)->set_value(2);
  EXPECT_NE(Guid(spec), g);
}

TEST(ModelDescriptionXml, EveryExampleGivesWellFormedXmlWithUniqueReferences) {
  for (const char* name : {"circle_pendulum.json", "circle_pendulum_inconsistent.json",
                           "pendulum_force_input.json", "seed004_point_mass.json"}) {
    SCOPED_TRACE(name);
    auto sim = Simulation::Create(Example(name));
    ASSERT_TRUE(sim.ok()) << sim.status().ToString();
    const std::string xml = ModelDescriptionXml(**sim, "m", "a <model> & \"name\"");
    tinyxml2::XMLDocument doc;
    ASSERT_EQ(doc.Parse(xml.c_str()), tinyxml2::XML_SUCCESS) << doc.ErrorStr();
    const auto* root = doc.FirstChildElement("fmiModelDescription");
    ASSERT_NE(root, nullptr);
    EXPECT_STREQ(root->Attribute("modelName"), "a <model> & \"name\"");
    EXPECT_EQ(std::string(root->Attribute("guid")), Guid((*sim)->spec()));
    std::set<unsigned> refs;
    std::set<std::string> names;
    size_t n = 0;
    for (const auto* sv =
             root->FirstChildElement("ModelVariables")->FirstChildElement("ScalarVariable");
         sv != nullptr; sv = sv->NextSiblingElement("ScalarVariable")) {
      EXPECT_EQ(sv->UnsignedAttribute("valueReference", 99999), n);
      refs.insert(sv->UnsignedAttribute("valueReference"));
      names.insert(sv->Attribute("name"));
      ++n;
    }
    const auto vars = Variables(**sim);
    // The Reals, tether.server, tether.certificate and tether.project_start.
    EXPECT_EQ(n, vars.size() + 3);
    EXPECT_EQ(names.count("tether.project_start"), 1u);
    EXPECT_EQ(names.count("tether.certificate"), 1u);
    EXPECT_EQ(refs.size(), n);
    EXPECT_EQ(names.size(), n);
    const auto& coords = (*sim)->coordinate_names();
    EXPECT_EQ(names.count("q." + coords[0]), 1u);
    EXPECT_EQ(names.count("v." + coords[0]), 1u);
  }
}

}  // namespace
}  // namespace tether::fmu
