// SPDX-License-Identifier: Apache-2.0
// The live connections a server owns, linked through the connections themselves (no allocation
// per connection), so that shutting down can end every one.
#pragma once

namespace boxproxy {

// The links a listed connection carries: derive from ListLink<Connection>.
template <typename Connection>
struct ListLink {
  Connection* prev = nullptr;
  Connection* next = nullptr;
};

// `Connection` has public `Connection* prev` and `Connection* next` (its ListLink), and its
// destructor calls remove(this): so delete_all() ends with an empty list, and no entry ever
// outlives its object.
template <typename Connection>
class ConnectionList {
 public:
  void add(Connection* connection) noexcept {
    connection->prev = nullptr;
    connection->next = first_;
    if (first_ != nullptr) first_->prev = connection;
    first_ = connection;
  }

  void remove(Connection* connection) noexcept {
    if (connection->prev != nullptr) connection->prev->next = connection->next;
    if (connection->next != nullptr) connection->next->prev = connection->prev;
    if (first_ == connection) first_ = connection->next;
    connection->prev = connection->next = nullptr;
  }

  void delete_all() noexcept {
    while (first_ != nullptr) delete first_;  // each destructor removes itself
  }

 private:
  Connection* first_ = nullptr;
};

}  // namespace boxproxy
