// SPDX-License-Identifier: Apache-2.0
// Build-time generator: makes every filter of socketd/confine_filter.cc into its BPF program with
// libseccomp and writes the programs as C++ (declared in socketd/confine_filter_program.h), so
// that serve and bridge load a finished program at start instead of building it (why: there).
//
//   confine_filter_gen OUTPUT.cc
//
// Runs on the build machine: the programs are for its architecture (a cross build would need
// CMAKE_CROSSCOMPILING_EMULATOR, which add_custom_command then uses). Exit status 0, or 1 with a
// message on standard error and OUTPUT as it was (never half written).
#include <linux/filter.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "socketd/confine_filter.h"

namespace {

// "serve_rereading" -> "kServeRereading".
std::string array_name(std::string_view filter) {
  std::string name = "k";
  bool upper = true;
  for (const char c : filter) {
    if (c == '_') {
      upper = true;
      continue;
    }
    name += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return name;
}

std::string generate() {
  using boxproxy::ConfineFilter;
  std::string out =
      "// Generated while building, by socketd/confine_filter_gen from socketd/confine_filter.cc.\n"
      "// Do not edit: tests/unit/socketd_confine_filter_test.cc checks it against the rules.\n"
      "#include \"socketd/confine_filter_program.h\"\n\n"
      "namespace boxproxy {\nnamespace {\n";
  std::string cases;
  for (const ConfineFilter filter : boxproxy::kConfineFilters) {
    const std::string_view name = boxproxy::confine_filter_name(filter);
    const boxproxy::ConfineFilterOwner context = boxproxy::build_confine_filter(filter);
    const std::vector<sock_filter> program = boxproxy::export_confine_program(context.get());
    // The kernel refuses a longer program (EINVAL): better the build fails than every start.
    if (program.empty() || program.size() > BPF_MAXINSNS) {
      throw boxproxy::ConfineFilterError(std::string(name) + ": " + std::to_string(program.size()) +
                                         " instructions (the kernel takes 1 to " + std::to_string(BPF_MAXINSNS) + ")");
    }
    const std::string array = array_name(name);
    out += "\n// " + std::string(name) + ": " + std::to_string(program.size()) + " instructions\n";
    out += "constexpr sock_filter " + array + "[] = {\n";
    for (const sock_filter& instruction : program) {
      char line[64];
      std::snprintf(line, sizeof line, "    {0x%04x, %u, %u, 0x%08x},\n", static_cast<unsigned>(instruction.code),
                    static_cast<unsigned>(instruction.jt), static_cast<unsigned>(instruction.jf),
                    static_cast<unsigned>(instruction.k));
      out += line;
    }
    out += "};\n";
    cases += "    case ConfineFilter::" + std::string(name) + ":\n      return " + array + ";\n";
  }
  out += "\n}  // namespace\n\n"
         "std::span<const sock_filter> confine_program(ConfineFilter filter) noexcept {\n"
         "  switch (filter) {\n" +
         cases +
         "  }\n"
         "  return {};  // not a filter: the kernel refuses an empty program (the proxy does not start)\n"
         "}\n\n"
         "}  // namespace boxproxy\n";
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: confine_filter_gen OUTPUT.cc\n");
    return EXIT_FAILURE;
  }
  const char* path = argv[1];
  std::string text;
  try {
    text = generate();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "confine_filter_gen: %s\n", error.what());
    return EXIT_FAILURE;
  }
  // Written under another name and renamed: an interrupted build leaves no half a file that a
  // later build would take for finished.
  const std::string temporary = std::string(path) + ".tmp";
  std::FILE* file = std::fopen(temporary.c_str(), "w");
  if (file == nullptr) {
    std::perror(temporary.c_str());
    return EXIT_FAILURE;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed || std::rename(temporary.c_str(), path) != 0) {
    std::perror(path);
    std::remove(temporary.c_str());
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
