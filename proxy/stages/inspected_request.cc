// SPDX-License-Identifier: Apache-2.0
// One request on an inspected connection, judged (proxy/stages/inspected_request.h).
#include "proxy/stages/inspected_request.h"

#include "proxy/stages/request_pipeline.h"
#include "proxy/wire/http_forward.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

// The head the origin gets, from what the stages decided and changed: the box's head with its
// placeholders swapped, without its headers of an injected name, the Host the decided origin's,
// and the injected headers added. As fields (issue 34 item 2): printed for an HTTP/1.1 origin,
// given as they are to an HTTP/2 origin's back.
// An HTTP/1.1 box's Connection: close ends the box's connection, not the origin's: the origin
// connection stays alive to carry the next box connection's requests (the inspector's pool of
// idle origin connections, proxy/inspect/origin_pool.h, counted as tunnels by serve,
// proxy/origin_ledger.h, as squid keeps its server connections). An HTTP/1.0 box's request still
// asks the origin to close: its answer is then framed by the close rather than chunked, which an
// HTTP/1.0 client cannot read.
bool asks_origin_to_close(bool client_keep_alive, std::string_view version) {
  return !client_keep_alive && version != "HTTP/1.1";
}

RequestMessage compose_upstream(const RequestContext& context, bool websocket) {
  RequestHead sent = context.endpoint.inject.empty() ? context.outgoing()
                                                     : without_injected_headers(context.outgoing(), context.endpoint);
  if (!context.dropped_fields.empty()) {
    std::erase_if(sent.headers, [&](const HeaderField& field) {
      for (const std::string& name : context.dropped_fields) {
        if (iequals(field.name, name)) return true;
      }
      return false;
    });
  }
  const bool close = asks_origin_to_close(context.client_keep_alive, sent.version);
  // Room for the added and injected fields too: the vector never moves a value once it holds one.
  RequestMessage out = forward_origin_form_message(sent, origin_host_field(context.origin), websocket, close,
                                                   context.added_fields.size() + context.injected.fields.size());
  for (const auto& [name, value] : context.added_fields) out.fields.push_back({name, value});
  for (const auto& [name, value] : context.injected.fields) out.fields.push_back({name, std::string(value.view())});
  return out;
}

}  // namespace

std::string inspect_refusal_response(Reason refusal, bool close, std::string_view detail) {
  const RefusalAnswer answer = inspect_refusal_answer(refusal, close, detail);
  return answer.head.text() + answer.body;
}

RefusalAnswer inspect_refusal_answer(Reason refusal, bool close, std::string_view detail) {
  const std::string_view log_class_text = log_class(refusal);
  std::string words = "egress refused: " + std::string(log_class_text);
  RefusalAnswer out;
  out.body.reserve(words.size() + detail.size() + 1);
  out.body.append(words).append(detail).append("\n");
  out.head.status = info(refusal).http_status;
  out.head.reason = std::move(words);
  out.head.fields = {{"x-egress-refused", std::string(log_class_text)},
                     {"content-type", "text/plain"},
                     {"content-length", std::to_string(out.body.size())}};
  if (close) out.head.fields.push_back({"connection", "close"});
  return out;
}

InspectedRequest judge_inspected_request(const RequestHead& head, const InspectEndpoint& endpoint,
                                         const DecidedOrigin& origin, const SecretLookup& secrets,
                                         const Placeholders* placeholders, std::size_t max_head_bytes,
                                         std::optional<RequestAsked> asked, const RequestSigner* signer,
                                         std::optional<std::string> payload_hash) {
  RequestContext context(head, endpoint, origin, secrets, placeholders);
  context.max_head_bytes = max_head_bytes;
  context.asked = asked;
  context.signer = signer;
  context.payload_hash = std::move(payload_hash);
  const RequestPipeline& pipeline = RequestPipeline::for_scope(StageScope::inspector);
  const PipelineOutcome outcome = pipeline.run(context);
  InspectedRequest judged;
  if (context.ask && context.verdict == RequestVerdict::allowed) judged.asked = asked;
  judged.rule = context.rule;
  judged.framing = context.framing;
  judged.keep_after_refusal = context.keep_after_refusal;
  judged.client_keep_alive = context.client_keep_alive;
  judged.client_http10 = context.client_http10;
  judged.misdirected = std::move(context.misdirected);
  if (outcome.verdict.action == StageVerdict::Action::wait && pipeline.stages()[outcome.stage]->name() == "sign") {
    judged.hold_body = true;  // the signer wants the body's hash
    return judged;
  }
  if (outcome.verdict.action == StageVerdict::Action::wait) {
    judged.wait = true;  // the ask stage: judged again, from the start, with the answer
    return judged;
  }
  if (outcome.verdict.action != StageVerdict::Action::proceed) {
    // A refusal is neither a report-mode pass nor an upgrade (nothing is sent, so no 101 can come
    // to switch on).
    judged.refusal = outcome.verdict.reason;
    return judged;
  }
  judged.report = context.report;
  judged.websocket = is_websocket_upgrade(head);
  judged.trace = std::move(context.trace);
  judged.upstream = compose_upstream(context, judged.websocket);
  judged.origin_asked_to_close = asks_origin_to_close(context.client_keep_alive, head.version);
  return judged;
}

}  // namespace boxproxy
