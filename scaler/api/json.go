package api

import (
	"encoding/json"
	"net/http"
)

// errorBody is every error answer: {"error": "..."}; a rota that does not lead adds who does.
type errorBody struct {
	Error     string `json:"error"`
	Leader    string `json:"leader,omitempty"`
	LeaderURL string `json:"leader_url,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing left to tell it
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}
