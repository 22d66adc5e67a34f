// Checkpoint storage URIs: parsed and normalised before any prefix check, so
// "s3:/evil", "//evil", "file:/etc" or "s3://allowed/../evil/" cannot pass for
// "s3://allowed/". Pure code.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ojs::ml {

// "scheme://authority/path" with scheme s3, gs, az (authority = bucket, required)
// or file (authority empty: "file:///data/"). Empty and "." segments are dropped;
// ".." segments, other schemes and any other shape give nullopt. A trailing
// slash is kept.
std::optional<std::string> normalise_storage_uri(std::string_view uri);

// A relative checkpoint key ("ckpt/step-10"): no scheme, no leading '/', no ".." segment.
bool is_safe_relative_key(std::string_view key);

// Whether `uri` (any string) normalises to a URI inside one of `prefixes` (each
// normalised too): same scheme and authority, and the path continues the
// prefix's path at a segment boundary.
bool storage_uri_allowed(std::string_view uri, const std::vector<std::string>& prefixes);

}  // namespace ojs::ml
