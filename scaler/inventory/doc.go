// Package inventory turns rota's inventory (config pools and nodes) into Prometheus file-based
// service discovery: one target group per server, its rota-exporter address labelled with node,
// pool, tier, region and department, so the rules and rota's queries can group by them. Write
// replaces the file atomically, so Prometheus never reads half of it.
package inventory
