// The doctor's reading of DCGM's level-1 diagnostics (`dcgmi diag -r 1 -j`, run by `tessera
// doctor --local` when dcgmi is installed): each test result that failed or warned, by DCGM's
// JSON report {"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name",
// "results": [{"status", "warnings": [{"warning"}], "gpu_id"}]}]}]}}.
#include "api/doctor.h"

namespace tessera::api {

using nlohmann::json;

std::vector<Finding> CheckDcgmDiag(const std::string& node, const std::string& output,
                                   int exit_code) {
  std::vector<Finding> out;
  const json doc = json::parse(output, nullptr, false);
  const json* diag = doc.is_object() && doc.contains("DCGM GPU Diagnostic")
                         ? &doc["DCGM GPU Diagnostic"]
                         : nullptr;
  if (diag == nullptr || !diag->is_object()) {
    Finding f = MakeFinding(Severity::kWarning, "dcgm.diag-unreadable", "node/" + node,
                            "dcgmi diag -r 1 gave no report Tessera can read");
    f.evidence.push_back("exit status " + std::to_string(exit_code) +
                         "; output: " + output.substr(0, 300));
    f.meaning =
        "DCGM's host engine may not run (nv-hostengine), or its version reports "
        "differently.";
    f.fix = "Run dcgmi diag -r 1 by hand; start nv-hostengine if dcgmi cannot connect.";
    out.push_back(std::move(f));
    return out;
  }
  for (const json& category : diag->value("test_categories", json::array())) {
    for (const json& test : category.value("tests", json::array())) {
      for (const json& r : test.value("results", json::array())) {
        const std::string status = r.value("status", "");
        if (status != "Fail" && status != "Warn") continue;
        std::string subject = "node/" + node;
        if (r.contains("gpu_id")) {
          subject += "/gpu/" + (r["gpu_id"].is_string() ? r["gpu_id"].get<std::string>()
                                                        : r["gpu_id"].dump());
        }
        Finding f = MakeFinding(status == "Fail" ? Severity::kCritical : Severity::kWarning,
                                "dcgm.diag", subject,
                                "DCGM diagnostic " + category.value("category", std::string()) +
                                    "/" + test.value("name", std::string()) + ": " + status);
        for (const json& w : r.value("warnings", json::array())) {
          f.evidence.push_back(w.is_object() ? w.value("warning", w.dump()) : w.dump());
        }
        if (r.contains("info")) f.evidence.push_back(r["info"].dump());
        f.meaning =
            "DCGM's quick readiness check (level 1) found the GPU or its deployment "
            "not ready for work.";
        f.fix =
            "Fix what the warning names; then dcgmi diag -r 2 (about 2 minutes) before the "
            "GPU takes work again.";
        out.push_back(std::move(f));
      }
    }
  }
  return out;
}

}  // namespace tessera::api
