// SPDX-License-Identifier: Apache-2.0
// proxy/wire/response_scrubber: responses searched for every spelling of every secret as they
// stream (SPEC §19a). The expected outputs are made here by a plain search over the whole text
// (std::string::find for each spelling), never by the code under test.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "proxy/wire/response_scrubber.h"
#include "table/secret_spellings.h"

using namespace boxproxy;

namespace {

struct Named {
  std::string name;
  std::string value;
  std::string placeholder;
};

std::shared_ptr<const ScrubPatterns> patterns_of(const std::vector<Named>& secrets) {
  std::vector<ScrubSecret> given;
  for (const Named& s : secrets) given.push_back({s.name, s.value, s.placeholder});
  return std::make_shared<const ScrubPatterns>(given);
}

// The whole text with every occurrence of every spelling starred: what the scrubber must give
// when nothing is flushed in between.
std::string starred_reference(std::string text, const std::vector<Named>& secrets) {
  std::vector<bool> hit(text.size());
  for (const Named& s : secrets) {
    for (const SecretText& spelling : secret_spellings(s.value)) {
      for (std::size_t at = text.find(spelling.view()); at != std::string::npos;
           at = text.find(spelling.view(), at + 1)) {
        for (std::size_t i = 0; i < spelling.size(); ++i) hit[at + i] = true;
      }
    }
  }
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (hit[i]) text[i] = '*';
  }
  return text;
}

// `text` fed in the pieces `cuts` makes (positions, increasing), then flushed.
std::string fed(ResponseScrubber& scrubber, std::string_view text, const std::vector<std::size_t>& cuts) {
  std::string out;
  std::size_t at = 0;
  for (const std::size_t cut : cuts) {
    scrubber.feed(text.substr(at, cut - at), out);
    at = cut;
  }
  scrubber.feed(text.substr(at), out);
  scrubber.flush(out);
  return out;
}

std::string base64_std(std::string_view bytes) { return base64_encode(bytes, Base64Alphabet::standard, true); }

const Named kGithub{"github", "ghp_R3alT0kenValue0123456789", "bxp_github_00112233445566778899aabbccddeeff"};
const Named kDb{"db", "p@ss/w0rd+\"<&>'x", "bxp_db_ffeeddccbbaa99887766554433221100"};

}  // namespace

TEST_CASE("scrubber: every spelling, split across two chunks at every point, is starred byte for byte") {
  const auto patterns = patterns_of({kGithub, kDb});
  for (const Named& secret : {kGithub, kDb}) {
    std::vector<std::string> texts;
    for (const SecretText& spelling : secret_spellings(secret.value)) {
      texts.push_back("{\"echo\":\"" + std::string(spelling.view()) + "\"}\n");
    }
    texts.push_back("Location: /x?k=" + base64_std("user:" + secret.value) + "&y=1");
    for (const std::string& text : texts) {
      const std::string expected = starred_reference(text, {secret});
      CHECK(expected != text);
      for (std::size_t cut = 0; cut <= text.size(); ++cut) {
        CAPTURE(text);
        CAPTURE(cut);
        ResponseScrubber scrubber(patterns);
        const std::string out = fed(scrubber, text, {cut});
        CHECK(out == expected);
        CHECK(out.size() == text.size());
        CHECK(scrubber.found().names() == std::vector<std::string>{secret.name});
      }
    }
  }
}

TEST_CASE("scrubber: random texts in random pieces agree with a plain search of the whole") {
  // Small alphabets make overlaps, suffixes and near misses common.
  const std::vector<Named> secrets{{"a", "abcabcabcabd", ""}, {"b", "cabdcabdcabd", ""}, {"c", "aaaaaaaaaaaa", ""}};
  const auto patterns = patterns_of(secrets);
  std::mt19937 random(7);
  for (int round = 0; round < 400; ++round) {
    std::string text;
    const std::size_t size = random() % 300;
    for (std::size_t i = 0; i < size; ++i) text.push_back("abcd \n"[random() % (round % 2 == 0 ? 4 : 6)]);
    std::vector<std::size_t> cuts;
    for (std::size_t at = random() % 20; at < text.size(); at += 1 + random() % 20) cuts.push_back(at);
    ResponseScrubber scrubber(patterns);
    CAPTURE(text);
    CHECK(fed(scrubber, text, cuts) == starred_reference(text, secrets));
  }
}

