// SPDX-License-Identifier: Apache-2.0
#include "proxy/bridge/dns_responder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "proxy/out_queue.h"
#include "proxy/transient_error.h"
#include "table/ascii.h"

namespace boxproxy {
namespace {

// A TCP message is its 2-byte length and then the message (RFC 1035 §4.2.2). A query is never
// longer than kMaxDnsQueryBytes (see there); a longer one closes the client.
constexpr std::size_t kTcpLengthBytes = 2;

}  // namespace

// ---------------------------------------------------------------------------------------------
// One question waiting for the proxy's verdict, over a Unix socket of its own.

class DnsResponder::Question {
 public:
  using Done = void (*)(void* owner, Question& question);

  Question(DnsResponder& responder, DnsQuestion question, Done done, void* owner)
      : responder_(responder),
        question_(std::move(question)),
        name_key_(ascii_lower(question_.name)),
        done_(done),
        owner_(owner),
        timer_(responder.base(), &on_timeout, this) {}
  ~Question() {
    if (leader_ != nullptr) std::erase(leader_->followers_, this);
    if (leads()) hand_over_lead();
    responder_.question_finished();
  }
  Question(const Question&) = delete;
  Question& operator=(const Question&) = delete;

  // Asks the proxy, or follows a question about the same name already asking it (a box's
  // resolver sends A and AAAA together: one RESOLVE, one decision and one log line for both; the
  // verdict is the name's, whatever the type). False when the proxy cannot be asked now (the
  // answer is then SERVFAIL, given by the caller).
  bool start() {
    if (!timer_.valid()) return false;
    const auto asking = responder_.asking_.find(name_key_);
    if (asking != responder_.asking_.end()) {
      leader_ = asking->second;
      leader_->followers_.push_back(this);
      timer_.arm(kDnsAskSeconds);  // its own bound, whatever becomes of the leader
      return true;
    }
    if (!ask_proxy()) return false;
    responder_.asking_.emplace(name_key_, this);
    return true;
  }

  [[nodiscard]] const DnsQuestion& question() const noexcept { return question_; }
  [[nodiscard]] Socks5ReplyReader::State verdict() const noexcept { return verdict_; }

 private:
  [[nodiscard]] bool leads() const noexcept {
    const auto asking = responder_.asking_.find(name_key_);
    return asking != responder_.asking_.end() && asking->second == this;
  }

  // This question goes (its client left) before the proxy answered: the first follower asks in
  // its place, the others follow it. Nothing is answered from here (a destructor may run inside
  // another owner's teardown); a follower that cannot ask waits for its own timeout (SERVFAIL).
  void hand_over_lead() noexcept {
    responder_.asking_.erase(name_key_);
    std::vector<Question*> followers = std::exchange(followers_, {});
    for (Question* follower : followers) follower->leader_ = nullptr;
    if (followers.empty() || responder_.stopping_) return;
    Question* next = followers.front();
    if (!next->ask_proxy()) return;
    responder_.asking_.emplace(name_key_, next);
    for (Question* follower : std::span(followers).subspan(1)) {
      follower->leader_ = next;
      next->followers_.push_back(follower);
    }
  }

