// Included by both consumers: an installed Chorus gives its users the public
// headers (include/chorus/...) and nothing else; the runtime's own headers
// (core/base, core/protocol, ops/, ...) must not be reachable, whatever the
// include root they were written against in the tree.
#pragma once

#if __has_include("base/config.h") || __has_include("core/base/config.h") || \
    __has_include("protocol/message.h") || __has_include("core/protocol/message.h") || \
    __has_include("runtime/runtime.h") || __has_include("core/runtime/runtime.h") || \
    __has_include("contracts/backend.h") || __has_include("core/contracts/backend.h") || \
    __has_include("backend.h") || __has_include("ops/host_backend.h") || \
    __has_include("mpi/mpi_context.h") || __has_include("ops/mpi/mpi_context.h")
#error "an internal header of Chorus is reachable from an installed package"
#endif
