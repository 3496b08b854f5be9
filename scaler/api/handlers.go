package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sirupsen/logrus"
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
		s.backendError(w, "explaining "+node, err)
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
	return func(w http.ResponseWriter, r *http.Request) {
		node := r.PathValue("name")
		req, err := readNote(w, r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		if err := s.opts.Backend.SetPinned(r.Context(), node, pinned, req.Note); err != nil {
			s.backendError(w, "pinning "+node, err)
			return
		}
		s.log.WithFields(logrus.Fields{"node": node, "pinned": pinned, "note": req.Note}).Debug("operator changed a pin")
		writeJSON(w, http.StatusOK, PinResponse{Node: node, Pinned: pinned})
	}
}

func (s *Server) pause(paused bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		req, err := readNote(w, r)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
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
	err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRequestBytes)).Decode(&req)
	if err != nil && !errors.Is(err, io.EOF) {
		return NoteRequest{}, fmt.Errorf("reading request body: %w", err)
	}
	return req, nil
}

// backendError answers 404 for an unknown node and 500 for anything else; the backend's errors
// carry no secret (safety invariant 6), so their text is the answer.
func (s *Server) backendError(w http.ResponseWriter, what string, err error) {
	if errors.Is(err, ErrUnknownNode) {
		writeError(w, http.StatusNotFound, err.Error())
		return
	}
	s.log.WithError(err).Warn(what + " failed")
	writeError(w, http.StatusInternalServerError, what+": "+err.Error())
}
