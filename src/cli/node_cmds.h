// `tessera cordon`, `uncordon` and `drain`: a node, or one of its GPUs, out of service or back.
// A GPU's cordon is the Node's tessera.io/cordoned-gpus annotation (api/kinds.h); uncordoning
// also lifts the scheduling loop's quarantine of that GPU, and uncordoning the node its reboot
// mark (api/gpu_quarantine.h). Drain evicts the node's pods as kubectl drain does.
#ifndef TESSERA_CLI_NODE_CMDS_H_
#define TESSERA_CLI_NODE_CMDS_H_

#include <ostream>

#include "cli/resource_cmds.h"

namespace tessera::cli {

int Cordon(const ResourceOptions& o, bool on, std::ostream& out, std::ostream& err);
int Drain(const ResourceOptions& o, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_NODE_CMDS_H_
