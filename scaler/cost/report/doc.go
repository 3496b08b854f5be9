// Package report reads a calendar month of rota's books from Prometheus (the cookbook's
// increase() queries over the month, evaluated at its end) and writes them as a table, CSV or
// JSON: what `rotactl report --month 2026-11` prints.
package report
