#include "sim/trace.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>

#include "api/resources.h"

namespace tessera::sim {

namespace {

std::vector<std::string_view> SplitCsv(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    if (comma == std::string_view::npos) {
      out.push_back(line.substr(start));
      return out;
    }
    out.push_back(line.substr(start, comma - start));
    start = comma + 1;
  }
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

// A CSV table read by header names.
class Table {
 public:
  static Result<Table> Read(std::istream& in, std::string_view source,
                            const std::vector<std::string_view>& known) {
    Table t;
    t.source_ = std::string(source);
    std::string line;
    if (!std::getline(in, line)) return InvalidArgument(t.source_ + ": empty file, no header");
    int col = 0;
    for (std::string_view h : SplitCsv(line)) {
      h = Trim(h);
      if (std::find(known.begin(), known.end(), h) == known.end()) {
        return InvalidArgument(t.source_ + ": line 1: unknown column \"" + std::string(h) + "\"");
      }
      if (t.columns_.count(std::string(h))) {
        return InvalidArgument(t.source_ + ": line 1: duplicate column \"" + std::string(h) + "\"");
      }
      t.columns_[std::string(h)] = col++;
    }
    int lineno = 1;
    while (std::getline(in, line)) {
      ++lineno;
      if (Trim(line).empty()) continue;
      auto cells = SplitCsv(line);
      if (static_cast<int>(cells.size()) != col) {
        return InvalidArgument(t.source_ + ": line " + std::to_string(lineno) + ": " +
                               std::to_string(cells.size()) + " cells, header has " +
                               std::to_string(col));
      }
      std::vector<std::string> row;
      row.reserve(cells.size());
      for (auto c : cells) row.emplace_back(Trim(c));
      t.rows_.push_back(std::move(row));
      t.lines_.push_back(lineno);
    }
    return t;
  }

  bool Has(std::string_view c) const { return columns_.count(std::string(c)) > 0; }
  size_t rows() const { return rows_.size(); }

  // The cell, or empty when the column is absent.
  std::string_view Cell(size_t row, std::string_view c) const {
    auto it = columns_.find(std::string(c));
    return it == columns_.end() ? std::string_view() : rows_[row][it->second];
  }

  Status Require(std::initializer_list<std::string_view> cols) const {
    for (std::string_view c : cols) {
      if (!Has(c)) return InvalidArgument(source_ + ": missing column \"" + std::string(c) + "\"");
    }
    return Status::Ok();
  }

  Status Error(size_t row, std::string_view col, std::string_view what) const {
    return InvalidArgument(source_ + ": line " + std::to_string(lines_[row]) + ": column " +
                           std::string(col) + ": " + std::string(what));
  }

  // An integer in [lo, hi]; `fallback` when the column is absent or the cell empty.
  Result<int64_t> Int(size_t row, std::string_view col, int64_t lo, int64_t hi,
                      std::optional<int64_t> fallback = std::nullopt) const {
    std::string_view s = Cell(row, col);
    if (s.empty()) {
      if (fallback) return *fallback;
      return Error(row, col, "a value is required");
    }
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) {
      return Error(row, col, "must be an integer, got \"" + std::string(s) + "\"");
    }
    if (v < lo || v > hi) {
      return Error(row, col,
                   "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                       std::string(s));
    }
    return v;
  }

 private:
  std::string source_;
  std::map<std::string, int> columns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<int> lines_;
};

constexpr int64_t kMaxCpuMilli = 1'000'000'000;  // a million cores
constexpr int64_t kMaxMemoryMib = int64_t{1} << 40;
constexpr int64_t kMaxTime = int64_t{1} << 50;

template <typename T>
Result<T> ReadFile(const std::string& path, Result<T> (*read)(std::istream&, std::string_view)) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open " + path);
  return read(in, path);
}

}  // namespace

int64_t ModelMemoryMib(std::string_view model) {
  static const std::pair<std::string_view, int64_t> kSizes[] = {
      {"P100", 16384}, {"T4", 15360}, {"V100M16", 16384}, {"V100M32", 32768},
      {"A10", 24576},  {"G1", 16384}, {"G2", 16384},      {"G3", 32768},
  };
  for (const auto& [m, mib] : kSizes) {
    if (m == model) return mib;
  }
  return 16384;
}

