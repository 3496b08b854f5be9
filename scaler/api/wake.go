package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/fleet"
)

// maxWakeBytes bounds a wake request: a whole fleet's node names.
const maxWakeBytes = 1 << 20

// WakeRequest is the body of POST /api/v1/wake: the servers the job manager has placed work
// on and needs powered on (Slurm's ResumeProgram, through `rotactl slurm resume`).
type WakeRequest struct {
	Nodes []string `json:"nodes"`
	// Note says who asks and why ("slurm resume"); it goes to the log and the audit detail.
	Note string `json:"note,omitempty"`
}

// WakeResponse answers a wake request: one result per server asked for, in the order asked.
type WakeResponse struct {
	Nodes []WakeResult `json:"nodes"`
}

// What became of one server of a wake request.
const (
	// WakeStarted: the pass started its power-on.
	WakeStarted = "started"
	// WakePowered: it is already on or on its way (powering on, booting).
	WakePowered = "powered"
	// WakeWaiting: it cannot be powered on this pass (an action under way, the concurrency
	// cap, its BMC state unknown, a power-off finishing); rota keeps the request and tries
	// again at each pass until the pool's boot timeout.
	WakeWaiting = "waiting"
	// WakeDryRun: policy.dry_run is set; the power-on was logged and recorded, not sent.
	WakeDryRun = "dry_run"
	// WakeRefused: rota will not power it on: not in the inventory, paused, pinned, in
	// maintenance, or failed (rota retries it after its backoff).
	WakeRefused = "refused"
)

// WakeResult is one server's answer; Reason and Detail say why it was refused or waits.
type WakeResult struct {
	Node   string       `json:"node"`
	Result string       `json:"result"`
	Reason fleet.Reason `json:"reason,omitempty"`
	Detail string       `json:"detail,omitempty"`
}

// OK reports whether rota has the server on, on its way, or in hand.
func (r WakeResult) OK() bool {
	return r.Result == WakeStarted || r.Result == WakePowered || r.Result == WakeWaiting
}

func (s *Server) wake(w http.ResponseWriter, r *http.Request) {
	var req WakeRequest
	if err := decodeBody(w, r, maxWakeBytes, &req); err != nil {
		if errors.Is(err, io.EOF) {
			err = errors.New("reading request body: no body")
		}
		writeError(w, bodyStatus(err), err.Error())
		return
	}
	if err := checkWake(req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	res, err := s.opts.Backend.Wake(r.Context(), req.Nodes, req.Note)
	if err != nil {
		s.backendError(w, "waking servers", err)
		return
	}
	s.log.WithFields(logrus.Fields{"nodes": len(req.Nodes), "note": errtext.Quote(req.Note)}).Debug("wake requested")
	writeJSON(w, http.StatusOK, WakeResponse{Nodes: res})
}

// checkWake refuses a request with no node, or an empty name.
func checkWake(req WakeRequest) error {
	if len(req.Nodes) == 0 {
		return fmt.Errorf("nodes: at least one node is required")
	}
	for i, n := range req.Nodes {
		if strings.TrimSpace(n) == "" {
			return fmt.Errorf("nodes[%d]: empty node name", i)
		}
	}
	return nil
}

// Wake asks rota to power on nodes for work the job manager placed on them, and returns each
// one's result once a pass has taken the request.
func (c *Client) Wake(ctx context.Context, nodes []string, note string) ([]WakeResult, error) {
	var resp WakeResponse
	if err := c.do(ctx, http.MethodPost, "wake", WakeRequest{Nodes: nodes, Note: note}, &resp); err != nil {
		return nil, err
	}
	// One result per node, in the order asked: an answer short of one (a proxy's "{}") read as
	// every node in hand while none was asked for.
	got := make([]string, len(resp.Nodes))
	for i, r := range resp.Nodes {
		got[i] = r.Node
	}
	if err := confirm(slices.Equal(got, nodes), "results for "+errtext.Quote(strings.Join(nodes, ",")), "results for "+errtext.Quote(strings.Join(got, ","))); err != nil {
		return nil, err
	}
	return resp.Nodes, nil
}
