#include "agent/telemetry.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace tessera::agent {
namespace {

using nlohmann::json;

// GPU 0 of an idle H100 80GB HBM3 as NVML read it on two beats 5 s apart (device check,
// docs/BENCHMARKS.md): only the power and the temperature moved.
json Status(int64_t power_mw, int temperature_c) {
  return {{"allocatable", {{"cpu", "16"}}},
          {"gpus", {{{"index", 0}, {"health", "Healthy"}}}},
          {"telemetry",
           {{{"index", 0},
             {"utilizationPct", 0},
             {"memoryUtilizationPct", 0},
             {"memoryUsedMiB", 480},
             {"memoryFreeMiB", 81079},
             {"temperatureC", temperature_c},
             {"powerMw", power_mw},
             {"smClockMhz", 345},
             {"eccCorrected", 0},
             {"eccUncorrected", 0},
             {"xidCount", 0},
             {"processes", json::array()}}}}};
}

TEST(StatusMovedTest, AnIdleCardsNoiseIsNotAChange) {
  const json written = Status(73247, 49);
  EXPECT_FALSE(StatusMoved(written, written));
  EXPECT_FALSE(StatusMoved(written, Status(73014, 48)));
  EXPECT_FALSE(StatusMoved(written, Status(77000, 51)));
  EXPECT_TRUE(StatusMoved(written, Status(80600, 49)));  // 10% more power
  EXPECT_TRUE(StatusMoved(written, Status(73247, 52)));  // 3 degrees
}

TEST(StatusMovedTest, WorkStartingOrStoppingIsAChange) {
  const json written = Status(73247, 49);
  json busy = written;
  busy["telemetry"][0]["utilizationPct"] = 1;  // from idle: the idle detector must know
  EXPECT_TRUE(StatusMoved(written, busy));
  EXPECT_TRUE(StatusMoved(busy, written));
  json busier = busy;
  busier["telemetry"][0]["utilizationPct"] = 4;
  EXPECT_FALSE(StatusMoved(busy, busier));
  busier["telemetry"][0]["utilizationPct"] = 6;
  EXPECT_TRUE(StatusMoved(busy, busier));
  json memory = written;
  memory["telemetry"][0]["memoryUsedMiB"] = 480 + 255;
  EXPECT_FALSE(StatusMoved(written, memory));
  memory["telemetry"][0]["memoryUsedMiB"] = 480 + 256;
  EXPECT_TRUE(StatusMoved(written, memory));
  json process = written;
  process["telemetry"][0]["processes"] = {{{"pid", 42}, {"usedMiB", 300}, {"pod", "a/b/main-0"}}};
  EXPECT_TRUE(StatusMoved(written, process));
  json grown = process;
  grown["telemetry"][0]["processes"][0]["usedMiB"] = 400;
  EXPECT_FALSE(StatusMoved(process, grown));
}

TEST(StatusMovedTest, HealthErrorsAndEverythingOutsideTelemetryCountAtAnyChange) {
  const json written = Status(73247, 49);
  json xid = written;
  xid["telemetry"][0]["xidCount"] = 1;
  EXPECT_TRUE(StatusMoved(written, xid));
  json ecc = written;
  ecc["telemetry"][0]["eccUncorrected"] = 1;
  EXPECT_TRUE(StatusMoved(written, ecc));
  json sick = written;
  sick["gpus"][0]["health"] = "Unhealthy";
  EXPECT_TRUE(StatusMoved(written, sick));
  json gone = written;
  gone["telemetry"] = json::array();
  EXPECT_TRUE(StatusMoved(written, gone));
  json links = written;
  links["telemetry"][0]["nvlinkDataKiB"] = 123456;  // a counter: refreshed once a minute
  EXPECT_FALSE(StatusMoved(written, links));
  // Rates: refreshed once a minute too, whether they appear, change or go.
  json rates = written;
  rates["telemetry"][0]["nvlinkKiBps"] = 5;
  rates["telemetry"][0]["pcieTxKiBps"] = 7;
  rates["telemetry"][0]["pcieRxKiBps"] = 9;
  EXPECT_FALSE(StatusMoved(written, rates));
  json faster = rates;
  faster["telemetry"][0]["pcieRxKiBps"] = 90000;
  EXPECT_FALSE(StatusMoved(rates, faster));
  EXPECT_FALSE(StatusMoved(rates, written));
  EXPECT_TRUE(StatusMoved(json(), written));  // nothing written yet
}

}  // namespace
}  // namespace tessera::agent
