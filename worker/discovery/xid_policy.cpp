#include "worker/discovery/xid_policy.hpp"

#include <map>

namespace ojs::worker {

namespace {

// Sources: NVIDIA "XID Errors" (r580) and the device plugin's application-XID list.
const std::map<unsigned long long, XidVerdict>& xid_table() {
  static const std::map<unsigned long long, XidVerdict> table = {
      {13, {XidAction::ignore, "graphics engine exception (application fault)"}},
      {31, {XidAction::ignore, "GPU memory page fault (application fault)"}},
      {43, {XidAction::ignore, "GPU stopped processing (application context killed)"}},
      {45, {XidAction::ignore, "preemptive cleanup after a previous fault"}},
      {68, {XidAction::ignore, "video processor exception (application fault)"}},
      {92, {XidAction::warn, "high single-bit ECC error rate"}},
      {94, {XidAction::warn, "contained ECC error (only the affected application was stopped)"}},
      {48, {XidAction::unhealthy, "double-bit ECC error"}},
      {61, {XidAction::unhealthy, "internal micro-controller breakpoint"}},
      {62, {XidAction::unhealthy, "internal micro-controller halt"}},
      {63, {XidAction::unhealthy, "ECC page retirement or row remapping recorded: reset needed"}},
      {64, {XidAction::unhealthy, "ECC page retirement or row remapping failure"}},
      {74, {XidAction::unhealthy, "NVLink error"}},
      {79, {XidAction::unhealthy, "GPU has fallen off the bus"}},
      {95, {XidAction::unhealthy, "uncontained ECC error: reset needed"}},
      {119, {XidAction::unhealthy, "GSP RPC timeout"}},
      {120, {XidAction::unhealthy, "GSP error"}},
  };
  return table;
}

}  // namespace

XidVerdict classify_xid(unsigned long long xid) {
  const auto known = xid_table().find(xid);
  if (known != xid_table().end()) return known->second;
  return {XidAction::unhealthy, "unknown XID"};
}

std::string xid_reason(unsigned long long xid) { return "xid " + std::to_string(xid) + ": " + classify_xid(xid).meaning; }

}  // namespace ojs::worker
