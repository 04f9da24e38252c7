// SPDX-License-Identifier: Apache-2.0
// fmt's compiled half, built once for the whole project instead of in every file that formats.
//
// Debian's libfmt-dev ships libfmt as a shared library only, and the lean build links boxproxy
// statically (the root CMakeLists.txt says why), so fmt used to be header-only there: every file
// that calls fmt::format then compiled fmt's whole implementation (fmt/format-inl.h: the float
// formatting, vformat and its handlers) at -O2 with debug information, about 4 s of CPU a file,
// more than half of the build (issue 37: the demo's build). Here it is compiled once, from the
// same header, and every other file includes fmt as the shared library's users do: FMT_FUNC empty,
// so the functions of fmt/format-inl.h are defined here, with external linkage, for all of them.
//
// The explicit instantiations below are those fmt/format.h declares `extern template` (without
// FMT_HEADER_ONLY) for char, which no other file may instantiate; a later fmt that declares more
// fails the link, naming what is missing. With FMT_STATIC_THOUSANDS_SEPARATOR (the root
// CMakeLists.txt) none of them reads std::locale, so libstdc++'s locale stays out of the binary.
#include <fmt/format.h>
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
}  // namespace detail
FMT_END_NAMESPACE