TEST_CASE("scrubber: texts of pieces of spellings, long values, agree with a plain search of the whole") {
  // Long values make long windows for the matcher's skip (MultiMatcher::skip_from_start): a text of
  // halves and pieces of their spellings, hex and base64 digits and bytes above 0x7f puts a
  // spelling's start at every place within a window, and across pieces.
  const std::vector<Named> secrets{{"k", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""},
                                   {"d", "0123456789abcdef0123456789abcdef01234567", ""}};
  std::vector<std::string> spellings;
  for (const Named& s : secrets) {
    for (const SecretText& spelling : secret_spellings(s.value)) spellings.emplace_back(spelling.view());
  }
  const auto patterns = patterns_of(secrets);
  std::mt19937 random(35);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    for (int part = static_cast<int>(random() % 30); part > 0; --part) {
      const std::string& spelling = spellings[random() % spellings.size()];
      switch (random() % 5) {
        case 0: text += spelling; break;
        case 1: text += spelling.substr(0, spelling.size() / 2) + spelling; break;
        case 2: text += spelling.substr(random() % spelling.size(), random() % spelling.size()); break;
        case 3: for (int i = static_cast<int>(random() % 60); i > 0; --i) text += "0123456789abcdefXY/+=\" "[random() % 23]; break;
        default: for (int i = static_cast<int>(random() % 8); i > 0; --i) text += static_cast<char>(random() % 256); break;
      }
    }
    std::vector<std::size_t> cuts;
    for (std::size_t at = random() % 50; at < text.size(); at += 1 + random() % (round % 2 == 0 ? 7 : 400)) {
      cuts.push_back(at);
    }
    ResponseScrubber scrubber(patterns);
    CAPTURE(round);
    CHECK(fed(scrubber, text, cuts) == starred_reference(text, secrets));
  }
}

namespace {

// A sink that tells how the scrubber gave its output: bytes passed where they lay, or added.
struct RecordingSink final : BodySink {
  std::string_view piece;
  std::size_t at = 0;
  std::string out;
  std::size_t passed = 0;
  std::size_t added = 0;
  void add(std::string_view bytes) override {
    out.append(bytes);
    added += bytes.size();
  }
  void pass(std::size_t count) override {
    out.append(piece.substr(at, count));
    at += count;
    passed += count;
  }
  void drop(std::size_t count) override { at += count; }
};

}  // namespace

TEST_CASE("scrubber: a body that holds no spelling is passed where it lies; one that does is starred") {
  const auto patterns = patterns_of({kGithub, kDb});
  std::string body;
  while (body.size() < 16384) body += "{\"id\":\"0a1b2c3d4e5f60718293a4b5c6d7e8f9\",\"note\":\"the box and the origin\"},\n";
  ResponseScrubber scrubber(patterns);
  RecordingSink sink;
  for (std::size_t at = 0; at < body.size(); at += 4096) {
    sink.piece = std::string_view(body).substr(at, 4096);
    sink.at = 0;
    scrubber.feed(sink.piece, sink);
    CHECK(sink.at == sink.piece.size());  // every byte of the piece passed, or dropped (held)
  }
  scrubber.flush(sink.out);
  CHECK(sink.out == body);
  // Only what was held at each piece's end was copied: at most the hold limit a piece.
  CHECK(sink.added <= 4 * patterns->hold_limit());
  CHECK(sink.passed + sink.added == body.size());

  const std::string leaked = "{\"echo\":\"" + kGithub.value + "\"}\n" + body.substr(0, 4000);
  ResponseScrubber again(patterns);
  RecordingSink starred;
  starred.piece = leaked;
  again.feed(leaked, starred);
  again.flush(starred.out);
  CHECK(starred.out == starred_reference(leaked, {kGithub}));
  CHECK(again.found().names() == std::vector<std::string>{"github"});
}

TEST_CASE("scrubber: interleaved and overlapping secrets are all starred, and each is named once") {
  const Named left{"left", "abcdefghijklmn", ""};
  const Named right{"right", "ijklmnopqrstuvwx", ""};
  const auto patterns = patterns_of({left, right, kGithub});
  const std::string text = "1 abcdefghijklmnopqrstuvwx 2 " + kGithub.value + "abcdefghijklmn" + kGithub.value + " 3";
  ResponseScrubber scrubber(patterns);
  const std::string out = fed(scrubber, text, {5, 6, 30, 31, 40});
  CHECK(out == "1 ************************ 2 " + std::string(kGithub.value.size() * 2 + 14, '*') + " 3");
  CHECK(scrubber.found().names() == std::vector<std::string>{"left", "right", "github"});
}

TEST_CASE("scrubber: a value across a flush is not caught (the documented limit)") {
  const auto patterns = patterns_of({kGithub});
  const std::string text = "x " + kGithub.value + " y";
  ResponseScrubber scrubber(patterns);
  std::string out;
  scrubber.feed(text.substr(0, 10), out);
  scrubber.flush(out);  // the origin paused past 50 ms here
  scrubber.feed(text.substr(10), out);
  scrubber.flush(out);
  CHECK(out == text);
  CHECK(scrubber.found().empty());
}

