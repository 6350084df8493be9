// What the resource commands (cli/resource_cmds.cc, cli/report_cmds.cc) share: their exit
// codes, sending a request to the server and reporting its refusal as kubectl does, listing,
// streaming, and printing aligned rows.
#ifndef TESSERA_CLI_COMMAND_IO_H_
#define TESSERA_CLI_COMMAND_IO_H_

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/client.h"
#include "cli/resource_cmds.h"

namespace tessera::cli {

inline constexpr int kRefused = 1;      // the server said no
inline constexpr int kUsage = 2;        // the command line or the configuration is wrong
inline constexpr int kUnreachable = 3;  // no answer from the server

// Prints the server's refusal ("Error from server (Reason): message"); returns kRefused.
int Refused(const Response& r, std::ostream& err);
// Sends a request with the options' endpoint; nullopt (with the exit code in *code and the
// error written to `err`) when there is no endpoint or no answer.
std::optional<Response> Send(const ResourceOptions& o, const std::string& method,
                             const std::string& target, const std::string& body,
                             const std::string& content_type, std::ostream& err, int* code);
// GETs `target`, lets `edit` change the object (false: nothing to do), PUTs it back based on
// the version read; retried when someone else wrote in between. Returns the exit code.
int Update(const ResourceOptions& o, const std::string& target,
           const std::function<bool(nlohmann::json&)>& edit, std::ostream& err);
// GETs a list; nullopt (with the exit code in *code) when it fails.
std::optional<std::vector<nlohmann::json>> List(const ResourceOptions& o, const std::string& target,
                                                std::ostream& err, int* code);
// A streamed GET of `target`, each piece to `on_data`; 0 when the server answered 200, else the
// exit code with the error written to `err`.
int Stream(const ResourceOptions& o, const std::string& target,
           const std::function<void(std::string_view)>& on_data, std::ostream& err);
// Rows as columns aligned three spaces apart.
void PrintRows(const std::vector<std::vector<std::string>>& rows, std::ostream& out);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_COMMAND_IO_H_
