#include "worker/discovery/host_topology.hpp"

#include "worker/discovery/gpu_mapping.hpp"

#include <hwloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace ojs::worker {

namespace {

constexpr unsigned kPciClassDisplay = 0x03;      // VGA / 3D controllers (NVIDIA GPUs)
constexpr unsigned kPciClassAccelerator = 0x12;  // processing accelerators (AMD Instinct, some NVIDIA)

struct TopologyDeleter {
  void operator()(hwloc_topology* topology) const { hwloc_topology_destroy(topology); }
};
using TopologyPtr = std::unique_ptr<hwloc_topology, TopologyDeleter>;

TopologyPtr load_topology() {
  hwloc_topology_t raw = nullptr;
  if (hwloc_topology_init(&raw) != 0) throw std::runtime_error("hwloc_topology_init failed");
  TopologyPtr topology(raw);
  // PCI devices are filtered out by default; keep the important ones (GPUs, NICs).
  hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(raw) != 0) throw std::runtime_error("hwloc_topology_load failed");
  return topology;
}

unsigned count_of(hwloc_topology_t topology, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(topology, type);
  return n > 0 ? static_cast<unsigned>(n) : 0;
}

std::map<std::string, int> gpu_numa_locality(hwloc_topology_t topology) {
  std::map<std::string, int> locality;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology, nullptr); pci; pci = hwloc_get_next_pcidev(topology, pci)) {
    const unsigned pci_class = pci->attr->pcidev.class_id >> 8;
    if (pci_class != kPciClassDisplay && pci_class != kPciClassAccelerator) continue;
    char bus_id[32];
    std::snprintf(bus_id, sizeof bus_id, "%04x:%02x:%02x.%x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
                  pci->attr->pcidev.dev, pci->attr->pcidev.func);
    const hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topology, pci);
    const int node = (parent && parent->nodeset) ? hwloc_bitmap_first(parent->nodeset) : -1;
    locality[canonical_pci_bus_id(bus_id)] = node;
  }
  return locality;
}

}  // namespace

HostTopology discover_host_topology() {
  const TopologyPtr topology = load_topology();
  HostTopology host;
  host.physical_cores = count_of(topology.get(), HWLOC_OBJ_CORE);
  host.logical_cpus = count_of(topology.get(), HWLOC_OBJ_PU);
  host.numa_nodes = count_of(topology.get(), HWLOC_OBJ_NUMANODE);
  // hwloc sums the NUMA nodes' memory, which some VMs under-report (memory
  // hot-plugged outside any node); the kernel's page count is the floor.
  const auto kernel_bytes = static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
  host.memory_bytes = std::max<std::uint64_t>(hwloc_get_root_obj(topology.get())->total_memory, kernel_bytes);
  host.numa_node_by_pci_bus = gpu_numa_locality(topology.get());
  return host;
}

}  // namespace ojs::worker
