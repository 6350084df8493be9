// `tessera usage` (the accounting ledger's report) and `tessera top` (nodes' GPUs and running
// pods now), run by RunResourceCommand (cli/resource_cmds.h).
#ifndef TESSERA_CLI_REPORT_CMDS_H_
#define TESSERA_CLI_REPORT_CMDS_H_

#include <ostream>

#include "cli/resource_cmds.h"

namespace tessera::cli {

int UsageCommand(const ResourceOptions& o, std::ostream& out, std::ostream& err);
int TopCommand(const ResourceOptions& o, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_REPORT_CMDS_H_
