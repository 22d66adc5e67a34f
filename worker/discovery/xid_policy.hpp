// What the worker does about an NVIDIA XID error (the driver's code for a GPU
// fault, reported through NVML's XID critical error event). The table is
// written once here and mirrored in docs/worker.md.
#pragma once
#include <string>

namespace ojs::worker {

enum class XidAction {
  ignore,    // the application's own fault (bad pointer, its context killed): the GPU is fine
  warn,      // logged; the GPU keeps working
  unhealthy  // the GPU needs a reset or is gone: no new job is placed on it
};

struct XidVerdict {
  XidAction action;
  std::string meaning;  // "GPU has fallen off the bus"
};

// Unknown XIDs count as unhealthy, as the Kubernetes NVIDIA device plugin does:
// placing work on a GPU in an unknown fault state costs more than idling it.
XidVerdict classify_xid(unsigned long long xid);

// "xid 79: GPU has fallen off the bus", the reason advertised with the device.
std::string xid_reason(unsigned long long xid);

}  // namespace ojs::worker
