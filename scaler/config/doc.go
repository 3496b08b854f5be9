// Package config is rota's one configuration file: the inventory (pools of servers, each a tier
// with a hardware profile, a cost and BMC endpoints), the policy (thresholds, windows, floors,
// budgets, cooldowns, schedules, quotas, job classes) and the daemon's wiring (Prometheus,
// HTTP server, store, job manager).
//
// The scaler, the alert-rule generator, rotactl and the simulator all read this package, so every
// threshold lives in one place. Load parses strictly (unknown fields are errors), fills defaults
// and validates; validation reports every problem at once, each with the path of its field, such
// as `pools[1].nodes[3].bmc.host: required`.
package config
