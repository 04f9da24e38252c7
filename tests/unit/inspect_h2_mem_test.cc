// SPDX-License-Identifier: Apache-2.0
// proxy/inspect/h2_session_bounds: the allocator of the origin-facing HTTP/2 session
// (zeroing_h2_mem, what nghttp2 holds a request's injected secrets in) overwrites every block
// before it lets it go, by free and by realloc (which moves the block, never grows it in place).
// A freed block cannot be read, so the test takes the same table through its seam
// (zeroing_h2_mem_releasing_to): each block is handed to `look_then_free` instead of the heap's
// free, which records its bytes while it is still allocated, then frees it.
#include <doctest/doctest.h>
#include <malloc.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "proxy/inspect/h2_session_bounds.h"

using namespace boxproxy;

namespace {

// A block as the release function saw it: where it was and what it held (its usable size).
struct Released {
  void* where = nullptr;
  std::vector<unsigned char> bytes;
};
std::vector<Released> released;  // the test's own record; a release function takes no context

void look_then_free(void* block) {
  const auto* bytes = static_cast<const unsigned char*>(block);
  released.push_back({block, {bytes, bytes + malloc_usable_size(block)}});
  std::free(block);
}

bool all_zero(const std::vector<unsigned char>& bytes) {
  return !bytes.empty() && std::all_of(bytes.begin(), bytes.end(), [](unsigned char b) { return b == 0; });
}

// A block of `size` bytes from the table, every byte 0xA5 (a secret's stand-in).
void* secret_block(nghttp2_mem& mem, std::size_t size) {
  void* block = mem.malloc(size, mem.mem_user_data);
  REQUIRE(block != nullptr);
  std::memset(block, 0xA5, size);
  return block;
}

}  // namespace

TEST_CASE("the seam's table is the origin session's allocator, but for where a block goes at the end") {
  H2Release release = &look_then_free;
  const nghttp2_mem seam = zeroing_h2_mem_releasing_to(&release);
  const nghttp2_mem* production = zeroing_h2_mem();
  CHECK(production->mem_user_data == nullptr);  // released to the heap
  CHECK((seam.malloc == production->malloc));  // doctest cannot print a function pointer
  CHECK((seam.free == production->free));
  CHECK((seam.calloc == production->calloc));
  CHECK((seam.realloc == production->realloc));
}

TEST_CASE("a freed block is all zero when it is let go") {
  H2Release release = &look_then_free;
  nghttp2_mem mem = zeroing_h2_mem_releasing_to(&release);
  released.clear();
  void* block = secret_block(mem, 100);
  mem.free(block, mem.mem_user_data);
  REQUIRE(released.size() == 1);
  CHECK(released[0].where == block);
  CHECK(released[0].bytes.size() >= 100);  // its usable size, the slack after 100 bytes too
  CHECK(all_zero(released[0].bytes));

  mem.free(nullptr, mem.mem_user_data);  // free's contract: nothing, and nothing released
  CHECK(released.size() == 1);
}

TEST_CASE("realloc moves the bytes to a new block and zeroes the old one, growing or shrinking") {
  H2Release release = &look_then_free;
  nghttp2_mem mem = zeroing_h2_mem_releasing_to(&release);
  for (const std::size_t to : {std::size_t{4096}, std::size_t{16}}) {
    CAPTURE(to);
    released.clear();
    void* block = secret_block(mem, 64);
    auto* moved = static_cast<unsigned char*>(mem.realloc(block, to, mem.mem_user_data));
    REQUIRE(moved != nullptr);
    // Moved, never resized in place: the old block was let go, and it was all zero by then.
    CHECK(static_cast<void*>(moved) != block);
    REQUIRE(released.size() == 1);
    CHECK(released[0].where == block);
    CHECK(all_zero(released[0].bytes));
    // What the old block held is in the new one, as far as both go.
    const std::size_t kept = std::min<std::size_t>(to, 64);
    CHECK(std::all_of(moved, moved + kept, [](unsigned char b) { return b == 0xA5; }));
    mem.free(moved, mem.mem_user_data);
  }

  released.clear();
  void* block = secret_block(mem, 64);
  CHECK(mem.realloc(block, 0, mem.mem_user_data) == nullptr);  // realloc to nothing frees
  REQUIRE(released.size() == 1);
  CHECK(released[0].where == block);
  CHECK(all_zero(released[0].bytes));
}
