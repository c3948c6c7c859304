// The tape computes the same values as the reference evaluator, reuses
// work slots, and handles outputs that are variables or constants.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <numbers>
#include <random>

#include <gtest/gtest.h>

#include "engine/internal/expr/native_tape.h"
#include "engine/internal/expr/parser.h"
#include "engine/internal/expr/tape.h"

namespace tether {
namespace {

using expr::Graph;
using expr::NodeId;

expr::Scope Scope3() {
  expr::Scope s;
  s.time_var = 0;
  s.coordinates = {{"x", 1}, {"y", 2}, {"z", 3}};
  return s;
}

std::vector<NodeId> ParseAll(Graph& g, const std::vector<std::string>& texts) {
  std::vector<NodeId> out;
  for (const auto& t : texts) {
    expr::ParseError e;
    auto r = expr::Parse(t, Scope3(), &g, &e);
    EXPECT_TRUE(r) << t << ": " << e.message;
    out.push_back(r.value_or(0));
  }
  return out;
}

TEST(TapeTest, MatchesReferenceEvaluation) {
  Graph g;
  std::vector<std::string> texts = {
      "x^2 + y^3 - z^-1 + x^0.5 + y^7 + x^-3",
      "sin(x)*cos(y) + exp(z)/(1 + x^2)",
      "atan2(y, x) + min(x, z) * max(y, 2) - abs(z) + sqrt(x*y*y)",
      "x^y + log(x + 3)",
      "t * x - tanh(y) + sinh(z) - cosh(x) + asin(x/4) + acos(y/4) + atan(z)",
      "x",
      "2.5",
      "t",
  };
  std::vector<NodeId> outs = ParseAll(g, texts);
  // Derivatives too (they share subexpressions with the values).
  for (size_t i = 0; i < 5; ++i) {
    outs.push_back(g.Diff(outs[i], 1));
    outs.push_back(g.Diff(outs[i], 2));
  }
  Tape tape = Tape::Compile(g, outs, 4);
  EXPECT_EQ(tape.num_outputs(), static_cast<int>(outs.size()));
  std::vector<double> work(static_cast<size_t>(tape.num_slots()));
  std::vector<double> out(outs.size());
  tape.InitWork(work.data());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(0.2, 1.5);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<double> vars = {dist(rng), dist(rng), dist(rng), dist(rng)};
    std::copy(vars.begin(), vars.end(), work.begin());
    tape.Eval(work.data(), out.data());
    for (size_t k = 0; k < outs.size(); ++k) {
      const double ref = g.Evaluate(outs[k], vars);
      EXPECT_NEAR(out[k], ref, 1e-13 * std::max(1.0, std::fabs(ref))) << "output " << k;
    }
  }
}

// Zeros of both signs, subnormals, huge values, infinities, NaN and
// ordinary values: the operands the bit-for-bit tests try.
constexpr double kSpecialValues[] = {0.0,
                                     -0.0,
                                     1.0,
                                     -1.0,
                                     0.5,
                                     -0.5,
                                     2.0,
                                     3.7,
                                     -2.2,
                                     1e-310,
                                     -1e-310,
                                     1e308,
                                     -1e308,
                                     std::numeric_limits<double>::infinity(),
                                     -std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN(),
                                     std::numbers::pi,
                                     0.9999,
                                     -1e-20,
                                     710.0,
                                     -745.5};

// Every operation of the table (operations.h), on variables and on the
// previous instruction's result (the register), gives the bits of
// expr::Apply on the operands in the order the instruction reads them,
// including at zeros of both signs, subnormals, huge values, infinities and
// NaN. (A commutative instruction may read them in the other order than the
// graph's node: the value is the same, not always the bits, e.g. of
// min(0, -0).) A new row is checked without being listed here.
TEST(TapeTest, EveryTableOperationGivesTheBitsOfApply) {
  using expr::Op;
  const auto& values = kSpecialValues;
  auto same_bits = [](double p, double q) { return std::memcmp(&p, &q, sizeof p) == 0; };
  for (size_t i = expr::kFirstOperation; i < std::size(expr::kOperationInfo); ++i) {
    const Op op = static_cast<Op>(i);
    const bool unary = expr::IsUnary(op);
    Graph g;
    const NodeId x = g.Var(1), y = g.Var(2), one = g.Var(3);
    const NodeId direct = unary ? g.Unary(op, x) : g.Binary(op, x, y);
    // x / 1 is x exactly, computed by an instruction that does not fuse; op
    // then reads its first operand from the register (the instruction after
    // it keeps it from being the tape's last).
    const NodeId from_register = g.Div(x, one);
    const NodeId chained = unary ? g.Unary(op, from_register) : g.Binary(op, from_register, y);
    const NodeId after = g.Div(y, one);
    ASSERT_EQ(g.node(direct).op, op) << expr::OpName(op);
    ASSERT_EQ(g.node(chained).op, op) << expr::OpName(op);
    for (bool register_operand : {false, true}) {
      std::vector<NodeId> outs = {direct};
      if (register_operand) outs = {chained, after};
      Tape tape = Tape::Compile(g, outs, 4);
      const Tape::Instruction ins = tape.code()[register_operand ? 1 : 0];
      ASSERT_EQ(static_cast<int>(ins.code),
                static_cast<int>(Tape::CodeOf(op)) + (register_operand ? Tape::kFromAcc : 0))
          << expr::OpName(op);
      std::vector<double> work(static_cast<size_t>(tape.num_slots()));
      tape.InitWork(work.data());
      for (double a : values) {
        for (double b : values) {
          if (unary && b != values[0]) continue;
          work[1] = a;
          work[2] = b;
          work[3] = 1.0;
          tape.Eval(work.data());
          const double out = tape.Outputs(work.data())[0];
          // The instruction's operands: x (slot 1, or the register) and y.
          const double first = register_operand || ins.a == 1 ? a : b;
          const double second = ins.b == 1 ? a : b;
          const double ref = expr::Apply(op, first, unary ? 0.0 : second);
          EXPECT_TRUE(same_bits(out, ref))
              << expr::OpName(op) << "(" << first << ", " << second << "): tape " << out
              << ", Apply " << ref << (register_operand ? " (operand from the register)" : "");
        }
      }
    }
  }
}

TEST(TapeTest, ReusesWorkSlotsByLiveness) {
  Graph g;
  // A long chain: each temporary dies right after its use.
  std::string chain = "x";
  for (int i = 0; i < 200; ++i) chain = "sin(" + chain + ") + y";
  std::vector<NodeId> outs = ParseAll(g, {chain});
  Tape tape = Tape::Compile(g, outs, 4);
  EXPECT_GE(tape.num_instructions(), 400u);
  // vars + constants + a handful of live temporaries.
  EXPECT_LT(tape.num_slots(), 12);
  std::vector<double> work(static_cast<size_t>(tape.num_slots()));
  tape.InitWork(work.data());
  work[1] = 0.3;
  work[2] = 0.1;
  double out = 0;
  tape.Eval(work.data(), &out);
  EXPECT_DOUBLE_EQ(out, g.Evaluate(outs[0], {0, 0.3, 0.1, 0}));
}

// Compiles `texts` into one tape (one graph, so shared subexpressions are
// shared) and checks every output against the reference evaluator.
// Variables are drawn uniformly from [lo, hi]. Repeated texts are the same
// node, so they make repeated outputs.
void ExpectTapeMatchesReference(const std::vector<std::string>& texts, unsigned seed,
                                double lo = -1.5, double hi = 1.5) {
  Graph g;
  std::vector<NodeId> outs = ParseAll(g, texts);
  Tape tape = Tape::Compile(g, outs, 4);
  ASSERT_EQ(tape.num_outputs(), static_cast<int>(outs.size()));
  std::vector<double> work(static_cast<size_t>(tape.num_slots()));
  tape.InitWork(work.data());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> vars = {dist(rng), dist(rng), dist(rng), dist(rng)};
    std::copy(vars.begin(), vars.end(), work.begin());
    tape.Eval(work.data());
    const double* out = tape.Outputs(work.data());
    for (size_t k = 0; k < outs.size(); ++k) {
      const double ref = g.Evaluate(outs[k], vars);
      EXPECT_NEAR(out[k], ref, 1e-13 * std::max(1.0, std::fabs(ref)))
          << texts[k] << " (output " << k << " of " << texts.size() << ")";
    }
  }
}

