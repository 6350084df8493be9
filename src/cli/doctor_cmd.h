// `tessera doctor [node/NAME | gpu/NODE/INDEX | job/NAME] [-o json] [--local]`: the findings of
// api/doctor.h for the cluster, a node, a GPU or a job, from the objects the server holds. With
// --local, for this machine through NVML (as the seed's diagnosis script runs nvidia-smi): a
// driver that NVML cannot reach is a finding too. Exits 0 when nothing critical was found, 1 when
// something was (so a readiness check can run it), 2 for a usage error, 3 when the server does
// not answer.
#ifndef TESSERA_CLI_DOCTOR_CMD_H_
#define TESSERA_CLI_DOCTOR_CMD_H_

#include <ostream>

#include "cli/resource_cmds.h"

namespace tessera::cli {

// The `doctor` subcommand of `app`, its flags into `o`.
CLI::App* AddDoctorCommand(CLI::App& app, ResourceOptions& o);
int DoctorCommand(const ResourceOptions& o, std::ostream& out, std::ostream& err);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_DOCTOR_CMD_H_
