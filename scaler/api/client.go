package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/scaler/config"
	"github.com/rotahq/rota/scaler/fleet"
)

// maxResponseBytes bounds what the client reads of one answer.
const maxResponseBytes = 64 << 20

// Client calls a rota's operator API (rotactl uses it). Safe for concurrent use.
type Client struct {
	base  *url.URL // without query or fragment
	token Token
	http  *http.Client
}

// StatusError is an error answer of the API. LeaderURL is set when the rota asked does not
// lead and names the one that does; NoLeader when it does not lead and no rota does (a
// failover under way: 503 with Retry-After).
type StatusError struct {
	Code      int
	Message   string
	LeaderURL string
	NoLeader  bool
}

// ErrLeaderUnreachable is a write refused by a rota that does not lead, whose leader (as it
// last read the election) could not be reached: it may have just crashed, and the next one
// leads within twice the lease TTL.
var ErrLeaderUnreachable = errors.New("the leader it names cannot be reached")

func (e *StatusError) Error() string {
	return fmt.Sprintf("rota answered %d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// NewClient returns a client of the rota at baseURL (e.g. http://127.0.0.1:10091) that sends
// token; hc nil means http.DefaultClient.
func NewClient(baseURL string, token Token, hc *http.Client) (*Client, error) {
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, token: token, http: hc}, nil
}

// CheckURL says why baseURL cannot be rota's URL for NewClient (no http(s) URL, or one with a
// query or a fragment), or nil: rotactl checks its --rota.url as the flag is parsed.
func CheckURL(baseURL string) error {
	_, err := parseBaseURL(baseURL)
	return err
}

func parseBaseURL(baseURL string) (*url.URL, error) {
	u, err := config.HTTPURL(baseURL)
	if err != nil {
		return nil, err
	}
	// The API's paths are added after the base: behind a query or a fragment they would be
	// sent as part of it, to the server's root.
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("%s: rota's URL takes no query or fragment", errtext.Quote(baseURL))
	}
	return u, nil
}

// Status calls GET /api/v1/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.do(ctx, http.MethodGet, "status", nil, &st)
}

// Explain calls GET /api/v1/nodes/{node}/explain; an unknown node is ErrUnknownNode.
func (c *Client) Explain(ctx context.Context, node string) (Explanation, error) {
	var e Explanation
	path, err := nodePath(node, "explain")
	if err != nil {
		return e, err
	}
	if err := nodeError(node, c.do(ctx, http.MethodGet, path, nil, &e)); err != nil {
		return e, err
	}
	return e, confirm(e.Node.Name == node, "explanation of "+errtext.Quote(node), "node "+errtext.Quote(e.Node.Name))
}

// Plan calls POST /api/v1/plan: a dry-run plan made now.
func (c *Client) Plan(ctx context.Context) (fleet.Decision, error) {
	var d fleet.Decision
	return d, c.do(ctx, http.MethodPost, "plan", nil, &d)
}

// SetPinned pins (POST) or unpins (DELETE) node; an unknown node is ErrUnknownNode.
func (c *Client) SetPinned(ctx context.Context, node string, pinned bool, note string) error {
	var resp PinResponse
	path, err := nodePath(node, "pin")
	if err != nil {
		return err
	}
	if err := nodeError(node, c.do(ctx, method(pinned), path, NoteRequest{Note: note}, &resp)); err != nil {
		return err
	}
	return confirm(resp.Node == node && resp.Pinned == pinned, fmt.Sprintf("pinned %v of %s", pinned, errtext.Quote(node)),
		fmt.Sprintf("pinned %v of %s", resp.Pinned, errtext.Quote(resp.Node)))
}

// SetMaintenance puts node in maintenance (POST) or takes it out (DELETE); an unknown node is
// ErrUnknownNode.
func (c *Client) SetMaintenance(ctx context.Context, node string, on bool, note string) error {
	var resp MaintenanceResponse
	path, err := nodePath(node, "maintenance")
	if err != nil {
		return err
	}
	if err := nodeError(node, c.do(ctx, method(on), path, NoteRequest{Note: note}, &resp)); err != nil {
		return err
	}
	return confirm(resp.Node == node && resp.Maintenance == on, fmt.Sprintf("maintenance %v of %s", on, errtext.Quote(node)),
		fmt.Sprintf("maintenance %v of %s", resp.Maintenance, errtext.Quote(resp.Node)))
}

// Forget calls POST /api/v1/nodes/{node}/forget and returns the record deleted; a node the
// store holds no record of is ErrUnknownNode, a record kept a *StatusError of 409 saying why.
func (c *Client) Forget(ctx context.Context, node, note string) (NodeStatus, error) {
	var resp ForgetResponse
	path, err := nodePath(node, "forget")
	if err != nil {
		return NodeStatus{}, err
	}
	if err := nodeError(node, c.do(ctx, http.MethodPost, path, NoteRequest{Note: note}, &resp)); err != nil {
		return NodeStatus{}, err
	}
	return resp.Forgotten, confirm(resp.Forgotten.Name == node, "forgetting "+errtext.Quote(node), "forgot "+errtext.Quote(resp.Forgotten.Name))
}