TEST_CASE("scrubber: what is held is the trailing printable run, capped, whatever the secrets are") {
  // Same length, different bytes (one with escapes, one without, one that the text begins): the
  // hold must be the same byte for byte at every step, or it would tell the box about the key.
  const Named a{"a", "AAAAAAAAAAAAAAAAAAAAAAA1", ""};
  const Named b{"b", "p@ss/w0rd+\"<&>'x12345678", ""};
  const Named c{"c", "hello-world-what-is-this", ""};
  REQUIRE(a.value.size() == b.value.size());
  REQUIRE(a.value.size() == c.value.size());
  ResponseScrubber sa(patterns_of({a})), sb(patterns_of({b})), sc(patterns_of({c}));
  const std::string text = "hello world\nhello-world-what-is-th" + std::string(200, 'Z') + " p@ss/w0rd+ \t" +
                           std::string(10, 'q');
  std::string oa, ob, oc;
  for (std::size_t i = 0; i < text.size(); i += 3) {
    const std::string_view piece = std::string_view(text).substr(i, 3);
    sa.feed(piece, oa);
    sb.feed(piece, ob);
    sc.feed(piece, oc);
    CAPTURE(i);
    CHECK(sa.held() == sb.held());
    CHECK(sa.held() == sc.held());
    CHECK(oa.size() == ob.size());
    CHECK(oa.size() == oc.size());
    // The run: nothing before the last space or control byte, at most the limit.
    const std::string so_far = text.substr(0, std::min(text.size(), i + 3));
    const std::size_t space = so_far.find_last_of(" \t\n");
    const std::size_t run = space == std::string::npos ? so_far.size() : so_far.size() - space - 1;
    CHECK(sa.held().size() == std::min(run, longest_spelling_bound(a.value.size()) - 1));
  }
  // A 24-byte secret holds at most 143 bytes: the long run of Z was released as it came.
  CHECK(patterns_of({a})->hold_limit() == 143);
}

TEST_CASE("scrubber: a stream never stalls: a line ending releases everything before it") {
  const auto patterns = patterns_of({kGithub, kDb});
  ResponseScrubber scrubber(patterns);
  std::string out;
  scrubber.feed("data: {\"n\":1}\n\n", out);
  CHECK(out == "data: {\"n\":1}\n\n");
  CHECK(scrubber.held().empty());
  scrubber.feed("data: tok", out);
  CHECK(scrubber.held() == "tok");
  scrubber.flush(out);
  CHECK(out == "data: {\"n\":1}\n\ndata: tok");
}

TEST_CASE("scrubber: no secrets, nothing held, nothing changed") {
  ResponseScrubber scrubber(patterns_of({}));
  std::string out;
  scrubber.feed("abc", out);
  CHECK(out == "abc");
  CHECK(scrubber.held().empty());
}

TEST_CASE("scrub_head_text: a match becomes the placeholder of its secret; runs of several, each named") {
  const auto patterns = patterns_of({kGithub, kDb, {"nohold", "zzzzzzzzzzzzzzzz", ""}});
  ScrubFound found;
  CHECK_FALSE(scrub_head_text("HTTP/1.1 302 Found\r\nLocation: /a?b=c\r\n\r\n", *patterns, found));
  const auto location = scrub_head_text("Location: /next?key=" + kGithub.value + "&p=2", *patterns, found);
  REQUIRE(location);
  CHECK(*location == "Location: /next?key=" + kGithub.placeholder + "&p=2");
  const std::string encoded = percent_encode_all(kDb.value);
  const auto both = scrub_head_text("x: " + encoded + kGithub.value + ";", *patterns, found);
  REQUIRE(both);
  CHECK(*both == "x: " + kDb.placeholder + kGithub.placeholder + ";");
  const auto basic = scrub_head_text("www-authenticate: Basic " + base64_std("u:" + kDb.value), *patterns, found);
  REQUIRE(basic);
  CHECK(basic->find(kDb.placeholder) != std::string::npos);
  const auto starred = scrub_head_text("a: zzzzzzzzzzzzzzzz", *patterns, found);
  REQUIRE(starred);
  CHECK(*starred == "a: ****************");  // no placeholder for it: starred as in a body
  CHECK(found.names() == std::vector<std::string>{"github", "db", "nohold"});
}

TEST_CASE("scrubber: linear in the input, even on the worst text for its longest secret") {
  // A 4 KiB value of one repeated byte and a text of that byte: a match ends at every byte and
  // every one overlaps the last 4 KiB; plus 64 ordinary secrets. Quadratic work would take the
  // 4 MiB run 16 times as long as the 1 MiB one; linear, 4 times.
  std::vector<Named> secrets{{"long", std::string(4096, 'a'), ""}};
  for (int i = 0; i < 63; ++i) secrets.push_back({"s" + std::to_string(i), "value-" + std::to_string(i * 7919) + "-abcdefgh", ""});
  const auto patterns = patterns_of(secrets);
  const auto run = [&](std::size_t size) {
    const std::string text(size, 'a');
    ResponseScrubber scrubber(patterns);
    std::string out;
    out.reserve(size);
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t at = 0; at < size; at += 1000) scrubber.feed(std::string_view(text).substr(at, 1000), out);
    scrubber.flush(out);
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(out == std::string(size, '*'));
    return std::chrono::duration<double>(took).count();
  };
  const double small = run(std::size_t{1} << 20);
  const double big = run(std::size_t{4} << 20);
  CAPTURE(small);
  CAPTURE(big);
  CHECK(big < small * 8 + 0.05);
  CHECK(big < 2.0);
}

