// The doctor's findings: order and output (api/doctor.h). The checks live in doctor_gpus.cc,
// doctor_queues.cc and doctor_jobs.cc.
#include "api/doctor.h"

#include <algorithm>
#include <sstream>
#include <tuple>

namespace tessera::api {

using nlohmann::json;

Finding MakeFinding(Severity s, std::string check, std::string subject, std::string summary) {
  Finding f;
  f.severity = s;
  f.check = std::move(check);
  f.subject = std::move(subject);
  f.summary = std::move(summary);
  return f;
}

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return "critical";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      break;
  }
  return "info";
}

void SortFindings(std::vector<Finding>* findings) {
  std::stable_sort(findings->begin(), findings->end(), [](const Finding& a, const Finding& b) {
    return std::make_tuple(-static_cast<int>(a.severity), a.subject, a.check) <
           std::make_tuple(-static_cast<int>(b.severity), b.subject, b.check);
  });
}

json FindingsJson(const std::vector<Finding>& findings) {
  json list = json::array();
  std::map<std::string, int> counts = {{"critical", 0}, {"warning", 0}, {"info", 0}};
  for (const Finding& f : findings) {
    ++counts[std::string(SeverityName(f.severity))];
    list.push_back({{"severity", SeverityName(f.severity)},
                    {"check", f.check},
                    {"subject", f.subject},
                    {"summary", f.summary},
                    {"evidence", f.evidence},
                    {"meaning", f.meaning},
                    {"fix", f.fix}});
  }
  return {{"findings", list}, {"counts", counts}};
}

std::string FindingsText(const std::vector<Finding>& findings) {
  std::ostringstream out;
  int counts[3] = {0, 0, 0};
  for (const Finding& f : findings) {
    ++counts[static_cast<int>(f.severity)];
    std::string tag(SeverityName(f.severity));
    std::transform(tag.begin(), tag.end(), tag.begin(), ::toupper);
    out << tag << "  " << f.subject << ": " << f.summary << "  [" << f.check << "]\n";
    for (const std::string& e : f.evidence) out << "    evidence: " << e << "\n";
    if (!f.meaning.empty()) out << "    meaning:  " << f.meaning << "\n";
    if (!f.fix.empty()) out << "    fix:      " << f.fix << "\n";
    out << "\n";
  }
  out << counts[2] << " critical, " << counts[1] << " warning(s), " << counts[0] << " note(s)";
  if (findings.empty()) out << ": nothing wrong found";
  out << "\n";
  return out.str();
}

}  // namespace tessera::api