// Backup calls GET /api/v1/store/backup and copies the store's snapshot to w; it returns the
// bytes copied. An answer cut short is an error (w then holds a partial copy).
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.send(ctx, http.MethodGet, "store/backup", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, statusError(resp)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("reading the backup: %w", err)
	}
	return n, nil
}

// SetPaused pauses (POST) or resumes (DELETE) the scaler.
func (c *Client) SetPaused(ctx context.Context, paused bool, note string) error {
	// PauseResponse's field, present: resuming is answered false, as "{}" would decode.
	var resp struct {
		Paused *bool `json:"paused"`
	}
	if err := c.do(ctx, method(paused), "pause", NoteRequest{Note: note}, &resp); err != nil {
		return err
	}
	got := "nothing of it"
	if resp.Paused != nil {
		got = fmt.Sprintf("paused %v", *resp.Paused)
	}
	return confirm(resp.Paused != nil && *resp.Paused == paused, fmt.Sprintf("paused %v", paused), got)
}

// confirm returns nil when an answer says what was asked (ok), else an error saying what was
// asked and what came back. A 200 from something that is not rota (a proxy, another service
// at the URL) decoded into an answer of zero values: a write read as done while nothing was
// (rotactl pin said "pinned", slurm resume exited 0).
func confirm(ok bool, asked, got string) error {
	if ok {
		return nil
	}
	return fmt.Errorf("the answer is not rota's: asked for %s, it says %s (is the URL rota's listener?)", asked, got)
}

func method(on bool) string {
	if on {
		return http.MethodPost
	}
	return http.MethodDelete
}

// nodeError turns rota's 404 about a node into ErrUnknownNode. Any other 404 (a --rota.url
// that is not rota's listener: a proxy's prefix, another server's port) stays the StatusError
// it is: it says nothing of the node.
func nodeError(node string, err error) error {
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusNotFound && strings.Contains(se.Message, ErrUnknownNode.Error()) {
		return fmt.Errorf("%s: %w", node, ErrUnknownNode)
	}
	return err
}

// nodePath is the API path of node's endpoint; a name no path segment can carry (empty, "."
// or "..", which a server cleans away) is ErrUnknownNode without a call.
func nodePath(node, endpoint string) (string, error) {
	switch node {
	case "", ".", "..":
		return "", fmt.Errorf("%s: %w", errtext.Quote(node), ErrUnknownNode)
	}
	return "nodes/" + url.PathEscape(node) + "/" + endpoint, nil
}

// do makes one call and decodes its answer into out. A rota that does not lead answers a
// write with 503 and the leader's URL: the call is made once more there (never from https
// down to plain http: the token would cross the network in clear).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	err := c.doAt(ctx, c.base, method, path, body, out)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable || se.LeaderURL == "" {
		return err
	}
	leader, perr := url.Parse(se.LeaderURL)
	switch {
	case perr != nil || (leader.Scheme != "http" && leader.Scheme != "https") || leader.Host == "",
		leader.String() == c.base.String(), c.base.Scheme == "https" && leader.Scheme != "https":
		return err
	}
	lerr := c.doAt(ctx, leader, method, path, body, out)
	var op *net.OpError
	if errors.As(lerr, &op) && op.Op == "dial" {
		// Not the rota asked that cannot be reached: the dial error is not wrapped.
		return fmt.Errorf("%v; %w: %v", err, ErrLeaderUnreachable, lerr)
	}
	return lerr
}

func (c *Client) doAt(ctx context.Context, base *url.URL, method, path string, body, out any) error {
	resp, err := c.sendTo(ctx, base, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("reading rota's answer: %w", err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding rota's answer (%s): %w", answerText(resp, b), err)
	}
	return nil
}

// send makes one call with body (nil: none) as JSON; the caller closes the answer's body.
func (c *Client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	return c.sendTo(ctx, c.base, method, path, body)
}

func (c *Client) sendTo(ctx context.Context, base *url.URL, method, path string, body any) (*http.Response, error) {
	// path is already escaped; JoinPath would escape it again.
	u := strings.TrimSuffix(base.String(), "/") + "/api/v1/" + path
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("building request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if !c.token.IsZero() {
		req.Header.Set("Authorization", c.token.bearer())
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("calling rota: %w", err)
	}
	return resp, nil
}

// statusError reads an error answer (JSON {"error": ...}, or plain text) into a StatusError.
func statusError(resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return fmt.Errorf("reading rota's answer: %w", err)
	}
	var eb errorBody
	if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
		eb.Error = answerText(resp, b)
	}
	return &StatusError{Code: resp.StatusCode, Message: eb.Error, LeaderURL: eb.LeaderURL,
		NoLeader: resp.StatusCode == http.StatusServiceUnavailable && eb.Leader == "" && resp.Header.Get("Retry-After") != ""}
}

// answerText describes an answer that is not what rota sends (a proxy's HTML page, a plain
// text error) by its type and its start, on one line: such a page was printed whole, up to
// maxResponseBytes over as many lines.
func answerText(resp *http.Response, body []byte) string {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "no Content-Type"
	}
	return fmt.Sprintf("%s, %d bytes: %s", ct, len(body), strconv.Quote(errtext.Cut(strings.Join(strings.Fields(string(body)), " "), errtext.Max)))
}
