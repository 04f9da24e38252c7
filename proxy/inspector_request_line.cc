// SPDX-License-Identifier: Apache-2.0
// The request message, written and read by hand from one table of its fields
// (proxy/inspector_request_line.h).
//
// One for every request on every inspected connection, so it is written and read without a JSON
// document: nlohmann's parse, its object and its checks were a quarter of serve's CPU for each
// inspected request, and building and dumping one 4% of the inspector's (perf, 2026-12-06). It
// is still one line of JSON, in exactly one shape:
//   {"op":"request","id":N,"method":"M","rule":"R","class":"C","status":S,"up":U,"down":D,"ms":T,
//    "report":true|false[,"path":"P"][,"secret":"NAME"][,"swap":"..."][,"inject":"..."][,"sign":"aws-sigv4"][,"asked":"A"]
//    [,"scrub":"NAME,..."]}
// Numbers are decimal, no sign, fraction, exponent or leading zero. Strings hold what text()
// takes (printable ASCII: the inspector reports nothing else), with '"' and '\' escaped as \" and
// \\ and no other escape: anything else is refused, as the general path refuses a bad field.
//
// The shape is one table, kRequestFields: a row a field, naming its key, the InspectorRequest
// member it carries, how its value is written and read (a codec, below) and whether it is always
// there or only when set. The writer and the reader both walk the table in its order, so they
// cannot disagree, and a new field is one row. The table is a tuple walked by a fold: every row
// compiles to the code the hand-written writer and reader had (bench/inspect holds it).
#include "proxy/inspector_request_line.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <limits>
#include <tuple>
#include <utility>

#include "table/inspect_endpoint.h"
#include "table/secret_value.h"

