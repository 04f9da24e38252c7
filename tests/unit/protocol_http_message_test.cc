// SPDX-License-Identifier: Apache-2.0
// Message heads held as fields (proxy/wire/http_message.h): a parsed head copied into a message
// views back the same, its views outlive the text it came from, and its text size is the text's.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "proxy/wire/http_message.h"

using namespace boxproxy;

TEST_CASE("a request head copied into a message views back the same, without its text") {
  auto text = std::make_unique<std::string>("POST /v1/x?q=1 HTTP/1.1\r\nHost: api.example\r\nX-A: b\r\n\r\n");
  const auto parsed = parse_request_head(*text, 4096);
  REQUIRE(parsed.status == ParseResult<RequestHead>::Status::complete);
  const RequestMessage message = RequestMessage::from(*parsed.value);
  CHECK(message.text_size() == text->size());
  text.reset();  // the message owns its bytes
  const RequestHead head = message.view();
  CHECK(head.method == "POST");
  CHECK(head.target == "/v1/x?q=1");
  CHECK(head.version == "HTTP/1.1");
  REQUIRE(head.headers.size() == 2);
  CHECK(head.headers[0].name == "Host");
  CHECK(head.headers[0].value == "api.example");
  CHECK(head.headers[1].name == "X-A");
  CHECK(head.headers[1].value == "b");
}

TEST_CASE("a response head copied into a message views back the same, and a moved message still views") {
  const std::string text = "HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\n\r\n";
  const auto parsed = parse_response_head(text, 4096);
  REQUIRE(parsed.status == ParseResult<ResponseHead>::Status::complete);
  ResponseMessage original = ResponseMessage::from(*parsed.value);
  CHECK(original.text_size() == text.size());
  const ResponseMessage moved = std::move(original);
  const ResponseHead head = moved.view();
  CHECK(head.status == 404);
  CHECK(head.reason == "Not Found");
  CHECK(head.version == "HTTP/1.1");
  REQUIRE(head.headers.size() == 1);
  CHECK(head.headers[0].name == "content-length");
  CHECK(head.headers[0].value == "3");
}

TEST_CASE("an empty message views as an empty head") {
  const RequestMessage request;
  CHECK(request.view().headers.empty());
  CHECK(request.view().version == "HTTP/1.1");
  const ResponseMessage response;
  CHECK(response.view().status == 0);
}
