// CPU, memory, NUMA and PCI locality of the host, read with hwloc.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace ojs::worker {

struct HostTopology {
  unsigned physical_cores = 0;
  unsigned logical_cpus = 0;
  std::uint64_t memory_bytes = 0;
  unsigned numa_nodes = 0;
  // Canonical PCI bus id ("0000:18:00.0") of each display/accelerator device
  // -> OS index of its nearest NUMA node, to place jobs near their GPUs.
  std::map<std::string, int> numa_node_by_pci_bus;
};

// Throws std::runtime_error when hwloc cannot load the topology.
HostTopology discover_host_topology();

}  // namespace ojs::worker