TEST(TapeTest, OutputsRepeatedInPlaceAndChainedThroughTheRegister) {
  // The same computed node twice (written in place once, then copied), a
  // variable and a constant twice, and a chain in which every operation
  // takes the previous result (non-commutative ones on either side).
  ExpectTapeMatchesReference(
      {"x*y + z", "x", "1.5", "((x*y - z) / y - x) / z", "sin(cos(exp(x)))", "y - (x * z)",
       "y + (x * z)", "x*y + z", "x", "1.5", "sin(cos(exp(x)))"},
      11, 0.3, 1.7);
}

TEST(TapeTest, FusedOperationsMatchReferenceEvaluation) {
  // Each fused pattern on its own (so the intermediate has one reader and
  // is fused), inside larger expressions, and all together in one tape,
  // where shared intermediates have several readers and must not be fused.
  const std::vector<std::string> texts = {"x^2 + y",
                                          "y + x^2",
                                          "(x - y)^2",
                                          "x*y + z",
                                          "z + x*y",
                                          "(x - y)*z",
                                          "z*(x - y)",
                                          "(x + y)*z",
                                          "((x - y)^2 + (y - z)^2 - 1)/2",
                                          "(x*y + z) * (x*y - z)",
                                          "(x - y)^2 + (x - y)",
                                          "x*y + z + sin(x*y)",
                                          "(x + y)*z + (x + y)",
                                          "t*x^2 + y*z",
                                          "(x^2 + y^2 - 1)/2",
                                          "x^2 + y^2 + z^2",
                                          "(x*y + z*t)*(x - y)"};
  unsigned seed = 1;
  for (const std::string& t : texts) ExpectTapeMatchesReference({t}, seed++);
  ExpectTapeMatchesReference(texts, seed);
}

