// SPDX-License-Identifier: Apache-2.0
#include "proxy/stages/sign_stage.h"

#include "proxy/stages/request_signer.h"
#include "proxy/wire/header_inject.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

bool dropped(const RequestContext& context, std::string_view name) {
  for (const std::string& gone : context.dropped_fields) {
    if (iequals(gone, name)) return true;
  }
  return false;
}

// The head's size once signed: what the origin gets, counted as request_head_bytes counts it.
std::size_t signed_head_bytes(const RequestContext& context) {
  const RequestHead& head = context.outgoing();
  std::size_t size = head.method.size() + head.target.size() + head.version.size() + 6;
  const std::string host = origin_host_field(context.origin);
  for (const HeaderField& field : outgoing_fields(context, host)) size += field.name.size() + field.value.size() + 4;
  return size;
}

}  // namespace

std::vector<HeaderField> outgoing_fields(const RequestContext& context, const std::string& host_field) {
  std::vector<HeaderField> fields;
  const RequestHead& head = context.outgoing();
  fields.reserve(head.headers.size() + context.added_fields.size() + context.injected.fields.size() + 1);
  fields.push_back({"host", host_field});
  for (const HeaderField& field : head.headers) {
    if (iequals(field.name, "host") || is_injected_header(context.endpoint, field.name) ||
        dropped(context, field.name)) {
      continue;
    }
    fields.push_back(field);
  }
  for (const auto& [name, value] : context.added_fields) fields.push_back({name, value});
  for (const auto& [name, value] : context.injected.fields) fields.push_back({name, value.view()});
  return fields;
}

StageVerdict PresignedStage::on_request(RequestContext& context) const {
  if (!context.endpoint.sign || context.signer == nullptr) return StageVerdict::proceed();
  return context.signer->presigned(context.head.target) ? StageVerdict::refuse(Reason::request_denied)
                                                        : StageVerdict::proceed();
}

StageVerdict SignStage::on_request(RequestContext& context) const {
  if (!context.endpoint.sign) return StageVerdict::proceed();
  if (context.signer == nullptr) return StageVerdict::refuse(Reason::secret_missing);
  const SignAnswer answer = context.signer->sign(context);
  switch (answer.kind) {
    case SignAnswer::Kind::needs_body:
      return StageVerdict::wait();
    case SignAnswer::Kind::refused:
      return StageVerdict::refuse(answer.reason);
    case SignAnswer::Kind::signed_request:
      break;
  }
  // The signature's headers count against --max-head-bytes like the box's own (SPEC §20).
  if (signed_head_bytes(context) > context.max_head_bytes) return StageVerdict::refuse(Reason::head_too_large);
  context.trace.push_back({this->name(), "aws-sigv4"});
  return StageVerdict::proceed();
}

}  // namespace boxproxy