  // Connects and sends the RESOLVE.
  bool ask_proxy() noexcept {
    fd_.reset(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd_.valid()) return false;
    // A Unix socket connects at once or not at all (EAGAIN: its backlog is full). The socket
    // pinned at start, never its name (proxy/bridge/proxy_socket.h says what that stops).
    if (responder_.proxy().connect(fd_.get()) != 0) return false;
    const std::string request = socks5_resolve_request(question_.name);
    // Under 300 bytes: a new socket's buffer takes it whole, or something is wrong.
    if (::send(fd_.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
      return false;
    }
    read_event_ = make_event(responder_.base(), fd_.get(), EV_READ | EV_PERSIST, &on_readable, this);
    if (!read_event_) return false;
    event_add(read_event_.get(), nullptr);
    timer_.arm(kDnsAskSeconds);
    return true;
  }

  static void on_readable(evutil_socket_t, short, void* self) noexcept { static_cast<Question*>(self)->readable(); }
  static void on_timeout(void* self) noexcept {
    static_cast<Question*>(self)->finish(Socks5ReplyReader::State::malformed);
  }

  void readable() {
    char buffer[512];
    const std::size_t want = std::min(reply_.wanted(), sizeof buffer);
    const ssize_t n = ::recv(fd_.get(), buffer, want, 0);
    if (n == -1 && transient_error(errno)) return;
    if (n <= 0) return finish(Socks5ReplyReader::State::malformed);  // closed before answering
    const auto state = reply_.feed({buffer, static_cast<std::size_t>(n)});
    if (state != Socks5ReplyReader::State::need_more) finish(state);
  }

  // Hands the verdict to the followers' owners, then to this one's, each of which deletes its
  // question (and only its own): nothing may follow the last call.
  void finish(Socks5ReplyReader::State verdict) {
    verdict_ = verdict;
    read_event_.reset();
    timer_.disarm();
    fd_.reset();
    if (leader_ != nullptr) std::erase(std::exchange(leader_, nullptr)->followers_, this);  // timed out alone
    if (leads()) responder_.asking_.erase(name_key_);
    for (Question* follower : std::exchange(followers_, {})) {
      follower->leader_ = nullptr;
      follower->finish(verdict);
    }
    done_(owner_, *this);
  }

  DnsResponder& responder_;
  DnsQuestion question_;
  std::string name_key_;  // the name in lower case: questions about it share one RESOLVE
  Done done_;
  void* owner_;
  UniqueFd fd_;  // the leader's; a follower asks nothing itself
  EventPtr read_event_;
  Timer timer_;
  Socks5ReplyReader reply_;
  Socks5ReplyReader::State verdict_ = Socks5ReplyReader::State::malformed;
  Question* leader_ = nullptr;          // a follower's: the question asking for it
  std::vector<Question*> followers_;    // a leader's: answered with its verdict, before it
};

// ---------------------------------------------------------------------------------------------
// A question that came by UDP: where its answer goes.

struct DnsResponder::UdpQuestion {
  DnsResponder* responder = nullptr;
  int fd = -1;  // the UDP socket it came on (the responder's)
  sockaddr_storage peer{};
  socklen_t peer_length = 0;
  std::unique_ptr<Question> question;
};

// ---------------------------------------------------------------------------------------------
// A TCP client: one query at a time, its answer written before the next is read.

class DnsResponder::TcpClient {
 public:
  TcpClient(DnsResponder& responder, int fd)
      : responder_(responder), fd_(fd), timer_(responder.base(), &on_idle, this) {}
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  bool init() {
    read_event_ = make_event(responder_.base(), fd_.get(), EV_READ | EV_PERSIST, &on_read, this);
    write_event_ = make_event(responder_.base(), fd_.get(), EV_WRITE | EV_PERSIST, &on_write, this);
    if (!read_event_ || !write_event_ || !timer_.valid()) return false;
    wait_for_query();
    return true;
  }

 private:
  static void on_read(evutil_socket_t, short, void* self) noexcept {
    auto* client = static_cast<TcpClient*>(self);
    if (!client->readable()) client->responder_.forget(client);
  }
  static void on_write(evutil_socket_t, short, void* self) noexcept {
    auto* client = static_cast<TcpClient*>(self);
    if (!client->flush()) client->responder_.forget(client);
  }
  static void on_idle(void* self) noexcept {
    auto* client = static_cast<TcpClient*>(self);
    client->responder_.forget(client);
  }
  static void on_answered(void* self, Question& question) noexcept {
    auto* client = static_cast<TcpClient*>(self);
    const std::string answer = client->responder_.answer(question.question(), question.verdict());
    client->question_.reset();  // `question` is gone from here on
    if (!client->send_answer(answer)) client->responder_.forget(client);
  }

  void wait_for_query() {
    event_add(read_event_.get(), nullptr);
    timer_.arm(kDnsTcpIdleSeconds);
  }

  // False: close the client.
  bool readable() {
    char buffer[kTcpLengthBytes + kMaxDnsQueryBytes];
    const std::size_t need = wanted();
    const ssize_t n = ::recv(fd_.get(), buffer, std::min(need, sizeof buffer), 0);
    if (n == -1) return transient_error(errno);
    if (n == 0) return false;
    in_.append(buffer, static_cast<std::size_t>(n));
    return handle_buffer();
  }

  // Bytes still missing from the message being read.
  [[nodiscard]] std::size_t wanted() const noexcept {
    if (in_.size() < kTcpLengthBytes) return kTcpLengthBytes - in_.size();
    return kTcpLengthBytes + message_length() - in_.size();
  }
  [[nodiscard]] std::size_t message_length() const noexcept {
    return (static_cast<std::size_t>(static_cast<unsigned char>(in_[0])) << 8) | static_cast<unsigned char>(in_[1]);
  }