TEST(TapeTest, FusesIntoAnInstructionThatReusesTheSlot) {
  // The circle's constraint: x^2 lands in a temporary, y^2 in another that
  // the sum then overwrites; both squares fuse into their readers, so the
  // tape is y^2 + x^2, ([sum] - 1) * 0.5.
  Graph g;
  std::vector<NodeId> outs = ParseAll(g, {"(x^2 + y^2 - 1)/2"});
  Tape tape = Tape::Compile(g, outs, 4);
  EXPECT_EQ(tape.num_instructions(), 2u);
  ExpectTapeMatchesReference({"(x^2 + y^2 - 1)/2"}, 99);
}

// Every output of `texts`, compiled into one tape, equals the reference
// evaluator's bit for bit at a few points; returns the tape's length.
size_t ExpectTapeBitIdentical(const std::vector<std::string>& texts) {
  Graph g;
  std::vector<NodeId> outs = ParseAll(g, texts);
  Tape tape = Tape::Compile(g, outs, 4);
  std::vector<double> work(static_cast<size_t>(tape.num_slots()));
  tape.InitWork(work.data());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> dist(-1.5, 1.5);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> vars = {dist(rng), dist(rng), dist(rng), dist(rng)};
    std::copy(vars.begin(), vars.end(), work.begin());
    tape.Eval(work.data());
    const double* out = tape.Outputs(work.data());
    for (size_t k = 0; k < outs.size(); ++k) {
      const double ref = g.Evaluate(outs[k], vars);
      EXPECT_EQ(std::memcmp(&out[k], &ref, sizeof ref), 0)
          << texts[k] << ": tape " << out[k] << ", reference " << ref;
    }
  }
  return tape.num_instructions();
}

TEST(TapeTest, FusesADifferenceWithItsNegation) {
  // A distance's Jacobian: d = x - y and -d as outputs, -d needed after
  // other work: one instruction writes both.
  EXPECT_EQ(ExpectTapeBitIdentical({"x - y", "sin(z)", "-(x - y)"}), 2u);
  // The negation of a variable or of a product stays a negation.
  ExpectTapeBitIdentical({"x*y", "z", "-(x*y)", "-z", "-(z - x)"});
}

TEST(TapeTest, FusesSquaresIntoTheirSums) {
  // A squared distance whose differences are outputs too (a distance
  // constraint with its Jacobian): d1 (and -d1), d1^2, d2 (and -d2),
  // d2^2 + d1^2 -> the square moves into the sum. The bits are those of
  // the unfused operations (the reference evaluator's pow may differ from
  // x * x in the last place, so the check is written out).
  Graph g;
  std::vector<NodeId> outs =
      ParseAll(g, {"((x - y)^2 + (z - t)^2 - 1)/2", "x - y", "-(x - y)", "z - t", "-(z - t)"});
  Tape tape = Tape::Compile(g, outs, 4);
  EXPECT_EQ(tape.num_instructions(), 4u);
  std::vector<double> work(static_cast<size_t>(tape.num_slots()));
  tape.InitWork(work.data());
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> dist(-1.5, 1.5);
  for (int trial = 0; trial < 20; ++trial) {
    for (int k = 0; k < 4; ++k) work[static_cast<size_t>(k)] = dist(rng);
    const double t = work[0], x = work[1], y = work[2], z = work[3];
    tape.Eval(work.data());
    const double* out = tape.Outputs(work.data());
    const double d1 = x - y, s1 = d1 * d1, d2 = z - t, s = d2 * d2 + s1;
    const double expected[] = {(s - 1) * 0.5, d1, -d1, d2, -d2};
    for (int k = 0; k < 5; ++k)
      EXPECT_EQ(std::memcmp(&out[k], &expected[k], sizeof(double)), 0) << k << ": " << out[k];
  }
  // A square read twice, or whose operand changes in between, stays.
  ExpectTapeMatchesReference(
      {"x^2 + y^2 + sin(x^2)", "(x*y)^2 + (x*y + 1)^2", "sin(x)^2 + t^2", "x^2 + (y - z)^2"}, 5);
}

