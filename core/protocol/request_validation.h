// Coordinator-side check that every rank asked for the same collective under
// one name. Kept apart from the controller so the protocol file stays about
// the protocol, and so the message format (docs/CONVENTIONS.md) has one home.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "protocol/message.h"

namespace chorus {

// `by_rank` holds one request per rank that submitted the name (at least
// one). Returns the mismatch message for the first field (in the order of
// docs/CONVENTIONS.md) on which some rank disagrees with the lowest rank,
// naming the lowest rank and the lowest disagreeing rank; nullopt when all
// agree.
std::optional<std::string> find_mismatch(const std::map<int, Request>& by_rank);

// The error for a name some rank rejected its own arguments for (a request
// with `error` set): "<op> '<name>' was rejected on rank <r>: <its reason>",
// the lowest such rank, and the others that rejected theirs too; nullopt
// when no rank did. It is checked before find_mismatch, since a rejected
// request's other fields mean nothing.
std::optional<std::string> find_rejection(const std::map<int, Request>& by_rank);

}  // namespace chorus