Result<std::vector<core::NodeSpec>> ReadNodes(std::istream& in, std::string_view source) {
  auto table =
      Table::Read(in, source, {"sn", "name", "cpu_milli", "memory_mib", "gpu", "model", "sharing"});
  if (!table.ok()) return table.status();
  const Table& t = *table;
  if (!t.Has("sn") && !t.Has("name")) {
    return InvalidArgument(std::string(source) + ": missing column \"sn\" (or \"name\")");
  }
  if (Status s = t.Require({"cpu_milli", "memory_mib", "gpu"}); !s.ok()) return s;
  std::vector<core::NodeSpec> nodes;
  nodes.reserve(t.rows());
  for (size_t r = 0; r < t.rows(); ++r) {
    core::NodeSpec n;
    const std::string_view name_col = t.Has("sn") ? "sn" : "name";
    n.name = std::string(t.Cell(r, name_col));
    if (n.name.empty()) return t.Error(r, name_col, "a node name is required");
    auto cpu = t.Int(r, "cpu_milli", 0, kMaxCpuMilli);
    if (!cpu.ok()) return cpu.status();
    auto mem = t.Int(r, "memory_mib", 0, kMaxMemoryMib);
    if (!mem.ok()) return mem.status();
    auto gpus = t.Int(r, "gpu", 0, core::kMaxGpusPerNode);
    if (!gpus.ok()) return gpus.status();
    const std::string model(t.Cell(r, "model"));
    if (*gpus > 0 && model.empty()) return t.Error(r, "model", "a GPU node needs a model");
    core::SharingMode mode = core::SharingMode::kShared;
    if (std::string_view s = t.Cell(r, "sharing"); !s.empty()) {
      if (s == "exclusive") {
        mode = core::SharingMode::kExclusive;
      } else if (s != "shared") {
        return t.Error(r, "sharing", "must be exclusive or shared, got \"" + std::string(s) + "\"");
      }
    }
    n.allocatable = {*cpu, *mem};
    if (!model.empty()) n.labels["nvidia.com/gpu.product"] = model;
    for (int g = 0; g < *gpus; ++g) {
      core::GpuDevice d;
      d.index = static_cast<uint16_t>(g);
      d.uuid = "GPU-" + n.name + "-" + std::to_string(g);
      d.model = model;
      d.memory_mib = ModelMemoryMib(model);
      d.sharing.mode = mode;
      n.gpus.push_back(std::move(d));
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

Result<std::vector<TracePod>> ReadPods(std::istream& in, std::string_view source) {
  auto table = Table::Read(in, source,
                           {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec",
                            "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time",
                            "submit_time", "duration", "queue", "priority", "gang", "gang_size"});
  if (!table.ok()) return table.status();
  const Table& t = *table;
  if (Status s = t.Require({"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}); !s.ok()) {
    return s;
  }
  std::vector<TracePod> pods;
  pods.reserve(t.rows());
  for (size_t r = 0; r < t.rows(); ++r) {
    TracePod p;
    p.name = std::string(t.Cell(r, "name"));
    if (p.name.empty()) return t.Error(r, "name", "a pod name is required");
    auto cpu = t.Int(r, "cpu_milli", 0, kMaxCpuMilli);
    if (!cpu.ok()) return cpu.status();
    auto mem = t.Int(r, "memory_mib", 0, kMaxMemoryMib);
    if (!mem.ok()) return mem.status();
    auto num_gpu = t.Int(r, "num_gpu", 0, core::kMaxGpusPerNode);
    if (!num_gpu.ok()) return num_gpu.status();
    auto gpu_milli = t.Int(r, "gpu_milli", 0, core::kMilliPerGpu);
    if (!gpu_milli.ok()) return gpu_milli.status();
    p.cpu_milli = *cpu;
    p.memory_mib = *mem;
    p.num_gpu = static_cast<int32_t>(*num_gpu);
    p.gpu_milli = static_cast<int32_t>(*gpu_milli);
    if (p.num_gpu == 0) p.gpu_milli = 0;
    if (p.num_gpu > 0 && p.gpu_milli == 0) {
      return t.Error(r, "gpu_milli", "must be 1..1000 when num_gpu > 0");
    }
    if (p.num_gpu > 1 && p.gpu_milli != core::kMilliPerGpu) {
      return t.Error(
          r, "gpu_milli",
          "a share (< 1000) is of one GPU only; num_gpu is " + std::to_string(p.num_gpu));
    }
    p.gpu_models = api::ParseGpuModels(t.Cell(r, "gpu_spec"));
    const bool generic = t.Has("submit_time");
    auto created = t.Int(r, generic ? "submit_time" : "creation_time", 0, kMaxTime, -1);
    if (!created.ok()) return created.status();
    p.creation = *created;
    if (generic) {
      auto duration = t.Int(r, "duration", 0, kMaxTime, -1);
      if (!duration.ok()) return duration.status();
      if (*duration >= 0 && p.creation >= 0) p.deletion = p.creation + *duration;
    } else {
      auto deleted = t.Int(r, "deletion_time", 0, kMaxTime, -1);
      if (!deleted.ok()) return deleted.status();
      p.deletion = *deleted;
      auto scheduled = t.Int(r, "scheduled_time", 0, kMaxTime, -1);
      if (!scheduled.ok()) return scheduled.status();
      p.scheduled = *scheduled;
    }
    if (p.deletion >= 0 && p.creation >= 0 && p.deletion < p.creation) {
      return t.Error(r, generic ? "duration" : "deletion_time", "ends before it starts");
    }
    p.queue = std::string(t.Cell(r, "queue"));
    auto prio = t.Int(r, "priority", -1'000'000'000, 1'000'000'000, 0);
    if (!prio.ok()) return prio.status();
    p.priority = static_cast<int32_t>(*prio);
    p.gang = std::string(t.Cell(r, "gang"));
    auto gang_size = t.Int(r, "gang_size", 0, 100000, 0);
    if (!gang_size.ok()) return gang_size.status();
    p.gang_size = static_cast<int32_t>(*gang_size);
    pods.push_back(std::move(p));
  }
  return pods;
}

Result<std::vector<core::NodeSpec>> LoadNodes(const std::string& path) {
  return ReadFile<std::vector<core::NodeSpec>>(path, &ReadNodes);
}

Result<std::vector<TracePod>> LoadPods(const std::string& path) {
  return ReadFile<std::vector<TracePod>>(path, &ReadPods);
}

core::PodSpec ToPodSpec(const TracePod& p) {
  core::PodSpec s;
  s.name = p.name;
  s.requests = {p.cpu_milli, p.memory_mib};
  s.gpu_models = p.gpu_models;
  if (p.num_gpu > 0) {
    if (p.gpu_milli < core::kMilliPerGpu) {
      s.gpu = {core::GpuRequestKind::kShare, 1, p.gpu_milli, 0, ""};
    } else {
      s.gpu = {core::GpuRequestKind::kWhole, p.num_gpu, 0, 0, ""};
    }
  }
  return s;
}

}  // namespace tessera::sim
