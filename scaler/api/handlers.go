package api

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
)

// maxRequestBytes bounds the small JSON bodies of pin and pause.
const maxRequestBytes = 64 << 10

// NoteRequest is the optional body of pin, unpin, pause and resume: who and why.
type NoteRequest struct {
	Note string `json:"note,omitempty"`
}

// PinResponse answers pin and unpin.
type PinResponse struct {
	Node   string `json:"node"`
	Pinned bool   `json:"pinned"`
}

// MaintenanceResponse answers maintenance on and off.
type MaintenanceResponse struct {
	Node        string `json:"node"`
	Maintenance bool   `json:"maintenance"`
}

// ForgetResponse answers forget: the record deleted, as status last showed it.
type ForgetResponse struct {
	Forgotten NodeStatus `json:"forgotten"`
}

// PauseResponse answers pause and resume.
type PauseResponse struct {
	Paused bool `json:"paused"`
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.opts.Backend.Status(r.Context())
	if err != nil {
		s.backendError(w, "status", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) explain(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("name")
	e, err := s.opts.Backend.Explain(r.Context(), node)
	if err != nil {
		s.backendError(w, "explaining "+errtext.Quote(node), err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	d, err := s.opts.Backend.Plan(r.Context())
	if err != nil {
		s.backendError(w, "planning", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) pin(pinned bool) http.HandlerFunc {
	return s.nodeFlag("pin", pinned, s.opts.Backend.SetPinned, func(node string) any {
		return PinResponse{Node: node, Pinned: pinned}
	})
}

func (s *Server) maintenance(on bool) http.HandlerFunc {
	return s.nodeFlag("maintenance", on, s.opts.Backend.SetMaintenance, func(node string) any {
		return MaintenanceResponse{Node: node, Maintenance: on}
	})
}

// nodeFlag sets (POST) or clears (DELETE) an operator's flag on the node of the path, with the
// note of the optional body, and answers what answer returns.
func (s *Server) nodeFlag(flag string, on bool, set func(ctx context.Context, node string, on bool, note string) error, answer func(node string) any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		node := r.PathValue("name")
		req, err := readNote(w, r)
		if err != nil {
			writeError(w, bodyStatus(err), err.Error())
			return
		}
		if err := set(r.Context(), node, on, req.Note); err != nil {
			s.backendError(w, "setting "+flag+" of "+errtext.Quote(node), err)
			return
		}
		s.log.WithFields(logrus.Fields{"node": node, flag: on, "note": req.Note}).Debug("operator changed a node's " + flag)
		writeJSON(w, http.StatusOK, answer(node))
	}
}

// forget deletes the record of the node of the path, a server that left the config, with the
// note of the optional body.
func (s *Server) forget(w http.ResponseWriter, r *http.Request) {
	node := r.PathValue("name")
	req, err := readNote(w, r)
	if err != nil {
		writeError(w, bodyStatus(err), err.Error())
		return
	}
	n, err := s.opts.Backend.Forget(r.Context(), node, req.Note)
	if err != nil {
		s.backendError(w, "forgetting "+errtext.Quote(node), err)
		return
	}
	writeJSON(w, http.StatusOK, ForgetResponse{Forgotten: n})
}

// backup streams a consistent copy of the store. A copy that fails once bytes are out cuts the
// connection, so the client sees a truncated answer rather than a short copy that looks whole.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	out := &backupWriter{w: w}
	n, err := s.opts.Backend.Backup(r.Context(), out)
	switch {
	case err != nil && !out.started:
		s.backendError(w, "backing up the store", err)
	case err != nil:
		s.log.WithError(err).Warn("store backup cut short")
		panic(http.ErrAbortHandler)
	default:
		s.log.WithField("bytes", n).Info("store backed up")
	}
}

// backupWriter sets the answer's headers at the first byte of the copy.
type backupWriter struct {
	w       http.ResponseWriter
	started bool
}

func (b *backupWriter) Write(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.w.Header().Set("Content-Type", "application/octet-stream")
		b.w.Header().Set("Content-Disposition", `attachment; filename="rota.db"`)
	}
	return b.w.Write(p)
}

func (s *Server) pause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := readNote(w, r)
		if err != nil {
			writeError(w, bodyStatus(err), err.Error())
			return
		}
		if err := s.opts.Backend.SetPaused(r.Context(), paused, req.Note); err != nil {
			s.backendError(w, "pausing", err)
			return
		}
		s.log.WithFields(logrus.Fields{"paused": paused, "note": req.Note}).Debug("operator changed the pause")
		writeJSON(w, http.StatusOK, PauseResponse{Paused: paused})
	}
}

// readNote reads the optional NoteRequest body; an empty body is an empty note.
func readNote(w http.ResponseWriter, r *http.Request) (NoteRequest, error) {
	var req NoteRequest
	if err := decodeBody(w, r, maxRequestBytes, &req); err != nil && !errors.Is(err, io.EOF) {
		return NoteRequest{}, err
	}
	return req, nil
}

// backendError answers 404 for an unknown node, 409 for a record kept (forget), 503 naming the leader for a write asked of a
// rota that does not lead (with Retry-After while no rota leads), 503 with Retry-After for a
// wake asked of a rota that stops, and 500 for anything else; the backend's errors
// carry no secret (safety invariant 6), so their text is the answer.
func (s *Server) backendError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, ErrUnknownNode) {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	var kept *KeptError
	if errors.As(err, &kept) {
		writeError(w, http.StatusConflict, what+": "+err.Error())
		return
	}
	if errors.Is(err, ErrStopping) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, what+": "+err.Error())
		return
	}
	var nl *NotLeaderError
	if errors.As(err, &nl) {
		if nl.Leader == "" {
			// A failover under way: the next leader comes within twice the lease TTL.
			w.Header().Set("Retry-After", "1")
		}
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: what + ": " + err.Error(), Leader: nl.Leader, LeaderURL: nl.LeaderURL})
		return
	}
	s.log.WithError(err).Warn(what + " failed")
	writeError(w, http.StatusInternalServerError, what+": "+err.Error())
}
