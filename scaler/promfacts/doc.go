// Package promfacts is the scaler's reader of utilisation: it asks Prometheus, with instant
// queries built by package alerts (the same builders the rules use), for each server's CPU and
// GPU use over the idle and underuse windows, its GPU processes, the time of its newest sample,
// and whether its data covers the whole window, and returns a fleet.TelemetryView per server.
// Each pool reads its own telemetry source (rota-exporter, or node_exporter with
// dcgm-exporter), and its GPU readings are held against the GPUs its profile declares.
//
// What counts as no data, exactly:
//   - Read returns an error, and no views, when Prometheus cannot be reached, answers an error,
//     times out, or answers with warnings (a partial answer, e.g. from a federated or sharded
//     store). The caller then sets Snapshot.Telemetry to false and nothing counts as idle.
//   - A server gets Present=false, with Missing saying why, when it has no CPU sample, its
//     newest sample is older than policy.telemetry.max_age, its CPU readings miss any step of
//     the idle window (it was just powered on, or its exporter missed a scrape: a CPU reading
//     needs the scrape at its step and the one before, see alerts.Expr.CPUUtilization), a
//     collector fails (the GPU collector counts on a server whose pool declares GPUs or that
//     reports some), fewer GPUs have readings now or at any step of the window than its pool's
//     profile declares (GPU collector off, NVML not started, a GPU lost, the GPU exporter
//     down), it reports GPUs without a full window of readings for each, or its source's
//     mapping names a series it needs that Prometheus does not have at all (unknown telemetry:
//     the CPU counter, the busy signal the policy requires, a mapped process count). A reading
//     is what package alerts' expressions give: each GPU once however many scrape jobs read
//     it, a GPU value that is NaN or below 0 none, CPU counters that did not move none.
//
// Unknown telemetry is looked for on every Read and by CheckTelemetry (the daemon logs it at
// start); every view of a server of such a source names it in UnknownTelemetry, so rotactl
// explain shows it.
//
// Ready is the executor's readiness check after a boot: the server's exporter is scraped (up is
// 1) and its newest sample is no older than policy.telemetry.max_age; an unreadable Prometheus
// is an error, which the executor counts as not ready.
package promfacts