  bool handle_buffer() {
    if (in_.size() < kTcpLengthBytes) return true;
    const std::size_t length = message_length();
    if (length == 0 || length > kMaxDnsQueryBytes) return false;  // no query is that long
    if (in_.size() < kTcpLengthBytes + length) return true;
    const std::string message = in_.substr(kTcpLengthBytes, length);
    in_.clear();
    // One query at a time: no read until its answer is written.
    event_del(read_event_.get());
    timer_.disarm();
    DnsQuestion question;
    bool must_ask = false;
    const std::string now = responder_.immediate_answer(message, question, must_ask);
    if (!must_ask) return !now.empty() && send_answer(now);  // nothing to answer: close
    question_ = responder_.ask(question, &on_answered, this);
    if (!question_) return send_answer(responder_.answer(question, Socks5ReplyReader::State::malformed));  // busy
    return true;
  }

  bool send_answer(std::string_view answer) {
    out_.clear();
    out_.push_back(static_cast<char>((answer.size() >> 8) & 0xff));
    out_.push_back(static_cast<char>(answer.size() & 0xff));
    out_.append(answer);
    return flush();
  }

  bool flush() {
    if (out_.write_to(fd_.get()).failed) return false;
    if (!out_.empty()) {
      event_add(write_event_.get(), nullptr);
      timer_.arm(kDnsTcpIdleSeconds);  // a client that never reads is not kept
      return true;
    }
    event_del(write_event_.get());
    wait_for_query();
    return true;
  }

