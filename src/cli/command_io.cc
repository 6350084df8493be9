#include "cli/command_io.h"

#include <algorithm>

namespace tessera::cli {

using nlohmann::json;

int Refused(const Response& r, std::ostream& err) {
  const json body = json::parse(r.body, nullptr, false);
  if (body.is_object() && body.contains("message")) {
    err << "Error from server (" << body.value("reason", std::to_string(r.status))
        << "): " << body["message"].get<std::string>() << "\n";
  } else {
    err << "Error from server (HTTP " << r.status << "): " << r.body << "\n";
  }
  return kRefused;
}

std::optional<Response> Send(const ResourceOptions& o, const std::string& method,
                             const std::string& target, const std::string& body,
                             const std::string& content_type, std::ostream& err, int* code) {
  auto ep = ResolveEndpoint(o.server, o.token, o.ca_file);
  if (!ep.ok()) {
    err << "error: " << ep.status().message() << "\n";
    *code = kUsage;
    return std::nullopt;
  }
  auto r = Request(*ep, method, target, body, content_type);
  if (!r.ok()) {
    err << "error: " << r.status().message() << "\n";
    *code = kUnreachable;
    return std::nullopt;
  }
  return *r;
}

void PrintRows(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> width;
  for (const auto& r : rows) {
    width.resize(std::max(width.size(), r.size()), 0);
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      out << r[i] << (i + 1 < r.size() ? std::string(width[i] - r[i].size() + 3, ' ') : "\n");
    }
  }
}

std::optional<std::vector<json>> List(const ResourceOptions& o, const std::string& target,
                                      std::ostream& err, int* code) {
  auto r = Send(o, "GET", target, "", "", err, code);
  if (!r) return std::nullopt;
  if (r->status != 200) {
    *code = Refused(*r, err);
    return std::nullopt;
  }
  std::vector<json> out;
  for (json& i : json::parse(r->body).value("items", json::array())) out.push_back(std::move(i));
  return out;
}

int Stream(const ResourceOptions& o, const std::string& target,
           const std::function<void(std::string_view)>& on_data, std::ostream& err) {
  auto ep = ResolveEndpoint(o.server, o.token, o.ca_file);
  if (!ep.ok()) {
    err << "error: " << ep.status().message() << "\n";
    return kUsage;
  }
  std::string error_body;
  auto status = RequestStream(*ep, target, on_data, &error_body);
  if (!status.ok()) {
    err << "error: " << status.status().message() << "\n";
    return kUnreachable;
  }
  if (*status != 200) return Refused({*status, error_body}, err);
  return 0;
}

int Update(const ResourceOptions& o, const std::string& target,
           const std::function<bool(json&)>& edit, std::ostream& err) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    int code = 0;
    auto got = Send(o, "GET", target, "", "", err, &code);
    if (!got) return code;
    if (got->status != 200) return Refused(*got, err);
    json obj = json::parse(got->body);
    if (!edit(obj)) return 0;
    auto put = Send(o, "PUT", target, obj.dump(), "application/json", err, &code);
    if (!put) return code;
    if (put->status == 200) return 0;
    if (put->status != 409) return Refused(*put, err);
  }
  err << "error: " << target << " kept changing; try again\n";
  return kRefused;
}

}  // namespace tessera::cli
