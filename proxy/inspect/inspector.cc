// SPDX-License-Identifier: Apache-2.0
// The inspector process's state and its messages (proxy/inspect/inspector.h).
#include "proxy/inspect/inspector.h"

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <utility>
#include <variant>

#include "proxy/inspect/openssl_owners.h"
#include "proxy/inspect_array.h"
#include "table/host_list.h"

namespace boxproxy {
namespace {

// The trust store a start message may carry: Debian's whole bundle is about 200 KiB.
constexpr std::size_t kMaxTrustStoreBytes = 4 * 1024 * 1024;
constexpr int kStartTimeoutMs = 10'000;

std::string read_all(int fd, std::size_t most) {
  std::string out;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n == 0) return out;
    if (n < 0) throw std::runtime_error("cannot read the trust store");
    out.append(buffer, static_cast<std::size_t>(n));
    if (out.size() > most) throw std::runtime_error("the trust store is larger than 4 MiB");
  }
}

// The trust store of the origin side: the PEM certificates of `bundle` (the system's store, or
// --upstream-ca's).
X509StorePtr trust_store(const std::string& bundle) {
  X509StorePtr store(X509_STORE_new());
  if (!store) throw std::runtime_error(openssl_failure("cannot make the trust store"));
  BioPtr bio(BIO_new_mem_buf(bundle.data(), static_cast<int>(bundle.size())));
  if (!bio) throw std::runtime_error(openssl_failure("cannot read the trust store"));
  std::size_t added = 0;
  for (;;) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert) break;
    if (X509_STORE_add_cert(store.get(), cert.get()) == 1) ++added;
  }
  (void)take_openssl_errors();  // the end of the bundle reads as an error
  if (added == 0) throw std::runtime_error("the trust store holds no certificate");
  return store;
}

CertTime now() { return std::chrono::system_clock::now(); }

// The operator's CA, from the descriptors serve opened (--ca-cert's, --ca-key's). The files are
// read by their /proc/self/fd paths, which mean nothing to the operator: an error names the
// options instead ("--ca-key: is not the private key of the certificate in --ca-cert").
SessionCa operators_ca(int cert_fd, int key_fd) {
  const std::string cert_path = "/proc/self/fd/" + std::to_string(cert_fd);
  const std::string key_path = "/proc/self/fd/" + std::to_string(key_fd);
  try {
    return SessionCa::load(cert_path, key_path, now());
  } catch (const std::runtime_error& error) {
    std::string text = error.what();
    for (const auto& [path, option] : {std::pair{cert_path, "--ca-cert"}, std::pair{key_path, "--ca-key"}}) {
      for (auto at = text.find(path); at != std::string::npos; at = text.find(path, at)) {
        text.replace(at, path.size(), option);
      }
    }
    throw std::runtime_error(text);
  }
}

}  // namespace

std::vector<std::shared_ptr<const InspectEndpoint>> read_endpoints(const std::string& json_text) {
  const nlohmann::json value = nlohmann::json::parse(json_text, nullptr, false);
  if (!value.is_array()) throw std::runtime_error("the endpoints are not a JSON array");
  auto endpoints = read_inspect_array("the endpoints serve sent", value);
  if (const auto* error = std::get_if<std::string>(&endpoints)) throw std::runtime_error(*error);
  std::vector<std::shared_ptr<const InspectEndpoint>> out;
  for (InspectEndpoint& endpoint : std::get<std::vector<InspectEndpoint>>(endpoints)) {
    out.push_back(std::make_shared<const InspectEndpoint>(std::move(endpoint)));
  }
  return out;
}

InspectorSetup read_start(int channel) {
  std::string error;
  auto message = receive_channel_message(channel, kStartTimeoutMs, error);
  if (!message) throw std::runtime_error("no start message: " + error);
  auto parsed = parse_serve_message(message->bytes);
  if (auto* why = std::get_if<std::string>(&parsed)) throw std::runtime_error("a bad start message: " + *why);
  const auto* start = std::get_if<InspectorStart>(&std::get<InspectorOrder>(parsed));
  if (start == nullptr) throw std::runtime_error("the first message is not start");
  // Descriptors: the trust store, then the operator's CA certificate and key, or none.
  std::vector<UniqueFd>& fds = message->fds;
  if (fds.size() != 1 && fds.size() != 3) throw std::runtime_error("start carries the wrong descriptors");
  const std::string bundle = read_all(fds[0].get(), kMaxTrustStoreBytes);
  SessionCa ca = fds.size() == 3 ? operators_ca(fds[1].get(), fds[2].get()) : SessionCa::generate(start->label, now());
  return InspectorSetup{std::move(ca),
                        make_client_facing_context(),
                        make_origin_context(trust_store(bundle)),
                        start->log_paths,
                        read_endpoints(start->endpoints_json),
                        start->head_timeout,
                        start->idle_timeout,
                        start->max_head_bytes,
                        start->max_held_body};
}