TEST(TapeTest, FusesSumsOfProductsOfDifferences) {
  // H of a distance constraint: (a - b) c terms summed from the register:
  // one instruction per term after the first.
  EXPECT_EQ(ExpectTapeBitIdentical({"(x - y)*x + (y - x)*y + (z - t)*z + (t - z)*t"}), 4u);
  // A sum whose other operand is not the previous result is not fused.
  ExpectTapeBitIdentical({"(x - y)*z + sin(x)*(y - z)*x", "(x - y)*z + z", "x*y + (y - z)*t"});
}

TEST(TapeTest, RepeatedEvaluationIsBitIdentical) {
  Graph g;
  std::vector<NodeId> outs = ParseAll(g, {"exp(sin(x*y)) / (1 + z^2)"});
  Tape tape = Tape::Compile(g, outs, 4);
  std::vector<double> w1(static_cast<size_t>(tape.num_slots())), w2 = w1;
  tape.InitWork(w1.data());
  tape.InitWork(w2.data());
  for (auto* w : {&w1, &w2}) {
    (*w)[1] = 0.123;
    (*w)[2] = 4.56;
    (*w)[3] = -7.89;
  }
  double a = 0, b = 0;
  tape.Eval(w1.data(), &a);
  tape.Eval(w2.data(), &b);
  tape.Eval(w2.data(), &b);
  EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0);
}

// ---------------------------------------------------------------------------
// The machine code (native_tape.h) against the interpreter: the same bits in
// every output, for every code (plain, from the register, not stored), on
// ordinary values and on zeros of both signs, subnormals, huge values,
// infinities and NaN.

// `texts`, their derivatives by x and y, `plain` (not differentiated: a
// derivative reading an intermediate keeps it from being fused), and
// enough padding outputs (each a few instructions) that the tape is long
// enough to be translated.
Tape LongTape(Graph& g, const std::vector<std::string>& texts, std::vector<NodeId>* outs,
              const std::vector<std::string>& plain = {}) {
  *outs = ParseAll(g, texts);
  const size_t n = outs->size();
  for (size_t i = 0; i < n; ++i) {
    outs->push_back(g.Diff((*outs)[i], 1));
    outs->push_back(g.Diff((*outs)[i], 2));
  }
  for (NodeId id : ParseAll(g, plain)) outs->push_back(id);
  std::vector<std::string> padding;
  for (int k = 0; k < 200; ++k) padding.push_back("x*y*" + std::to_string(k + 2) + " - z");
  for (NodeId id : ParseAll(g, padding)) outs->push_back(id);
  return Tape::Compile(g, *outs, 4);
}

// Eval (the machine code) and Interpret give the same bits in every output
// at every combination of `values` for x and y (z and t cycling through
// them too).
void ExpectNativeBitsOfInterpreter(const Tape& tape, const std::vector<double>& values) {
  ASSERT_EQ(tape.native(), NativeTape::kSupported);
  std::vector<double> native(static_cast<size_t>(tape.num_slots())), interpreted = native;
  tape.InitWork(native.data());
  tape.InitWork(interpreted.data());
  const size_t n = values.size();
  int differing = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      const double vars[] = {values[(7 * i + j) % n], values[i], values[j],
                             values[(i + 3 * j) % n]};
      std::copy(std::begin(vars), std::end(vars), native.begin());
      std::copy(std::begin(vars), std::end(vars), interpreted.begin());
      tape.Eval(native.data());
      tape.Interpret(interpreted.data());
      const double* a = tape.Outputs(native.data());
      const double* b = tape.Outputs(interpreted.data());
      for (int k = 0; k < tape.num_outputs(); ++k) {
        if (std::memcmp(&a[k], &b[k], sizeof(double)) != 0 && ++differing <= 5) {
          ADD_FAILURE() << "output " << k << " at (t, x, y, z) = (" << vars[0] << ", " << vars[1]
                        << ", " << vars[2] << ", " << vars[3] << "): machine code " << a[k]
                        << ", interpreter " << b[k];
        }
      }
    }
  }
  EXPECT_EQ(differing, 0);
}

