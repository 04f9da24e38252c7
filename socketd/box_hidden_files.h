// SPDX-License-Identifier: Apache-2.0
// The files a `boxproxy run` box must not read (SPEC §19a): every --secret file, --ca-key and
// --auth-token-file. The box shares the host's file system, so pid 1 covers each with /dev/null in
// the box's mount namespace (box_namespaces.h, protect_proxy_paths); this says where.
//
// Why by the descriptor and not the name: a name such as /dev/fd/N or /proc/self/fd/N means
// another file inside the box (the box's own descriptor N, if any) than it meant to the caller, and
// a symbolic link or a relative name likewise. So run opens the name as the proxy will, asks the
// kernel what file that is (/proc/self/fd/M), and masks that file's own path.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace boxproxy {

// Where the file `given` (the value of `option`) really is, to be masked in the box: an absolute
// path with no symbolic link. nullopt when no name on the file system reaches the file (a pipe or a
// socket given as /dev/fd/N, a file already unlinked: the box, which inherits no descriptor of
// run's, cannot reach it), or when `given` cannot be opened (the proxy will say so). Throws
// UsageError (run's, naming the option and the value) when the file cannot be masked safely:
// it has more than one name (a hard link the box could read it by), or the kernel's name for it
// is not that same file here (a file of another mount namespace or root).
[[nodiscard]] std::optional<std::string> path_to_hide(std::string_view option, const std::string& given);

}  // namespace boxproxy
