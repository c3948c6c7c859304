// The service's log helpers alone: JSON escaping of the json log format,
// the escaping of client text (EscapeForMessage), the one UTF-8-safe cut
// (Utf8Prefix) and the throttle of refused-call lines, on an injected clock.
#include "service/logging.h"

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "engine/status.h"

namespace tether::service {
namespace {

TEST(LoggingTest, JsonEscapeKeepsEveryLineOneValidJsonLine) {
  EXPECT_EQ(JsonEscape("a\"b\\c\nd\x1b"), "a\\\"b\\\\c\\nd\\u001b");
  // Line separators and bidi overrides are escaped, other characters kept.
  EXPECT_EQ(JsonEscape("x\xe2\x80\xa8y\xe2\x80\xa9z\xe2\x80\xae!"), "x\\u2028y\\u2029z\\u202e!");
  EXPECT_EQ(JsonEscape("\xe2\x80\x8e\xe2\x80\x8f\xe2\x81\xa6\xe2\x81\xa9"),
            "\\u200e\\u200f\\u2066\\u2069");
  EXPECT_EQ(JsonEscape("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"),
            "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  // Bytes that are not UTF-8 (a lone continuation, a cut character, an
  // overlong form) become U+FFFD.
  EXPECT_EQ(JsonEscape("a\x80"
                       "b\xe2\x82"),
            "a\\ufffdb\\ufffd\\ufffd");
  EXPECT_EQ(JsonEscape("\xc0\xaf"), "\\ufffd\\ufffd");
}

TEST(LoggingTest, ClientTextIsEscapedAndCutAtACharacter) {
  EXPECT_EQ(EscapeForMessage("a\nb\x1b[31m\\"), "a\\nb\\x1b[31m\\\\");
  EXPECT_EQ(EscapeForMessage("evil\xe2\x80\xaetxt.exe"), "evil\\u{202e}txt.exe");
  EXPECT_EQ(EscapeForMessage("l1\xe2\x80\xa8l2"), "l1\\u{2028}l2");
  EXPECT_EQ(EscapeForMessage("bad\xff"), "bad\\xff");
  // 'a' + two-byte characters: a cut at an odd length backs up to a whole
  // character; at an even length it keeps the whole last one.
  std::string text = "a";
  for (int i = 0; i < 10; ++i) text += "\xc3\xa9";
  EXPECT_EQ(Utf8Prefix(text, 4), "a\xc3\xa9");
  EXPECT_EQ(Utf8Prefix(text, 5), "a\xc3\xa9\xc3\xa9");
  EXPECT_EQ(Utf8Prefix(text, 100), text);
  EXPECT_EQ(Utf8Prefix("\xf0\x9f\x98\x80\xf0\x9f\x98\x80", 7), "\xf0\x9f\x98\x80");
  EXPECT_EQ(Utf8Prefix("\xf0\x9f\x98\x80", 3), "");
  for (std::size_t n = 0; n <= text.size(); ++n) {
    EXPECT_TRUE(IsValidUtf8(Utf8Prefix(text, n))) << n;
    EXPECT_TRUE(IsValidUtf8(EscapeForMessage(text, n))) << n;
  }
  EXPECT_EQ(EscapeForMessage(text, 4), "a\xc3\xa9... (21 bytes)");
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
}

TEST(LoggingTest, ThrottleAdmitsAFewLinesASecondAndCountsTheRest) {
  using namespace std::chrono_literals;
  LogThrottle throttle(3);
  const auto t0 = LogThrottle::Clock::time_point{} + 100s;
  uint64_t suppressed = 99;
  int admitted = 0;
  for (int i = 0; i < 1000; ++i)
    admitted += throttle.Admit("refused", &suppressed, t0 + 1ms * (i % 500));
  EXPECT_EQ(admitted, 3);
  EXPECT_EQ(suppressed, 0u);
  // Another kind has its own budget.
  EXPECT_TRUE(throttle.Admit("other", &suppressed, t0));
  // The next window's first line says how many were dropped.
  ASSERT_TRUE(throttle.Admit("refused", &suppressed, t0 + 1s));
  EXPECT_EQ(suppressed, 997u);
  ASSERT_TRUE(throttle.Admit("refused", &suppressed, t0 + 1s));
  EXPECT_EQ(suppressed, 0u);
}

}  // namespace
}  // namespace tether::service
