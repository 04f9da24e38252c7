// SPDX-License-Identifier: Apache-2.0
// Message heads held as fields (proxy/wire/http_message.h).
#include "proxy/wire/http_message.h"

namespace boxproxy {
namespace {

std::vector<HeaderField> field_views(const std::vector<MessageField>& fields) {
  std::vector<HeaderField> views;
  views.reserve(fields.size());
  for (const MessageField& field : fields) views.push_back({field.name, field.value});
  return views;
}

std::vector<MessageField> owned_fields(const std::vector<HeaderField>& fields) {
  std::vector<MessageField> owned;
  owned.reserve(fields.size());
  for (const HeaderField& field : fields) owned.push_back({std::string(field.name), std::string(field.value)});
  return owned;
}

// "name: value\r\n" for each field, and the blank line.
std::size_t fields_text_size(const std::vector<MessageField>& fields) noexcept {
  std::size_t size = 2;
  for (const MessageField& field : fields) size += field.name.size() + 2 + field.value.size() + 2;
  return size;
}

void append_fields(std::string& out, const std::vector<MessageField>& fields) {
  for (const MessageField& field : fields) out.append(field.name).append(": ").append(field.value).append("\r\n");
  out += "\r\n";
}

}  // namespace

RequestHead RequestMessage::view() const { return RequestHead{method, target, version, field_views(fields)}; }

RequestMessage RequestMessage::from(const RequestHead& head) {
  return RequestMessage{std::string(head.method), std::string(head.target), std::string(head.version),
                        owned_fields(head.headers)};
}

std::size_t RequestMessage::text_size() const noexcept {
  return method.size() + 1 + target.size() + 1 + version.size() + 2 + fields_text_size(fields);
}

std::string RequestMessage::text() const {
  std::string out;
  out.reserve(text_size());
  out.append(method).append(" ").append(target).append(" ").append(version).append("\r\n");
  append_fields(out, fields);
  return out;
}

ResponseHead ResponseMessage::view() const { return ResponseHead{version, status, reason, field_views(fields)}; }

ResponseMessage ResponseMessage::from(const ResponseHead& head) {
  return ResponseMessage{head.status, std::string(head.reason), std::string(head.version), owned_fields(head.headers)};
}

std::size_t ResponseMessage::text_size() const noexcept {
  return version.size() + 1 + 3 + 1 + reason.size() + 2 + fields_text_size(fields);
}

std::string ResponseMessage::text() const {
  std::string out;
  out.reserve(text_size());
  out.append(version).append(" ").append(std::to_string(status)).append(" ").append(reason).append("\r\n");
  append_fields(out, fields);
  return out;
}

}  // namespace boxproxy