TEST(TapeTest, MachineCodeGivesTheInterpretersBitsForEveryCode) {
  if (!NativeTape::kSupported) GTEST_SKIP() << "no machine code in this build";
  // Every table operation, on variables and on the previous result; the
  // fused patterns of the tests above; powers by constants.
  std::vector<std::string> texts = {
      "x^2 + y^3 - z^-1 + x^0.5 + y^7 + x^-3",
      "sin(x)*cos(y) + exp(z)/(1 + x^2)",
      "atan2(y, x) + min(x, z) * max(y, 2) - abs(z) + sqrt(x*y*y)",
      "x^y + log(x + 3)",
      "t * x - tanh(y) + sinh(z) - cosh(x) + asin(x/4) + acos(y/4) + atan(z) + tan(x)",
      "x^2 + y",
      "(x - y)^2",
      "x*y + z",
      "(x - y)*z",
      "(x + y)*z",
      "((x - y)^2 + (y - z)^2 - 1)/2",
      "(x*y + z) * (x*y - z)",
      "x^2 + y^2 + z^2",
      "(x - y)*x + (y - x)*y + (z - t)*z + (t - z)*t",
      "x - y",
      "-(x - y)",
      "sin(z)",
      "x",
      "1.5",
      "-(x*y)",
      "-z"};
  for (size_t i = expr::kFirstOperation; i < std::size(expr::kOperationInfo); ++i) {
    const expr::Op op = static_cast<expr::Op>(i);
    if (expr::kOperationInfo[i].syntax != expr::Syntax::kFunction) continue;
    const std::string f = expr::OpName(op);
    const bool unary = expr::IsUnary(op);
    texts.push_back(f + (unary ? "(x)" : "(x, y)"));
    texts.push_back(f + (unary ? "(x / z)" : "(x / z, y)") + " + y");  // from the register
  }
  // Fused squares need intermediates that nothing else reads: a tape of
  // their own.
  Graph g, g2;
  std::vector<NodeId> outs, outs2;
  const Tape tape = LongTape(g, texts, &outs);
  const Tape fused = LongTape(g2, {}, &outs2,
                              {"((x - y)^2 + (z - t)^2 - 1)/2", "x - y", "-(x - y)", "z - t",
                               "-(z - t)", "(z*t - x)^2 + 1"});
  // The tapes hold every code at least once (else this test would not
  // check it).
  std::vector<char> seen(static_cast<size_t>(Tape::Code::kEnd), 0);
  for (const Tape* t : {&tape, &fused}) {
    for (const Tape::Instruction& ins : t->code()) {
      const int code = static_cast<uint8_t>(ins.code) % Tape::kFromAcc;
      if (code < static_cast<int>(Tape::Code::kEnd)) seen[static_cast<size_t>(code)] = 1;
    }
  }
  for (size_t c = 0; c < seen.size(); ++c)
    EXPECT_TRUE(seen[c]) << "code " << c << " not on the tapes";
  const std::vector<double> values(std::begin(kSpecialValues), std::end(kSpecialValues));
  ExpectNativeBitsOfInterpreter(tape, values);
  ExpectNativeBitsOfInterpreter(fused, values);
}

TEST(TapeTest, MachineCodeOnlyForLongTapes) {
  Graph g;
  const Tape short_tape = Tape::Compile(g, ParseAll(g, {"sin(x)*y + z"}), 4);
  EXPECT_FALSE(short_tape.native());
  std::vector<NodeId> outs;
  const Tape long_tape = LongTape(g, {"sin(x)*y + z"}, &outs);
  EXPECT_GE(long_tape.num_instructions(), NativeTape::kMinInstructions);
  EXPECT_EQ(long_tape.native(), NativeTape::kSupported);
  // A copy shares the code and gives the same bits.
  const Tape copy = long_tape;
  std::vector<double> w1(static_cast<size_t>(long_tape.num_slots())), w2 = w1;
  long_tape.InitWork(w1.data());
  copy.InitWork(w2.data());
  const double vars[] = {0.1, 0.2, -0.3, 0.4};
  for (auto* w : {&w1, &w2}) std::copy(std::begin(vars), std::end(vars), w->begin());
  long_tape.Eval(w1.data());
  copy.Eval(w2.data());
  EXPECT_EQ(std::memcmp(long_tape.Outputs(w1.data()), copy.Outputs(w2.data()),
                        sizeof(double) * static_cast<size_t>(long_tape.num_outputs())),
            0);
}

}  // namespace
}  // namespace tether
