// SPDX-License-Identifier: Apache-2.0
// Properties that must hold for every input, checked over many generated ones: a parser's answer
// never depends on how the bytes were split into pieces (SPEC: "never one recv at a time").
#include <doctest/doctest.h>

#include <random>
#include <string>

#include "proxy/wire/http_body.h"
#include "proxy/wire/http_head.h"
#include "proxy/wire/socks4.h"
#include "proxy/wire/socks5.h"

using namespace boxproxy;

namespace {

// Random text over a small alphabet rich in the bytes the grammars care about.
std::string random_text(std::mt19937& rng, std::size_t max_size, std::string_view alphabet) {
  std::uniform_int_distribution<std::size_t> size(0, max_size);
  std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
  std::string out(size(rng), '\0');
  for (char& c : out) c = alphabet[pick(rng)];
  return out;
}

struct Outcome {
  std::size_t consumed = 0;
  bool finished = false;
  bool malformed = false;
  bool operator==(const Outcome&) const = default;
};

Outcome run_scanner(std::string_view text, std::mt19937* rng) {
  ChunkedScanner scanner;
  Outcome out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t piece = text.size() - at;
    if (rng != nullptr) piece = std::uniform_int_distribution<std::size_t>(1, piece)(*rng);
    const auto step = scanner.feed(text.substr(at, piece));
    if (step.malformed) {
      return Outcome{0, false, true};  // where exactly it stopped is not part of the contract
    }
    at += step.consumed;
    out.consumed = at;
    if (step.finished) {
      out.finished = true;
      return out;
    }
    REQUIRE(step.consumed == piece);  // not finished: every byte was body
  }
  return out;
}

template <typename T, typename Parse>
void check_prefix_consistency(const std::string& text, Parse parse) {
  using Status = typename ParseResult<T>::Status;
  const auto whole = parse(std::string_view(text));
  for (std::size_t n = 0; n <= text.size(); ++n) {
    const auto part = parse(std::string_view(text).substr(0, n));
    if (part.status == Status::complete) {
      // Once complete, more bytes change nothing.
      REQUIRE(whole.status == Status::complete);
      CHECK(whole.consumed == part.consumed);
      return;
    }
    if (part.status == Status::refused) {
      // Once refused, more bytes never rescue it, and the reason stays.
      CHECK(whole.status == Status::refused);
      CHECK(whole.refusal == part.refusal);
      return;
    }
  }
  CHECK(whole.status == Status::need_more);
}

}  // namespace

TEST_CASE("property: the chunked scanner gives the same answer for every split") {
  std::mt19937 rng(12345);
  const std::string_view alphabet = "0123456789aAfF;=:xX \t\r\n\r\n\r\n";
  int finished = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = random_text(rng, 40, alphabet);
    // Half the time, start from a valid body and damage it a little.
    if (round % 2 == 0) {
      text = "3;a=b\r\nxyz\r\n1\r\n!\r\n0\r\nT: v\r\n\r\n" + text;
      if (round % 4 == 0 && !text.empty()) text[std::uniform_int_distribution<std::size_t>(0, 30)(rng)] = '\n';
    }
    CAPTURE(text);
    const auto whole = run_scanner(text, nullptr);
    finished += whole.finished ? 1 : 0;
    for (int split = 0; split < 3; ++split) CHECK(run_scanner(text, &rng) == whole);
    // Byte at a time.
    ChunkedScanner scanner;
    Outcome single;
    for (std::size_t i = 0; i < text.size(); ++i) {
      const auto step = scanner.feed(text.substr(i, 1));
      if (step.malformed) {
        single = Outcome{0, false, true};
        break;
      }
      single.consumed += step.consumed;
      if (step.finished) {
        single.finished = true;
        break;
      }
    }
    CHECK(single == whole);
  }
  CHECK(finished > 100);  // the generator does reach the end of bodies
}

TEST_CASE("property: head parsing is consistent across prefixes") {
  std::mt19937 rng(777);
  const std::string_view alphabet = "GET /hHTP1.0: \t\r\n\r\n\r\n\x01";
  for (int round = 0; round < 1500; ++round) {
    std::string text = random_text(rng, 30, alphabet);
    if (round % 2 == 0) text = "GET http://a/ HTTP/1.1\r\nHost: a\r\n" + text;
    CAPTURE(text);
    check_prefix_consistency<RequestHead>(text, [](std::string_view b) { return parse_request_head(b, 50); });
    check_prefix_consistency<ResponseHead>("HTTP/1.1 200 OK\r\n" + text,
                                           [](std::string_view b) { return parse_response_head(b, 40); });
  }
}

TEST_CASE("property: SOCKS parsers are consistent across prefixes") {
  std::mt19937 rng(99);
  const std::string alphabet("\x00\x01\x02\x03\x04\x05\x06\x10\xff" "ab", 11);
  for (int round = 0; round < 2000; ++round) {
    std::string text = random_text(rng, 24, alphabet);
    CAPTURE(text);
    check_prefix_consistency<Socks5Greeting>("\x05" + text, parse_socks5_greeting);
    check_prefix_consistency<Socks5Credentials>("\x01" + text, parse_socks5_credentials);
    check_prefix_consistency<Socks5Request>("\x05" + text, parse_socks5_request);
    check_prefix_consistency<Socks4Request>("\x04" + text, parse_socks4_request);
  }
}
