#!/usr/bin/env bash
# The CI steps of docs/CI.md: validate, plan (exit 4 = changes pending is fine), run every attempt
# to completion with a time limit, then gather the results folder and a report for upload
# (and the fleet report, report.html, at the results root), and the summary (summary.json) a
# later run can compare with.
# BERTH is the berth command (default `berth`); BERTH_SPECS, BERTH_STATE, BERTH_INSTANCE and
# BERTH_RESULTS_ROOT choose the folders; ARTIFACTS (default ./berth-artifacts) receives the report.
set -uo pipefail
BERTH=${BERTH:-berth}
TIMEOUT=${BERTH_CI_TIMEOUT:-1800}
ARTIFACTS=${ARTIFACTS:-berth-artifacts}
mkdir -p "$ARTIFACTS"

$BERTH validate || exit $?
$BERTH plan --detailed-exitcode
code=$?
if [ "$code" -ne 0 ] && [ "$code" -ne 4 ]; then exit "$code"; fi

$BERTH reconcile --once --wait --timeout "$TIMEOUT"
result=$?

# The report: every attempt's status as JSON and as a table, whatever the result.
$BERTH get -o json > "$ARTIFACTS/attempts.json"
$BERTH get -o wide > "$ARTIFACTS/attempts.txt"
$BERTH events > "$ARTIFACTS/events.txt"
# The summary as JSON: a later run compares with it (berth compare --baseline, docs/CI.md).
$BERTH summary -o json > "$ARTIFACTS/summary.json"
# The fleet report, at the results root (its links into the run folders work there), uploaded with it.
$BERTH report > /dev/null
exit "$result"
