// SPDX-License-Identifier: Apache-2.0
// proxy/inspector_messages: every message written and read back, and what serve refuses from an
// inspector that was made to say something else.
#include "proxy/inspector_messages.h"

#include <doctest/doctest.h>

#include <string>

namespace boxproxy {
namespace {

template <typename T>
T report_back(const InspectorReport& report) {
  auto parsed = parse_inspector_report(inspector_message(report));
  REQUIRE(std::holds_alternative<InspectorReport>(parsed));
  REQUIRE(std::holds_alternative<T>(std::get<InspectorReport>(parsed)));
  return std::get<T>(std::get<InspectorReport>(parsed));
}

template <typename T>
T order_back(const InspectorOrder& order) {
  auto parsed = parse_serve_message(serve_message(order));
  REQUIRE(std::holds_alternative<InspectorOrder>(parsed));
  REQUIRE(std::holds_alternative<T>(std::get<InspectorOrder>(parsed)));
  return std::get<T>(std::get<InspectorOrder>(parsed));
}

std::string refusal(std::string_view bytes) {
  auto parsed = parse_inspector_report(bytes);
  REQUIRE(std::holds_alternative<std::string>(parsed));
  return std::get<std::string>(parsed);
}

std::string order_refusal(std::string_view bytes) {
  auto parsed = parse_serve_message(bytes);
  REQUIRE(std::holds_alternative<std::string>(parsed));
  return std::get<std::string>(parsed);
}

// A start message with `fields` (the bounds) in place of serve's.
std::string start_with(std::string_view fields) {
  return std::string(R"({"op":"start","label":"s","log_paths":false,"endpoints":[],)") + std::string(fields) + "}";
}

}  // namespace

TEST_CASE("the inspector's reports read back as written") {
  const std::string pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  CHECK(report_back<InspectorReady>(InspectorReady{pem}).ca_pem == pem);
  InspectorRequest request{7, "DELETE", "deny[0]", Reason::request_denied, 403, 120, 80, 3, false, "/repos/acme"};
  const auto back = report_back<InspectorRequest>(request);
  CHECK(back.id == 7);
  CHECK(back.method == "DELETE");
  CHECK(back.rule == "deny[0]");
  CHECK(back.refusal == Reason::request_denied);
  CHECK(back.status == 403);
  CHECK((back.up == 120 && back.down == 80 && back.ms == 3));
  CHECK(back.path == std::optional<std::string>("/repos/acme"));
  request.path.reset();
  CHECK_FALSE(report_back<InspectorRequest>(request).path);
  CHECK(report_back<InspectorDial>(InspectorDial{9}).id == 9);
  const auto ended =
      report_back<InspectorEnded>(InspectorEnded{4, 1, 2, TunnelEnd::client_closed, Reason::sni_mismatch});
  CHECK((ended.id == 4 && ended.up == 1 && ended.down == 2 && ended.end == TunnelEnd::client_closed));
  CHECK(ended.refusal == Reason::sni_mismatch);
  CHECK_FALSE(ended.tls);
  // Why a handshake failed goes as its word and comes back as the same typed value.
  const auto failed = report_back<InspectorEnded>(
      InspectorEnded{5, 0, 0, TunnelEnd::error, std::nullopt, TlsFailure::unknown_ca});
  CHECK(failed.tls == std::optional<TlsFailure>(TlsFailure::unknown_ca));
}

TEST_CASE("SPEC §20: an ask, its answer, and a request line's asked= read back; anything else refused") {
  const auto ask = report_back<InspectorAsk>(InspectorAsk{7, 2, "GET", "/asked/\"x\"", true, "rules[0]"});
  CHECK((ask.id == 7 && ask.n == 2 && ask.method == "GET" && ask.path == "/asked/\"x\"" && ask.query &&
         ask.rule == "rules[0]"));
  CHECK(refusal(R"({"op":"ask","id":7,"n":2,"method":"GET","path":"/a?q","query":true,"rule":"-"})") ==
        R"(bad "path")");  // the query never goes to the supervisor's event
  CHECK(refusal(R"({"op":"ask","id":7,"n":2,"method":"GET","path":"a b","query":true,"rule":"-"})") ==
        R"(bad "path")");
  const auto answer = order_back<InspectorAnswer>(InspectorAnswer{7, 2, RequestAsked::always});
  CHECK((answer.id == 7 && answer.n == 2 && answer.asked == RequestAsked::always));
  CHECK(order_refusal(R"({"op":"answer","id":7,"n":2,"asked":"maybe"})") == R"(bad "asked")");
  InspectorRequest request{7, "GET", "rules[0]", Reason::request_denied, 403, 0, 80, 3, false};
  request.asked = RequestAsked::timeout;
  const std::string line = inspector_message(request);
  CHECK(line.ends_with(R"(,"asked":"timeout"})"));
  CHECK(report_back<InspectorRequest>(request).asked == RequestAsked::timeout);
  std::string forged = line;
  forged.replace(forged.find("timeout"), 7, "yes id=9");
  CHECK(refusal(forged) == R"(bad "asked")");
}

TEST_CASE("serve's orders read back as written") {
  const auto start = order_back<InspectorStart>(InspectorStart{"s1", true, R"([{"host":"api.test:443"}])"});
  CHECK(start.label == "s1");
  CHECK(start.log_paths);
  CHECK(start.endpoints_json == R"([{"host":"api.test:443"}])");
  // Unset, serve's bounds are its options' defaults.
  CHECK((start.head_timeout == 30 && start.idle_timeout == 0 && start.max_head_bytes == 32768));
  const auto bounded = order_back<InspectorStart>(InspectorStart{"s2", false, "[]", 1.5, 600, 1024});
  CHECK((bounded.head_timeout == 1.5 && bounded.idle_timeout == 600 && bounded.max_head_bytes == 1024));
  CHECK(order_back<InspectorEndpoints>(InspectorEndpoints{"[]"}).endpoints_json == "[]");
  const auto connection = order_back<InspectorConnection>(InspectorConnection{3, "api.test", 443, "api.test:443"});
  CHECK((connection.id == 3 && connection.host == "api.test" && connection.port == 443));
  CHECK(connection.endpoint == "api.test:443");
  const auto dialled = order_back<InspectorDialled>(InspectorDialled{3, true});
  CHECK((dialled.id == 3 && dialled.ok));
  CHECK_FALSE(connection.pooled);  // not said: the connection's own upstream (or none) goes with it
  InspectorConnection reuse{4, "api.test", 443, "api.test:443"};
  reuse.pooled = 3;
  CHECK(order_back<InspectorConnection>(reuse).pooled == std::optional<std::uint64_t>(3));
  CHECK(order_back<InspectorEvict>(InspectorEvict{9}).id == 9);
  for (const char* bad : {R"("3")", "-1", "true", "1.5"}) {
    CHECK(order_refusal(std::string(R"({"op":"connection","id":1,"host":"a.test","port":443,"endpoint":"a.test:443",)") +
                        R"("pooled":)" + bad + "}") == R"(bad "pooled")");
  }
  CHECK(order_refusal(R"({"op":"evict"})") == R"(no "id")");
  CHECK(order_refusal(R"({"op":"evict","id":"1"})") == R"(bad "id")");
}

TEST_CASE("a kept origin connection's words: ended with pooled, unpooled; anything else refused") {
  InspectorEnded ended{5, 10, 20, TunnelEnd::client_closed};
  CHECK_FALSE(report_back<InspectorEnded>(ended).pooled);
  ended.pooled = true;
  const auto back = report_back<InspectorEnded>(ended);
  CHECK((back.pooled && back.id == 5 && back.up == 10 && back.down == 20));
  CHECK(inspector_message(ended).find(R"("pooled":true)") != std::string::npos);
  CHECK(report_back<InspectorUnpooled>(InspectorUnpooled{5}).id == 5);
  // Only true is ever written: false, or a value of another type, is refused.
  for (const char* bad : {"false", "1", R"("true")", "null"}) {
    CHECK(refusal(std::string(R"({"op":"ended","id":1,"up":0,"down":0,"end":"client-closed","pooled":)") + bad + "}") ==
          R"(bad "pooled")");
  }
  // A refused connection never keeps its origin connection: a class beside pooled is refused.
  CHECK(refusal(R"({"op":"ended","id":1,"up":0,"down":0,"end":"error","class":"not tls","pooled":true})") ==
        R"(bad "pooled")");
  CHECK(refusal(R"({"op":"unpooled"})") == R"(no "id")");
  CHECK(refusal(R"({"op":"unpooled","id":-2})") == R"(bad "id")");
}

TEST_CASE("serve refuses what an inspector should never say") {
  CHECK(refusal("") == "not a JSON object");
  CHECK(refusal("{\"op\":") == "not a JSON object");
  CHECK(refusal("[1]") == "not a JSON object");
  CHECK(refusal(std::string(100, '[')) == "nested too deep");
  CHECK(refusal(std::string(70 * 1024, ' ')) == "too long");
  CHECK(refusal(R"({"op":"launch"})") == "unknown op");
  CHECK(refusal(R"({"op":"dial"})") == "no \"id\"");
  CHECK(refusal(R"({"op":"dial","id":-1})") == "bad \"id\"");
  CHECK(refusal(R"({"op":"dial","id":"1"})") == "bad \"id\"");
  CHECK(refusal(R"({"op":"ready","ca":"not a certificate"})") == "bad \"ca\"");
  // A request line's fields, in its one shape (inspector_messages.cc, request_message).
  const auto request_with = [](std::string_view method, std::string_view klass, std::string_view status) {
    return std::string(R"({"op":"request","id":1,"method":)") + std::string(method) + R"(,"rule":"-","class":)" +
           std::string(klass) + R"(,"status":)" + std::string(status) + R"(,"up":0,"down":0,"ms":0,"report":false})";
  };
  CHECK(std::holds_alternative<InspectorReport>(parse_inspector_report(request_with(R"("GET")", R"("ok")", "200"))));
  // A method that would break the line, or stretch it, or split it into two fields.
  CHECK(refusal(request_with("\"GET\negress forged\"", R"("ok")", "200")) == "bad \"method\"");
  CHECK(refusal(request_with(R"("GET x")", R"("ok")", "200")) == "bad \"method\"");
  CHECK(refusal(request_with("\"" + std::string(33, 'G') + "\"", R"("ok")", "200")) == "bad \"method\"");
  CHECK(refusal(request_with(R"("G\u00e9T")", R"("ok")", "200")) == "bad \"method\"");
  CHECK(refusal(request_with("\"G\xc3\xa9T\"", R"("ok")", "200")) == "bad \"method\"");
  CHECK_FALSE(refusal(request_with(R"("GET)", R"("ok")", "200")).empty());  // its end quote missing
  CHECK(refusal(request_with(R"(GET)", R"("ok")", "200")) == "bad \"method\"");
  CHECK(refusal(request_with(R"("GET")", R"(" ok")", "200")) == "bad \"class\"");
  CHECK(refusal(request_with(R"("GET")", R"("ok")", "1000")) == "bad \"status\"");
  CHECK(refusal(request_with(R"("GET")", R"("ok")", "0200")) == "bad \"status\"");
  CHECK(refusal(request_with(R"("GET")", R"("ok")", "-1")) == "bad \"status\"");
  CHECK(refusal(request_with(R"("GET")", R"("ok")", "2e2")) == "bad \"up\"");  // 2, then "e2" where ,"up": is
  CHECK(refusal(R"({"op":"ended","id":1,"up":0,"down":0,"end":"error","class":"a\u0000b"})") == "bad \"class\"");
  // Only a word of the vocabulary: anything else the inspector says is refused, never logged.
  CHECK(refusal(R"({"op":"ended","id":1,"up":0,"down":0,"end":"error","tls":"made-up"})") == "bad \"tls\"");
  CHECK(refusal(R"({"op":"ended","id":1,"up":0,"down":0,"end":"error","tls":7})") == "bad \"tls\"");
}

TEST_CASE("a request line is read in its one shape only, each field checked as the general path checks it") {
  InspectorRequest request{18446744073709551615ULL, "GET", "rules[3]", std::nullopt, 200, 1, 2, 3, true,
                           R"(/a"quoted\path)"};
  const std::string written = inspector_message(request);
  CHECK(written == R"({"op":"request","id":18446744073709551615,"method":"GET","rule":"rules[3]","class":"ok",)"
                   R"("status":200,"up":1,"down":2,"ms":3,"report":true,"path":"/a\"quoted\\path"})");
  const auto back = report_back<InspectorRequest>(request);
  CHECK(back.id == 18446744073709551615ULL);
  CHECK(back.report);
  CHECK(back.path == std::optional<std::string>(R"(/a"quoted\path)"));
  // Every cut of it is refused (never read as a shorter request), and so is anything after it.
  for (std::size_t n = 0; n < written.size(); ++n) CHECK_FALSE(refusal(written.substr(0, n)).empty());
  CHECK(refusal(written + " ") == "not in its shape");
  CHECK(refusal(written.substr(0, written.size() - 1) + R"(,"extra":1})") == "not in its shape");
  // A number past 64 bits, JSON's other escapes, keys in another order (the general writer's sorted
  // ones): refused, not read another way.
  CHECK(refusal(R"({"op":"request","id":18446744073709551616,"method":"GET"})") == "bad \"id\"");
  request.path = "/x";
  std::string escaped = inspector_message(request);
  escaped.replace(escaped.find("/x"), 2, R"(\/x)");
  CHECK(refusal(escaped) == "bad \"path\"");
  CHECK(refusal(R"({"class":"ok","down":0,"id":1,"method":"GET","ms":0,"op":"request","report":false,"rule":"-",)"
                R"("status":200,"up":0})") == "request not in its shape");
  CHECK(refusal(R"({"op": "request","id":1})") == "request not in its shape");
}

TEST_CASE("a start message's bounds are serve's options' ranges") {
  const std::string fine = R"("head_timeout":0.25,"idle_timeout":0,"max_head_bytes":1048576,"max_held_body":0)";
  const auto parsed = parse_serve_message(start_with(fine));
  REQUIRE(std::holds_alternative<InspectorOrder>(parsed));
  const auto& start = std::get<InspectorStart>(std::get<InspectorOrder>(parsed));
  CHECK((start.head_timeout == 0.25 && start.idle_timeout == 0 && start.max_head_bytes == 1048576 &&
         start.max_held_body == 0));
  // Each bound missing, of the wrong type, or outside its option's range.
  const struct {
    const char* fields;
    const char* why;
  } rows[] = {
      {R"("idle_timeout":0,"max_head_bytes":4096,"max_held_body":4096)", "no \"head_timeout\""},
      {R"("head_timeout":1,"max_head_bytes":4096,"max_held_body":4096)", "no \"idle_timeout\""},
      {R"("head_timeout":1,"idle_timeout":0,"max_held_body":4096)", "no \"max_head_bytes\""},
      {R"("head_timeout":0,"idle_timeout":0,"max_head_bytes":4096,"max_held_body":4096)", "bad \"head_timeout\""},
      {R"("head_timeout":-1,"idle_timeout":0,"max_head_bytes":4096,"max_held_body":4096)", "bad \"head_timeout\""},
      {R"("head_timeout":86400.5,"idle_timeout":0,"max_head_bytes":4096,"max_held_body":4096)", "bad \"head_timeout\""},
      {R"("head_timeout":"10","idle_timeout":0,"max_head_bytes":4096,"max_held_body":4096)", "bad \"head_timeout\""},
      {R"("head_timeout":1,"idle_timeout":-0.5,"max_head_bytes":4096,"max_held_body":4096)", "bad \"idle_timeout\""},
      {R"("head_timeout":1,"idle_timeout":86401,"max_head_bytes":4096,"max_held_body":4096)", "bad \"idle_timeout\""},
      {R"("head_timeout":1,"idle_timeout":true,"max_head_bytes":4096,"max_held_body":4096)", "bad \"idle_timeout\""},
      {R"("head_timeout":1,"idle_timeout":0,"max_head_bytes":1023,"max_held_body":4096)", "bad \"max_head_bytes\""},
      {R"("head_timeout":1,"idle_timeout":0,"max_head_bytes":1048577,"max_held_body":4096)", "bad \"max_head_bytes\""},
      {R"("head_timeout":1,"idle_timeout":0,"max_head_bytes":4096.5,"max_held_body":4096)", "bad \"max_head_bytes\""},
      {R"("head_timeout":1,"idle_timeout":0,"max_head_bytes":-4096,"max_held_body":4096)", "bad \"max_head_bytes\""},
      {R"("head_timeout":1,"idle_timeout":0,"max_head_bytes":4096)", "no \"max_held_body\""},
      {R"("head_timeout":1,"idle_timeout":0,"max_head_bytes":4096,"max_held_body":1073741825)", "bad \"max_held_body\""},
  };
  for (const auto& row : rows) {
    CAPTURE(row.fields);
    CHECK(order_refusal(start_with(row.fields)) == row.why);
  }
}

}  // namespace boxproxy

namespace boxproxy {

TEST_CASE("a secret's message: the value as hex, read back; anything else of that shape refused") {
  const std::string set = serve_message(InspectorOrder(InspectorSecret{"github", SecretText("ghp_Ab9-0123456789")}));
  CHECK(set == R"({"op":"secret","name":"github","value":"6768705f4162392d30313233343536373839"})");
  CHECK(set.find("ghp_Ab9-0123456789") == std::string::npos);
  auto parsed = parse_serve_message(set);
  REQUIRE(std::holds_alternative<InspectorOrder>(parsed));
  const auto* secret = std::get_if<InspectorSecret>(&std::get<InspectorOrder>(parsed));
  REQUIRE(secret != nullptr);
  CHECK(secret->name == "github");
  REQUIRE(secret->value.has_value());
  CHECK(secret->value->view() == "ghp_Ab9-0123456789");

  const std::string revoke = serve_message(InspectorOrder(InspectorSecret{"github", std::nullopt}));
  CHECK(revoke == R"({"op":"secret","name":"github","value":null})");
  auto revoked = parse_serve_message(revoke);
  REQUIRE(std::holds_alternative<InspectorOrder>(revoked));
  CHECK_FALSE(std::get<InspectorSecret>(std::get<InspectorOrder>(revoked)).value.has_value());

  for (const char* bad : {R"({"op":"secret","name":"GitHub","value":null})",
                          R"({"op":"secret","name":"github","value":"6g"})",
                          R"({"op":"secret","name":"github","value":"20"})",  // a space: not a value
                          R"({"op":"secret","name":"github","value":"6768705f416239"})",  // 7 bytes: too short
                          R"({"op":"secret","name":"github","value":""})",
                          R"({"op":"secret","name":"github","value":null,"x":1})",
                          R"({"op":"secret","name":"github"})"}) {
    CAPTURE(bad);
    CHECK_FALSE(order_refusal(bad).empty());
  }
}

}  // namespace boxproxy

namespace boxproxy {

TEST_CASE("a placeholder's message, and a request line's secret name, read back; a bad name refused") {
  const std::string value = "bxp_api_000102030405060708090a0b0c0d0e0f";
  const auto placeholder = order_back<InspectorPlaceholder>(InspectorPlaceholder{"api", value});
  CHECK(placeholder.name == "api");
  CHECK(placeholder.value == value);
  CHECK_FALSE(order_refusal(R"({"op":"placeholder","name":"API","value":"bxp_x"})").empty());
  CHECK_FALSE(order_refusal(R"({"op":"placeholder","name":"api","value":"not-one"})").empty());

  InspectorRequest request{7, "GET", "-", Reason::secret_misdirected, 403, 0, 158, 1, false, std::nullopt, "api"};
  CHECK(report_back<InspectorRequest>(request).secret == std::optional<std::string>("api"));
  request.secret = "api secret=x";
  CHECK_FALSE(refusal(inspector_message(request)).empty());
}

TEST_CASE("a request line's sign= (SPEC §20): aws-sigv4 read back, anything else refused") {
  InspectorRequest request{7, "PUT", "-", std::nullopt, 200, 10, 20, 1, false};
  request.inject.push_back("x-extra");
  request.sign = "aws-sigv4";
  request.scrub.push_back("aws_key");
  const auto back = report_back<InspectorRequest>(request);
  CHECK(back.sign == "aws-sigv4");
  CHECK(back.inject.text() == "x-extra");
  CHECK(back.scrub.text() == "aws_key");
  request.sign.clear();
  CHECK(report_back<InspectorRequest>(request).sign.empty());
  request.sign = "aws-sigv4 secret=x";
  CHECK_FALSE(refusal(inspector_message(request)).empty());
  const auto held = order_back<InspectorStart>(InspectorStart{"s3", false, "[]", 1.5, 600, 1024, 4096});
  CHECK(held.max_held_body == 4096);
}

}  // namespace boxproxy

namespace boxproxy {

// One vocabulary across the boundary (issue 34): a class is a Reason or "ok", an end a TunnelEnd,
// each typed once as the message is read; a word of neither is refused, never logged as another.
TEST_CASE("every class and every end reads back as the same typed value; any other word is refused") {
  InspectorRequest request{3, "GET", "rules[0]", std::nullopt, 200, 1, 2, 3, false};
  CHECK(inspector_message(request).find(R"("class":"ok")") != std::string::npos);
  CHECK_FALSE(report_back<InspectorRequest>(request).refusal);
  for (const ReasonInfo& row : reason_table()) {
    CAPTURE(row.log_class);
    request.refusal = row.reason;
    const std::string line = inspector_message(request);
    CHECK(line.find(R"("class":")" + std::string(row.log_class) + "\"") != std::string::npos);
    CHECK(report_back<InspectorRequest>(request).refusal == row.reason);
    const auto ended = report_back<InspectorEnded>(InspectorEnded{3, 0, 0, TunnelEnd::error, row.reason});
    CHECK(ended.refusal == row.reason);
  }
  for (std::size_t at = 0; at < kTunnelEndNames.size(); ++at) {
    const auto end = static_cast<TunnelEnd>(at);
    CAPTURE(tunnel_end_name(end));
    const std::string line = inspector_message(InspectorEnded{3, 5, 6, end});
    CHECK(line.find(R"("end":")" + std::string(tunnel_end_name(end)) + "\"") != std::string::npos);
    const auto back = report_back<InspectorEnded>(InspectorEnded{3, 5, 6, end});
    CHECK(back.end == end);
    CHECK_FALSE(back.refusal);
  }

  const auto request_class = [](std::string_view klass) {
    return std::string(R"({"op":"request","id":1,"method":"GET","rule":"-","class":)") + std::string(klass) +
           R"(,"status":200,"up":0,"down":0,"ms":0,"report":false})";
  };
  for (const char* unknown : {R"("made up")", R"("OK")", R"("Request denied")", R"("request  denied")",
                              R"("request denied ")", R"("request\"denied")", R"("")", R"(ok)", "1"}) {
    CAPTURE(unknown);
    CHECK(refusal(request_class(unknown)) == "bad \"class\"");
  }
  const auto ended_with = [](std::string_view fields) {
    return std::string(R"({"op":"ended","id":1,"up":0,"down":0,)") + std::string(fields) + "}";
  };
  for (const char* unknown : {R"("made up")", R"("ok")", R"("Loopback")", R"("")", "7", "null"}) {
    CAPTURE(unknown);
    CHECK(refusal(ended_with(std::string(R"("end":"error","class":)") + unknown)) == "bad \"class\"");
  }
  for (const char* unknown : {R"("closed")", R"("Error")", R"("client_closed")", R"("error ")", R"("")", "0"}) {
    CAPTURE(unknown);
    CHECK(refusal(ended_with(std::string(R"("end":)") + unknown)) == "bad \"end\"");
  }
  CHECK(refusal(ended_with(R"("class":"not tls")")) == "no \"end\"");
}

TEST_CASE("a request line with every field is written in the documented shape and reads back whole") {
  InspectorRequest request{42, "POST", "rules[1]", Reason::request_denied, 403, 10, 20, 30, true, "/p"};
  request.secret = "api";
  request.swap.push_back("api@header:authorization");
  request.swap.push_back("npm_token@query");
  request.inject.push_back("x-key");
  request.inject.push_back("authorization");
  request.sign = "aws-sigv4";
  request.asked = RequestAsked::once;
  request.scrub.push_back("api");
  const std::string line = inspector_message(request);
  CHECK(line == R"({"op":"request","id":42,"method":"POST","rule":"rules[1]","class":"request denied",)"
                R"("status":403,"up":10,"down":20,"ms":30,"report":true,"path":"/p","secret":"api",)"
                R"("swap":"api@header:authorization,npm_token@query","inject":"x-key,authorization",)"
                R"("sign":"aws-sigv4","asked":"once","scrub":"api"})");
  const auto back = report_back<InspectorRequest>(request);
  CHECK((back.id == 42 && back.method == "POST" && back.rule == "rules[1]" && back.refusal == Reason::request_denied));
  CHECK((back.status == 403 && back.up == 10 && back.down == 20 && back.ms == 30 && back.report));
  CHECK((back.path == std::optional<std::string>("/p") && back.secret == std::optional<std::string>("api")));
  CHECK(back.swap == request.swap);
  CHECK(back.inject == request.inject);
  CHECK((back.sign == "aws-sigv4" && back.asked == RequestAsked::once && back.scrub == request.scrub));
  CHECK(inspector_message(back) == line);
  // A field out of the table's order is not read (the shape is the table's).
  const std::string_view sign = R"(,"sign":"aws-sigv4")";
  std::string swapped = line;
  swapped.erase(swapped.find(sign), sign.size());
  swapped.insert(swapped.find(R"(,"swap":)"), sign);
  CHECK_FALSE(refusal(swapped).empty());
  // Every item of a list is checked: a value, a space or an empty item is refused.
  for (const char* list : {R"("swap":"api")", R"("swap":"api@x,")", R"("swap":"api@a b")", R"("inject":"x key")",
                           R"("inject":"x,,y")", R"("scrub":"API")", R"("scrub":"a,b@c")"}) {
    CAPTURE(list);
    const std::string forged = std::string(R"({"op":"request","id":1,"method":"GET","rule":"-","class":"ok",)") +
                               R"("status":200,"up":0,"down":0,"ms":0,"report":false,)" + list + "}";
    CHECK_FALSE(refusal(forged).empty());
  }
}

}  // namespace boxproxy
