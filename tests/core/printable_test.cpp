// printable() and quote() (engine/core/error.h): user text quoted by a message reaches the
// terminal without a control character, a bidirectional override or a byte that is not UTF-8.
#include <gtest/gtest.h>

#include <string>

#include "engine/core/error.h"

namespace mixlab {
namespace {

// True when the text holds a C0 control (newline and tab too), DEL or a C1 control's bytes.
bool has_raw_control(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x20 || b == 0x7F) return true;
    if (b == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F &&
        static_cast<unsigned char>(text[i + 1]) >= 0x80)
      return true;
  }
  return false;
}

TEST(Printable, PlainTextIsUnchanged) {
  EXPECT_EQ(printable("dense_1 (Dense)"), "dense_1 (Dense)");
  EXPECT_EQ(printable(""), "");
  EXPECT_EQ(printable(R"(C:\path\x1b "q")"), R"(C:\path\x1b "q")");
}

TEST(Printable, C0ControlsAndDelBecomeHexEscapes) {
  EXPECT_EQ(printable("evil\x1b]0;pwned\x07\x1b[2J"), "evil\\x1b]0;pwned\\x07\\x1b[2J");
  EXPECT_EQ(printable(std::string("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("line\nnext\ttab\rcr\x7f"), "line\\x0anext\\x09tab\\x0dcr\\x7f");
}

TEST(Printable, Utf8StaysButC1AndBidiControlsAreEscaped) {
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80"),
            "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80");
  EXPECT_EQ(printable("x\xc2\x9b"
                      "31m"),
            "x\\u009b31m");  // C1 CSI
  EXPECT_EQ(printable("a\xc2\x85"
                      "b"),
            "a\\u0085b");  // NEL
  EXPECT_EQ(printable("abc\xe2\x80\xae"
                      "def"),
            "abc\\u202edef");                                            // right-to-left override
  EXPECT_EQ(printable("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");  // isolates
  EXPECT_EQ(printable("p\xe2\x80\xa8q"), "p\\u2028q");                   // line separator
}

TEST(Printable, BytesThatAreNotUtf8BecomeHexEscapes) {
  EXPECT_EQ(printable("a\xff"
                      "b"),
            "a\\xffb");
  EXPECT_EQ(printable("\x80"), "\\x80");                             // stray continuation byte
  EXPECT_EQ(printable("\xc3"), "\\xc3");                             // truncated
  EXPECT_EQ(printable("\xe2\x80"), "\\xe2\\x80");                    // truncated
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                    // overlong '/'
  EXPECT_EQ(printable("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");           // overlong
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST(Printable, EscapingTwiceChangesNothing) {
  const std::string once = printable("\x1b[2J\xff\xc2\x9b\xe2\x80\xae ok");
  EXPECT_FALSE(has_raw_control(once));
  EXPECT_EQ(printable(once), once);
}

TEST(Printable, EveryByteValueComesOutWithoutARawControl) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_FALSE(has_raw_control(printable(all)));
}

TEST(Quote, PutsTheEscapedTextInSingleQuotes) {
  EXPECT_EQ(quote("relu"), "'relu'");
  EXPECT_EQ(quote("re\x1b[31mlu"), "'re\\x1b[31mlu'");
  EXPECT_EQ(quote(""), "''");
}

}  // namespace
}  // namespace mixlab
