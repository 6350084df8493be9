#!/usr/bin/env bash
# The rules and dashboard in deploy/: promtool accepts and unit-tests the alert rules (the
# seeds' own, unchanged, and Tessera's), and every metric the dashboard and rules query is one
# the server exports.
set -euo pipefail
DEPLOY=$1
METRICS_SOURCE=$2  # src/server/metrics.cc: the names exported
cd "$DEPLOY/prometheus"
promtool check rules seed-gpu-alerts.yml tessera-alerts.yml
promtool test rules tessera-alerts.test.yml
exported=$(grep -oE '"(DCGM_FI_DEV_[A-Z_]+|tessera_[a-z_]+)"' "$METRICS_SOURCE" | tr -d '"' | sort -u)
used=$(grep -ohE '\b(DCGM_FI_DEV_[A-Z_]+|tessera_[a-z_]+)' seed-gpu-alerts.yml tessera-alerts.yml \
  "$DEPLOY/grafana/tessera-dashboard.json" | sed -E 's/_(bucket|count|sum)$//' | sort -u)
missing=$(comm -13 <(echo "$exported") <(echo "$used"))
[ -z "$missing" ] || { echo "queried but not exported: $missing" >&2; exit 1; }
echo "deploy_test: ok"