// ---------------------------------------------------------------------------------------------

struct Inspector::Held {
  Inspector* inspector = nullptr;
  std::uint64_t id = 0;
  std::string entry;  // its endpoint's host entry: found again when the endpoints change
  std::unique_ptr<InspectedConnection> connection;
};

Inspector::Inspector(event_base* base, UniqueFd channel, InspectorSetup setup)
    : base_(base),
      setup_(std::move(setup)),
      leaves_(setup_.ca),
      closer_(base),
      pool_(base, setup_.idle_timeout, &on_unpooled, this),
      channel_(base, std::move(channel), &on_message, &on_closed, this) {}

// A kept origin connection closed on its own: serve frees the slot it holds for it.
void Inspector::on_unpooled(void* self, std::uint64_t id) noexcept {
  try {
    static_cast<Inspector*>(self)->report(InspectorUnpooled{id});
  } catch (const std::exception&) {
    static_cast<Inspector*>(self)->finished_ = true;  // serve would hold the slot for ever: end instead
  }
}

Inspector::~Inspector() = default;

bool Inspector::send_ready() { return channel_.send(inspector_message(InspectorReady{setup_.ca.certificate_pem()})); }

void Inspector::report(const InspectorReport& report) { send(inspector_message(report)); }

void Inspector::report(const InspectorRequest& request) { send(inspector_message(request)); }

void Inspector::send(std::string_view message) {
  // A channel serve cannot drain is a serve that stopped reading: nothing here can go on.
  if (!channel_.send(message)) finished_ = true;
}

void Inspector::on_message(void* self, ChannelMessage message) noexcept {
  try {
    static_cast<Inspector*>(self)->order(std::move(message));
  } catch (const std::exception&) {
    static_cast<Inspector*>(self)->finished_ = true;  // out of memory, or worse: end
  }
}

void Inspector::on_closed(void* self) noexcept { static_cast<Inspector*>(self)->finished_ = true; }

void Inspector::order(ChannelMessage message) {
  auto parsed = parse_serve_message(message.bytes);
  scrub(message.bytes);  // a secret's message: its text is not left in the freed heap
  if (std::holds_alternative<std::string>(parsed)) {
    finished_ = true;  // serve is ours: a garbled order means something is badly wrong
    return;
  }
  const InspectorOrder& order = std::get<InspectorOrder>(parsed);
  if (const auto* what = std::get_if<InspectorConnection>(&order)) return start_connection(*what, message);
  if (const auto* dialled = std::get_if<InspectorDialled>(&order)) {
    const auto held = held_.find(dialled->id);
    if (held == held_.end()) return;  // it ended meanwhile: the socket closes with the message
    if (dialled->ok && message.fds.size() == 1) {
      held->second->connection->give_upstream(std::move(message.fds[0]));
    } else {
      held->second->connection->upstream_failed();
    }
    return;
  }
  if (const auto* answer = std::get_if<InspectorAnswer>(&order)) {
    const auto held = held_.find(answer->id);
    if (held != held_.end()) held->second->connection->answer_ask(answer->n, answer->asked);
    return;  // else it ended meanwhile
  }
  if (const auto* evict = std::get_if<InspectorEvict>(&order)) {
    // Closed, then said: serve frees a slot it held for it only now (one it gave to a new
    // connection at the cap is that connection's already, and the word is ignored).
    pool_.evict(evict->id);
    report(InspectorUnpooled{evict->id});
    return;
  }
  if (const auto* update = std::get_if<InspectorEndpoints>(&order)) return endpoints_changed(update->endpoints_json);
  if (const auto* secret = std::get_if<InspectorSecret>(&order)) return secret_changed(*secret);
  if (const auto* placeholder = std::get_if<InspectorPlaceholder>(&order)) return placeholder_made(*placeholder);
}

// Made by serve before it listens (the channel keeps order: before any connection); every
// request reads them (judge_inspected_request).
void Inspector::placeholder_made(const InspectorPlaceholder& placeholder) {
  placeholders_.set(placeholder.name, placeholder.value);
}

// Every connection reads the store at each request (judge_inspected_request), so a value set,
// replaced or revoked here applies from the next request on every connection (SPEC §19).
void Inspector::secret_changed(const InspectorSecret& secret) {
  // Kept origin connections close first: an origin that authenticates a connection once (NTLM,
  // Negotiate, a session bound to it) would go on honouring a value revoked or replaced for the
  // next box connection that took one (found in review).
  pool_.close_all();
  if (!secret.value) return secrets_.revoke(secret.name);
  // serve counts the secrets and never sends more than the store holds: one more is a serve gone
  // wrong, and the inspector ends rather than guess which value a request should carry.
  if (!secrets_.set(secret.name, secret.value->view())) finished_ = true;
}

