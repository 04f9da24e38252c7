// SPDX-License-Identifier: Apache-2.0
// The stats line's formatter (proxy/stats_line.h).
#include "proxy/stats_line.h"

#include "proxy/decision_log.h"

namespace boxproxy {

void StatsLine::name(std::string_view name) {
  text_ += ",\"";
  text_ += name;
  text_ += "\":";
}

StatsLine& StatsLine::number(std::string_view field, std::uint64_t value) {
  name(field);
  text_ += std::to_string(value);
  return *this;
}

// {"key":value,...}: each key written by `write_key`.
template <typename Fields, typename WriteKey>
void StatsLine::object(std::string_view field, const Fields& fields, WriteKey write_key) {
  name(field);
  char separator = '{';
  for (const auto& [key, value] : fields) {
    text_ += separator;
    write_key(key);
    text_ += ':';
    text_ += std::to_string(value);
    separator = ',';
  }
  if (separator == '{') text_ += '{';
  text_ += '}';
}

StatsLine& StatsLine::counts(std::string_view field, const std::map<std::string, std::uint64_t, std::less<>>& counts) {
  object(field, counts, [this](const std::string& key) { text_ += json_quote(key); });
  return *this;
}

StatsLine& StatsLine::numbers(std::string_view field,
                              std::initializer_list<std::pair<std::string_view, std::uint64_t>> fields) {
  object(field, fields, [this](std::string_view key) {
    text_ += '"';
    text_ += key;
    text_ += '"';
  });
  return *this;
}

}  // namespace boxproxy
