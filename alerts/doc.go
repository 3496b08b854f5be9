// Package alerts builds rota's PromQL: the expressions the scaler queries, and the recording
// and alerting rules Prometheus evaluates, all from the one config the scaler reads, so every
// threshold and window lives in one place.
//
// Expr holds the expression builders. The scaler's Prometheus reader (scaler/promfacts) and the
// rules call the same builders on the raw exporter series: the recording rules record them, and
// the alerts' windows evaluate them at every scrape interval (a window over a recorded series
// would see only the rules' evaluations); the reader does not depend on the rules being loaded.
//
// Generate turns a config into a rule file (Prometheus' format, recorded names follow
// level:metric:operations); `rotactl rules generate` writes it. rota-rules.yml in this folder is
// the set generated from the defaults (no config file), kept current by a test.
//
// GenerateTests derives promtool tests of the alerts from the same config (scenarios.go: one
// server, queue or scaler per test, its series and checks computed from the policy's windows,
// thresholds and intervals), so the tests follow the policy as the rules do; the package's
// tests run them under several policies.
package alerts
