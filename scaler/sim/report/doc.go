// Package report writes what a simulation found: a table for the terminal, CSV and JSON files
// for further work, and PNG plots (gonum/plot) of servers on against servers needed, the
// cumulative spend and the distribution of waiting times. Output is deterministic: the same
// results always give the same bytes.
package report
