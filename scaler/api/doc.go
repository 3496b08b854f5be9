// Package api is the scaler's HTTP surface for operators and Alertmanager: the operator API
// that rotactl calls (status, explain, plan, pin/unpin, pause/resume; bearer token), the
// Alertmanager webhook receiver, and the Backend interface the scaler's loop implements.
package api