namespace boxproxy {
namespace {

// A field that does not hold: thrown inside a read, caught at its top (read_request_line).
struct Refused {
  std::string why;
};

[[noreturn]] void refuse(std::string why) { throw Refused{std::move(why)}; }
[[noreturn]] void refuse_key(const char* key) { refuse(std::string("bad \"") + key + "\""); }

void append_key(std::string& out, std::string_view key) {
  out += ",\"";
  out += key;
  out += "\":";
}

void append_number(std::string& out, std::uint64_t value) {
  char digits[24];
  const auto written = std::to_chars(std::begin(digits), std::end(digits), value);
  out.append(digits, written.ptr);
}

void append_text(std::string& out, std::string_view value) {
  out += '"';
  for (const char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

// Reads the values of request_message's shape in order, with the general path's checks on each.
class RequestReader {
 public:
  explicit RequestReader(std::string_view bytes) : rest_(bytes.substr(kRequestLinePrefix.size())) {}

  [[nodiscard]] bool has_key(std::string_view key) const {
    return rest_.size() > key.size() + 4 && rest_.starts_with(",\"") && rest_.substr(2).starts_with(key) &&
           rest_.substr(2 + key.size()).starts_with("\":");
  }
  void take_key(const char* key) {
    if (!has_key(key)) refuse_key(key);
    rest_.remove_prefix(std::string_view(key).size() + 4);
  }
  std::uint64_t number(const char* key, std::uint64_t most) {
    std::size_t n = 0;
    while (n < rest_.size() && rest_[n] >= '0' && rest_[n] <= '9') ++n;
    std::uint64_t value = 0;
    const auto read = std::from_chars(rest_.data(), rest_.data() + n, value);
    if (n == 0 || (n > 1 && rest_[0] == '0') || read.ec != std::errc() || value > most) refuse_key(key);
    rest_.remove_prefix(n);
    return value;
  }
  std::string text(const char* key, std::size_t most, bool spaces = false) {
    if (!rest_.starts_with('"')) refuse_key(key);
    std::string out;
    std::size_t i = 1;
    for (; i < rest_.size() && rest_[i] != '"'; ++i) {
      if (rest_[i] == '\\') {
        if (++i == rest_.size() || (rest_[i] != '"' && rest_[i] != '\\')) refuse_key(key);
      }
      if (out.size() == most) refuse_key(key);  // stops early: reported_text_ok would refuse it anyway
      out += rest_[i];
    }
    if (i == rest_.size()) refuse_key(key);  // unterminated
    rest_.remove_prefix(i + 1);
    if (!reported_text_ok(out, most, spaces)) refuse_key(key);
    return out;
  }
  // A word of a vocabulary (a class, an asked=, a signature), read in place: no word has a quote
  // or a backslash, so a string with an escape is not one. The caller looks it up, which is its
  // whole check.
  std::string_view word(const char* key, std::size_t most) {
    if (!rest_.starts_with('"')) refuse_key(key);
    const std::size_t close = rest_.find('"', 1);
    if (close == std::string_view::npos || close - 1 > most) refuse_key(key);
    const std::string_view out = rest_.substr(1, close - 1);
    if (out.find('\\') != std::string_view::npos) refuse_key(key);
    rest_.remove_prefix(close + 1);
    return out;
  }
  bool flag(const char* key) {
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "true" : "false";
      if (rest_.starts_with(word)) {
        rest_.remove_prefix(word.size());
        return value;
      }
    }
    refuse_key(key);
  }
  void end() const {
    if (rest_ != "}") refuse("not in its shape");
  }

 private:
  std::string_view rest_;
};

bool bad_name_item(std::string_view item) { return check_secret_name(item).has_value(); }
bool bad_header_item(std::string_view item) { return check_inject_header(item).has_value(); }
// NAME@PLACE: a secret name, and a place of printable bytes (secret_place_text's: no ',', no space).
bool bad_swap_item(std::string_view item) {
  const std::size_t at = item.find('@');
  if (at == std::string_view::npos || check_secret_name(item.substr(0, at))) return true;
  const std::string_view place = item.substr(at + 1);
  return place.empty() || std::any_of(place.begin(), place.end(), [](char c) { return c <= 0x20 || c >= 0x7f || c == ','; });
}

// ---- the codecs: how a field's value is written, and read back checked ----
// A row that is always there hands its codec the member as it is; a row there only when set
// hands its writer the value inside (an optional's, or a non-empty string's or list's) and its
// reader the member to set.

// A number: decimal, at most `most`.
struct Number {
  std::uint64_t most = std::numeric_limits<std::uint64_t>::max();
  void write(std::string& out, std::uint64_t value) const { append_number(out, value); }
  template <class T>
  void read(RequestReader& in, const char* key, T& value) const {
    value = static_cast<T>(in.number(key, most));
  }
};

// A string of check_text's bytes (no space), 1 to `most`.
struct Text {
  std::size_t most;
  void write(std::string& out, std::string_view value) const { append_text(out, value); }
  template <class T>
  void read(RequestReader& in, const char* key, T& value) const {
    value = in.text(key, most);
  }
};

struct Flag {
  void write(std::string& out, bool value) const { out += value ? "true" : "false"; }
  void read(RequestReader& in, const char* key, bool& value) const { value = in.flag(key); }
};

// A secret's name: it stands alone on the line as secret=NAME.
struct SecretName {
  void write(std::string& out, std::string_view name) const { append_text(out, name); }
  void read(RequestReader& in, const char* key, std::optional<std::string>& name) const {
    std::string text = in.text(key, 32);
    if (check_secret_name(text)) refuse_key(key);
    name = std::move(text);
  }
};

// The class: "ok" (no refusal) or a Reason's log class. One serve does not know is never logged
// as one: the message is refused.
struct ClassWord {
  void write(std::string& out, const std::optional<Reason>& refusal) const {
    append_text(out, refusal ? log_class(*refusal) : std::string_view("ok"));
  }
  void read(RequestReader& in, const char* key, std::optional<Reason>& refusal) const {
    const std::string_view word = in.word(key, kMaxReportedClassBytes);
    if (word == "ok") return refusal.reset();
    refusal = reason_from_log_class(word);
    if (!refusal) refuse_key(key);
  }
};

// asked=: one of five words, never anything else.
struct AskedWord {
  void write(std::string& out, RequestAsked asked) const { append_text(out, asked_text(asked)); }
  void read(RequestReader& in, const char* key, std::optional<RequestAsked>& asked) const {
    asked = parse_asked(in.word(key, 16));
    if (!asked) refuse_key(key);
  }
};

// sign=: the one signature there is.
struct Signature {
  void write(std::string& out, std::string_view sign) const { append_text(out, sign); }
  void read(RequestReader& in, const char* key, std::string& sign) const {
    const std::string_view word = in.word(key, 16);
    if (word != "aws-sigv4") refuse_key(key);
    sign.assign(word);
  }
};

// A trace list, "a,b", whose every item is checked, so a line's swap=, inject= and scrub= carry
// names and nothing else (never a value, never a byte that could forge a field).
struct List {
  bool (*bad_item)(std::string_view);
  void write(std::string& out, const TraceList& list) const { append_text(out, list.text()); }
  void read(RequestReader& in, const char* key, TraceList& list) const {
    std::string joined = in.text(key, kMaxSecrets * 200);
    std::string_view rest = joined;
    while (true) {
      const std::size_t comma = rest.find(',');
      if (bad_item(rest.substr(0, comma))) refuse_key(key);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
    list = TraceList(std::move(joined));
  }
};

// ---- the table ----

enum class Presence : bool { always, when_set };

template <auto Member, Presence kPresence, class Codec>
struct Field {
  const char* key;
  Codec codec;
};

template <auto Member, class Codec>
constexpr Field<Member, Presence::always, Codec> always(const char* key, Codec codec) {
  return {key, codec};
}
template <auto Member, class Codec>
constexpr Field<Member, Presence::when_set, Codec> when_set(const char* key, Codec codec) {
  return {key, codec};
}

using Request = InspectorRequest;
constexpr std::tuple kRequestFields{
    always<&Request::id>("id", Number{}),
    always<&Request::method>("method", Text{kMaxReportedMethodBytes}),
    always<&Request::rule>("rule", Text{kMaxReportedRuleBytes}),
    always<&Request::refusal>("class", ClassWord{}),
    always<&Request::status>("status", Number{999}),
    always<&Request::up>("up", Number{}),
    always<&Request::down>("down", Number{}),
    always<&Request::ms>("ms", Number{}),
    always<&Request::report>("report", Flag{}),
    when_set<&Request::path>("path", Text{kMaxReportedPathBytes}),
    when_set<&Request::secret>("secret", SecretName{}),
    when_set<&Request::swap>("swap", List{&bad_swap_item}),
    when_set<&Request::inject>("inject", List{&bad_header_item}),
    when_set<&Request::sign>("sign", Signature{}),
    when_set<&Request::asked>("asked", AskedWord{}),
    when_set<&Request::scrub>("scrub", List{&bad_name_item}),
};

template <class T>
bool is_set(const std::optional<T>& value) {
  return value.has_value();
}
template <class T>
bool is_set(const T& value) {
  return !value.empty();
}
template <class T>
const T& set_value(const std::optional<T>& value) {
  return *value;
}
template <class T>
const T& set_value(const T& value) {
  return value;
}

template <auto Member, Presence kPresence, class Codec>
void write_field(std::string& out, const Request& request, const Field<Member, kPresence, Codec>& field) {
  const auto& value = request.*Member;
  if constexpr (kPresence == Presence::always) {
    append_key(out, field.key);
    field.codec.write(out, value);
  } else if (is_set(value)) {
    append_key(out, field.key);
    field.codec.write(out, set_value(value));
  }
}

template <auto Member, Presence kPresence, class Codec>
void read_field(RequestReader& in, Request& request, const Field<Member, kPresence, Codec>& field) {
  if constexpr (kPresence == Presence::when_set) {
    if (!in.has_key(field.key)) return;
  }
  in.take_key(field.key);
  field.codec.read(in, field.key, request.*Member);
}

}  // namespace

bool reported_text_ok(std::string_view s, std::size_t most, bool spaces) noexcept {
  if (s.empty() || s.size() > most || s.front() == ' ' || s.back() == ' ') return false;
  return std::all_of(s.begin(), s.end(), [spaces](char c) { return (c >= 0x21 || (spaces && c == ' ')) && c <= 0x7e; });
}

std::string write_request_line(const InspectorRequest& request) {
  std::string out;
  out.reserve(160 + request.method.size() + request.rule.size() + (request.path ? request.path->size() : 0));
  out += kRequestLinePrefix;
  std::apply([&](const auto&... field) { (write_field(out, request, field), ...); }, kRequestFields);
  out += '}';
  return out;
}

std::variant<InspectorRequest, std::string> read_request_line(std::string_view bytes) {
  try {
    RequestReader in(bytes);
    InspectorRequest request;
    std::apply([&](const auto&... field) { (read_field(in, request, field), ...); }, kRequestFields);
    in.end();
    return request;
  } catch (const Refused& refused) {
    return refused.why;
  }
}

}  // namespace boxproxy
