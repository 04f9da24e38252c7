// SPDX-License-Identifier: Apache-2.0
// The SIGUSR1 stats line (SPEC §12), one formatter for serve's and the bridge's: {"event":"stats"
// and then each field in the order given. Names are the caller's constants; the names in a count
// map (log classes) are quoted.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace boxproxy {

class StatsLine {
 public:
  StatsLine() : text_(R"({"event":"stats")") {}

  StatsLine& number(std::string_view name, std::uint64_t value);
  // An object of counts by name, in the map's order.
  StatsLine& counts(std::string_view name, const std::map<std::string, std::uint64_t, std::less<>>& counts);
  // An object of numbers, in the order given.
  StatsLine& numbers(std::string_view name, std::initializer_list<std::pair<std::string_view, std::uint64_t>> fields);

  // The line, without its newline.
  [[nodiscard]] std::string text() const { return text_ + '}'; }

 private:
  void name(std::string_view name);
  template <typename Fields, typename WriteKey>
  void object(std::string_view field, const Fields& fields, WriteKey write_key);

  std::string text_;
};

}  // namespace boxproxy