// A leaf that cannot be made fails every inspected connection alike (the usual cause: a session
// that outlived its CA's 30 days, or the operator's CA expiring): the operator must be told why,
// once, not once per connection a box can open.
void Inspector::say_leaf_failure(const std::string& error) {
  if (error == last_leaf_error_) return;
  last_leaf_error_ = error;
  std::fprintf(stderr, "boxproxy-inspect: no leaf certificate can be made: %s\n", error.c_str());
}

std::shared_ptr<const InspectEndpoint> Inspector::endpoint_for(const std::string& entry) const {
  for (const auto& endpoint : setup_.endpoints) {
    if (entry_text(endpoint->host) == entry) return endpoint;
  }
  return nullptr;
}

void Inspector::start_connection(const InspectorConnection& what, ChannelMessage& message) {
  const auto refuse = [&](Reason refusal) {
    // A kept origin connection serve gave this one is closed with it: serve moved its slot to this
    // connection, which it frees on this end, so one left in the pool would be open uncounted
    // (SPEC §5; found in review). A no-op when the connection took it and closed it itself.
    if (what.pooled) pool_.evict(*what.pooled);
    report(InspectorEnded{what.id, 0, 0, TunnelEnd::error, refusal});
  };
  // The client's socket, and the upstream's unless serve gave a kept origin connection or none
  // (the connection then asks for a dial): proxy/inspector_messages.h.
  const std::size_t fds = message.fds.size();
  if ((fds != 1 && fds != 2) || (fds == 2 && what.pooled) || held_.contains(what.id)) {
    return refuse(Reason::bad_request);
  }
  std::shared_ptr<const InspectEndpoint> endpoint = endpoint_for(what.endpoint);
  if (!endpoint) return refuse(Reason::request_denied);  // removed meanwhile: nothing of it goes through
  LeafOrError leaf = leaves_.leaf_for(what.host, now());
  if (!leaf.leaf) {
    say_leaf_failure(leaf.error);
    return refuse(Reason::upstream_tls);
  }
  auto held = std::make_unique<Held>();
  held->inspector = this;
  held->id = what.id;
  held->entry = what.endpoint;
  InspectedSetup setup;
  setup.id = what.id;
  setup.host = what.host;
  setup.port = what.port;
  setup.endpoint = std::move(endpoint);
  setup.leaf = std::move(leaf.leaf);
  setup.leaf_key = leaves_.key();
  setup.client_ctx = setup_.client_ctx.get();
  setup.origin_ctx = setup_.origin_ctx.get();
  setup.origin_sessions = &origin_sessions_;
  setup.origin_pool = &pool_;
  setup.pooled = what.pooled;
  setup.log_paths = setup_.log_paths;
  setup.max_head_bytes = setup_.max_head_bytes;
  setup.max_held_body = setup_.max_held_body;
  setup.head_timeout = setup_.head_timeout;
  setup.idle_timeout = setup_.idle_timeout;
  setup.closer = &closer_;
  setup.secrets = &secrets_;
  setup.placeholders = &placeholders_;
  setup.scrub = &scrub_source_;
  InspectedConnection::Hooks hooks{held.get(), &on_request, &on_need_upstream, &on_ended, &on_ask};
  UniqueFd upstream = fds == 2 ? std::move(message.fds[1]) : UniqueFd();
  held->connection =
      InspectedConnection::start(base_, std::move(message.fds[0]), std::move(upstream), std::move(setup), hooks);
  if (!held->connection) return refuse(Reason::bad_request);
  held_.emplace(what.id, std::move(held));
}

void Inspector::endpoints_changed(const std::string& json_text) {
  setup_.endpoints = read_endpoints(json_text);
  // Each connection takes its endpoint's new rules from its next request; one whose endpoint is
  // gone closes before its next request (SPEC §18).
  for (auto& [id, held] : held_) held->connection->set_endpoint(endpoint_for(held->entry));
}

// The connection's records are the messages themselves (proxy/inspector_records.h): sent as they are.
void Inspector::on_request(void* context, const InspectorRequest& record) {
  static_cast<Held*>(context)->inspector->report(record);
}

// SPEC §20: serve holds the control channel, so it asks the supervisor (or answers at once).
void Inspector::on_ask(void* context, const InspectorAsk& ask) { static_cast<Held*>(context)->inspector->report(ask); }

void Inspector::on_need_upstream(void* context) {
  auto* held = static_cast<Held*>(context);
  held->inspector->report(InspectorDial{held->id});
}

// The last word of a connection: reported, then the connection (and its Held) deleted.
void Inspector::on_ended(void* context, const InspectorEnded& record) {
  auto* held = static_cast<Held*>(context);
  Inspector* inspector = held->inspector;
  const std::uint64_t id = held->id;
  inspector->report(record);
  inspector->held_.erase(id);
}

}  // namespace boxproxy