TEST_CASE("scrubber: the search's work depends on the text and the values' lengths, never on their bytes") {
  // A box that can time an echoing origin amplifies what each byte costs: a body of one byte pair
  // repeated (is the pair in a key?), or a known prefix plus one guessed character, repeated (does
  // the key go on with it?). Two sets of values of the same lengths and the same spellings'
  // alphabets (plain ones; ones with the same escapes at other places), one that the text
  // hits and one that it misses: the steps and the bytes passed over must be the same.
  const std::vector<Named> hit{{"k", "sk-proj-Q7vX2mLp9RtW4bNc", ""}, {"d", "p@ss/w0rd+\"<&>'x", ""}};
  const std::vector<Named> miss{{"k", "sk-proj-hJ3kZ8yFu5eTs1aG", ""}, {"d", "zq/x+\"w<&>'@9v8u", ""}};
  // The same lengths, and so the same shortest spelling (what the skip's window is: the number of
  // spellings may differ, as a base64 spelling without '+' or '/' is the same in both alphabets).
  const auto shortest = [](const std::vector<Named>& set) {
    std::size_t out = SIZE_MAX;
    for (const Named& s : set) {
      for (const SecretText& spelling : secret_spellings(s.value)) out = std::min(out, spelling.size());
    }
    return out;
  };
  for (std::size_t s = 0; s < hit.size(); ++s) REQUIRE(hit[s].value.size() == miss[s].value.size());
  REQUIRE(shortest(hit) == shortest(miss));
  const auto repeated = [](std::string_view unit, std::size_t size) {
    std::string text;
    while (text.size() < size) text += unit;
    return text;
  };
  const std::string hex_pair(secret_hex(hit[0].value).view().substr(4, 2));
  const std::vector<std::string> texts{
      repeated("Q7", 65536),                      // a pair of the first key's, not the other's
      repeated("sk-proj-Q", 65536),               // a known prefix and the right guess
      repeated("sk-proj-Q ", 65536),              // the same, in runs a space ends
      repeated(hex_pair, 65536),                  // a pair of the first key's hex
      repeated("&gt;&amp;&#39;x", 65536),         // the escapes of the second value's end
      repeated("{\"id\":\"sk-proj-Q7vX\",\"n\":1}\n", 65536),
  };
  for (const std::string& text : texts) {
    CAPTURE(text.substr(0, 40));
    ResponseScrubber a(patterns_of(hit)), b(patterns_of(miss));
    std::string out_a, out_b;
    for (std::size_t at = 0; at < text.size(); at += 4096) {
      a.feed(std::string_view(text).substr(at, 4096), out_a);
      b.feed(std::string_view(text).substr(at, 4096), out_b);
    }
    CHECK(out_a == out_b);  // no value is whole in the texts: nothing starred in either
    CHECK(a.work().steps == b.work().steps);
    CHECK(a.work().skips == b.work().skips);
  }
}

TEST_CASE("scrubber: a set too long for the automaton's table is searched the older way, as well") {
  // 3 values of 40 bytes get the automaton (a few hundred states); 8 of 4,096 (spellings of about
  // 300,000 bytes) would need more than its 32 MiB: the older matcher, which finds the same.
  const auto small = patterns_of({kGithub, kDb, {"k", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""}});
  REQUIRE(small->automaton() != nullptr);
  CHECK(small->automaton()->state_count() < 2000);
  std::vector<Named> big;
  std::mt19937 random(11);
  for (int s = 0; s < 8; ++s) {
    std::string value;
    for (int i = 0; i < 4096; ++i) value.push_back(static_cast<char>(0x21 + random() % 94));
    big.push_back({"v" + std::to_string(s), value, ""});
  }
  const auto patterns = patterns_of(big);
  CHECK(patterns->automaton() == nullptr);
  const std::string text = "a " + percent_encode_all(big[3].value) + " b " + big[7].value.substr(5) + " " +
                           big[0].value + "\n";
  ResponseScrubber scrubber(patterns);
  CHECK(fed(scrubber, text, {100, 5000, 9000}) == starred_reference(text, big));
  CHECK(scrubber.found().names() == std::vector<std::string>{"v3", "v0"});
}