  DnsResponder& responder_;
  UniqueFd fd_;
  EventPtr read_event_;
  EventPtr write_event_;
  Timer timer_;
  std::string in_;   // at most 2 + kMaxDnsQueryBytes
  OutQueue out_;     // one answer
  std::unique_ptr<Question> question_;  // declared last: destroyed first, events and all
};

// ---------------------------------------------------------------------------------------------

DnsResponder::DnsResponder(event_base* base, const ProxySocket& proxy, NameAddresses& names)
    : base_(base), proxy_(proxy), names_(names), tcp_(base, this, &on_tcp_client, &on_tcp_paused) {}

DnsResponder::~DnsResponder() { stop(); }

void DnsResponder::add_udp(int fd) {
  auto socket = std::make_unique<UdpSocket>();
  socket->responder = this;
  socket->fd.reset(fd);
  socket->read_event = make_event(base_, fd, EV_READ | EV_PERSIST, &on_udp_readable, socket.get());
  if (!socket->read_event) throw std::runtime_error("cannot watch the DNS socket");
  event_add(socket->read_event.get(), nullptr);
  udp_.push_back(std::move(socket));
}

void DnsResponder::add_tcp(int fd) {
  try {
    tcp_.add(fd);
  } catch (const std::runtime_error&) {
    throw std::runtime_error("cannot listen for DNS over TCP");
  }
}

void DnsResponder::stop() noexcept {
  stopping_ = true;  // no question asks the proxy in place of one that goes
  tcp_.stop();
  udp_.clear();
  udp_questions_.clear();
  for (TcpClient* client : tcp_clients_) delete client;
  tcp_clients_.clear();
  asking_.clear();
}

void DnsResponder::forget(TcpClient* client) noexcept {
  const auto at = std::find(tcp_clients_.begin(), tcp_clients_.end(), client);
  if (at != tcp_clients_.end()) tcp_clients_.erase(at);
  delete client;
}

std::string DnsResponder::immediate_answer(std::string_view message, DnsQuestion& ask, bool& must_ask) {
  must_ask = false;
  DnsQuery query = parse_dns_query(message);
  switch (query.status) {
    case DnsQuery::Status::drop:
      return {};
    case DnsQuery::Status::error:
      ++stats_.queries;
      return build_dns_error(query.id, query.recursion_desired, query.rcode);
    case DnsQuery::Status::question:
      break;
  }
  const DnsQuestion& question = query.question;
  const bool address_type = question.type == static_cast<std::uint16_t>(DnsType::a) ||
                            question.type == static_cast<std::uint16_t>(DnsType::aaaa);
  if (!address_type) {
    // MX, TXT, HTTPS, ANY...: no records, and no one asked (a box learns nothing from it).
    ++stats_.queries;
    return build_dns_reply(question, DnsRcode::no_error);
  }
  if (!question.name_is_text || question.name.empty()) {
    // Not a host name the proxy could be asked about (SPEC §5 would refuse it as invalid host).
    ++stats_.queries;
    ++stats_.refused;
    return build_dns_reply(question, DnsRcode::name_error);
  }
  must_ask = true;
  ask = std::move(query.question);
  return {};
}

std::string DnsResponder::answer(const DnsQuestion& question, Socks5ReplyReader::State verdict) {
  ++stats_.queries;
  switch (verdict) {
    case Socks5ReplyReader::State::granted: {
      // The bridge's own address for the name, never the real one (proxy/bridge/name_addresses.h):
      // whether the proxy answered with an address (a name it lets through) or with the name
      // itself (one it asks about when the box connects, SPEC §15), the box learns no address.
      const auto family = question.type == static_cast<std::uint16_t>(DnsType::a) ? IpAddress::Family::v4
                                                                                   : IpAddress::Family::v6;
      const IpAddress address = names_.address_for(ascii_lower(question.name), family);
      return build_dns_reply(question, DnsRcode::no_error, std::span<const IpAddress>(&address, 1),
                             kDnsAnswerTtlSeconds);
    }
    case Socks5ReplyReader::State::refused:
      ++stats_.refused;
      return build_dns_reply(question, DnsRcode::name_error);
    default:
      return build_dns_reply(question, DnsRcode::server_failure);
  }
}

std::unique_ptr<DnsResponder::Question> DnsResponder::ask(DnsQuestion question, void (*done)(void*, Question&),
                                                          void* owner) {
  if (in_flight_ >= kMaxDnsInFlight) {
    ++stats_.busy;
    return nullptr;
  }
  ++in_flight_;  // given back by ~Question
  std::unique_ptr<Question> asking(new (std::nothrow) Question(*this, std::move(question), done, owner));
  if (!asking) {
    --in_flight_;
    return nullptr;
  }
  if (!asking->start()) return nullptr;
  return asking;
}

void DnsResponder::on_udp_readable(evutil_socket_t, short, void* self) noexcept {
  auto* socket = static_cast<UdpSocket*>(self);
  socket->responder->read_datagrams(*socket);
}

void DnsResponder::read_datagrams(UdpSocket& socket) noexcept {
  for (std::size_t i = 0; i < kMaxDnsDatagramsPerWake; ++i) {
    char buffer[kMaxDnsQueryBytes];
    sockaddr_storage peer{};
    socklen_t peer_length = sizeof peer;
    // A longer datagram is cut to its first 512 bytes (and then is, at best, a question followed
    // by a cut EDNS record, which is ignored).
    const ssize_t n = ::recvfrom(socket.fd.get(), buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&peer),
                                 &peer_length);
    if (n == -1) return;  // drained (or an error the next datagram will not have)
    DnsQuestion question;
    bool must_ask = false;
    std::string now = immediate_answer({buffer, static_cast<std::size_t>(n)}, question, must_ask);
    std::unique_ptr<UdpQuestion> waiting;
    if (must_ask) {
      waiting.reset(new (std::nothrow) UdpQuestion);
      if (waiting) {
        waiting->responder = this;
        waiting->fd = socket.fd.get();
        waiting->peer = peer;
        waiting->peer_length = peer_length;
        waiting->question = ask(question, &on_udp_answered, waiting.get());
      }
      if (!waiting || !waiting->question) now = answer(question, Socks5ReplyReader::State::malformed);
    }
    if (waiting && waiting->question) {
      udp_questions_.push_back(std::move(waiting));
    } else if (!now.empty()) {
      // A peer whose socket buffer is full loses the answer, as UDP may: its resolver asks again.
      (void)::sendto(socket.fd.get(), now.data(), now.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                     reinterpret_cast<const sockaddr*>(&peer), peer_length);
    }
  }
}

void DnsResponder::on_udp_answered(void* self, Question& question) noexcept {
  auto* waiting = static_cast<UdpQuestion*>(self);
  DnsResponder& responder = *waiting->responder;
  const std::string reply = responder.answer(question.question(), question.verdict());
  (void)::sendto(waiting->fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&waiting->peer), waiting->peer_length);
  // Frees the question too (its finish() touches nothing after this callback).
  auto& list = responder.udp_questions_;
  const auto at = std::find_if(list.begin(), list.end(), [&](const auto& q) { return q.get() == waiting; });
  if (at != list.end()) list.erase(at);
}

void DnsResponder::on_tcp_client(void* self, int fd) noexcept {
  auto* responder = static_cast<DnsResponder*>(self);
  if (responder->tcp_clients_.size() >= kMaxDnsTcpClients) {
    ::close(fd);  // bounded: a box that opens more waits for one to end
    return;
  }
  auto* client = new (std::nothrow) TcpClient(*responder, fd);
  if (client == nullptr) {
    ::close(fd);
    return;
  }
  if (!client->init()) {
    delete client;
    return;
  }
  responder->tcp_clients_.push_back(client);
}

void DnsResponder::on_tcp_paused(void*, int error) noexcept {
  const std::string line = fmt::format("boxproxy bridge: DNS over TCP: {}\n", accept_pause_words(error));
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace boxproxy
