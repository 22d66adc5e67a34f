// UUIDv7 (RFC 9562): time-ordered ids, so job ids sort by creation time.
#pragma once
#include <string>
#include <string_view>

namespace ojs {

std::string make_uuidv7();
bool is_uuidv7(std::string_view text);  // lowercase 8-4-4-4-12, version 7, RFC variant

}  // namespace ojs
