// Package promfacts is the scaler's reader of utilisation: it asks Prometheus, with instant
// queries built by package alerts (the same builders the rules use), for each server's CPU and
// GPU use over the idle and underuse windows, its GPU processes, the time of its newest sample,
// and whether its data covers the whole window, and returns a fleet.TelemetryView per server.
//
// What counts as no data, exactly:
//   - Read returns an error, and no views, when Prometheus cannot be reached, answers an error,
//     times out, or answers with warnings (a partial answer, e.g. from a federated or sharded
//     store). The caller then sets Snapshot.Telemetry to false and nothing counts as idle.
//   - A server gets Present=false when it has no exporter sample, its newest sample is older
//     than policy.telemetry.max_age, its CPU readings miss any step of the idle window (it was
//     just powered on, or its exporter was down for a while), a collector fails, or it reports
//     GPUs without a full window of readings for each.
//
// Ready is the executor's readiness check after a boot: the server's exporter is scraped (up is
// 1) and its newest sample is no older than policy.telemetry.max_age; an unreadable Prometheus
// is an error, which the executor counts as not ready.
package promfacts
