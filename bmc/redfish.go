package bmc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/rotahq/rota/internal/errtext"
)

// resetTypes are the Redfish ResetTypes posted for each action.
var resetTypes = map[string]string{
	actionOn:   "On",
	actionOff:  "ForceOff",
	actionSoft: "GracefulShutdown",
}

// redfishConn is one Redfish connection: rota's own session (redfishReader) on the system the
// node's commands reach, checked when it opened.
type redfishConn struct {
	r      *redfishReader
	d      *bmclibDialer
	ep     Endpoint
	system redfishSystem
}

// dialRedfish logs in and checks, at the first operation on the endpoint, which system the
// commands reach (system), before anything is sent.
func (d *bmclibDialer) dialRedfish(ctx context.Context, node string, ep Endpoint, password Secret) (conn, error) {
	r, err := d.openRedfish(ctx, node, ep, password)
	if err != nil {
		return nil, err
	}
	sys, err := d.system(ctx, node, ep, r)
	if err != nil {
		r.close(context.WithoutCancel(ctx))
		return nil, err
	}
	return &redfishConn{r: r, d: d, ep: ep, system: sys.system}, nil
}

// PowerState reads the system's PowerState. A 401 there, in the session the BMC granted when
// the connection opened, says the BMC ended that session (it expired, its web server
// restarted, a session limit or another client's logout dropped it), not that the credentials
// are wrong: a transient failure, which the next try mends with a new login (refused, that one
// is the *AuthError). A 401 to a Reset stays an *AuthError: BMCs answer it to an account
// without the privilege to power a server. With basic auth every request carries the
// credentials, so a 401 is theirs.
func (c *redfishConn) PowerState(ctx context.Context) (string, error) {
	var doc struct{ PowerState, Name string }
	if err := c.r.get(ctx, c.system.URI, &doc); err != nil {
		c.forgetIfGone(err)
		var auth *AuthError
		if code, _ := redfishStatus(err); code == http.StatusUnauthorized && !c.ep.BasicAuth && errors.As(err, &auth) {
			return "", &transientError{err: fmt.Errorf("the bmc ended its session (401 after the login), logging in again: %w", auth.Err)}
		}
		return "", fmt.Errorf("reading power state: %w", err)
	}
	if c.ep.SystemName != "" && doc.Name != c.ep.SystemName {
		// Another system is where the check found this one (two blades swapped slots): its
		// state is not the node's, and a command would reach it. The next operation checks
		// the BMC's systems again.
		c.d.forgetSystem(c.r.node)
		return "", &RefusedError{Node: c.r.node, Err: fmt.Errorf("system %s is now named %s, not system_name %s: checking the bmc's systems again at the next operation",
			c.system.URI, errtext.Quote(doc.Name), errtext.Quote(c.ep.SystemName))}
	}
	return doc.PowerState, nil
}

// SetPower posts the system's #ComputerSystem.Reset with the action's ResetType, without
// If-Match: BMCs that give actions no ETag semantics refuse one (412, every time: Lenovo XCC,
// some iDRAC firmware), and others whenever the ETag moved with a sensor value since the
// read. The Redfish specification gives actions no ETag semantics, and rota reads the power
// state before every command and after it, so If-Match would guard nothing.
func (c *redfishConn) SetPower(ctx context.Context, action string) (string, error) {
	if err := c.offered(action); err != nil {
		return "", err
	}
	target := c.system.Actions.Reset.Target
	if target == "" {
		return "", &RefusedError{Node: c.r.node, Err: fmt.Errorf("system %s offers no #ComputerSystem.Reset action", c.system.URI)}
	}
	task, err := c.r.post(ctx, target, map[string]string{"ResetType": resetTypes[action]})
	if err != nil {
		c.forgetIfGone(err)
		return "", fmt.Errorf("sending power %s: %w", action, err)
	}
	return task, nil
}

// forgetIfGone makes the next operation check the BMC's systems again (system) when err is a
// 404 from the system or its Reset target: the system is no longer where the check found it
// (a blade reseated in another slot, a firmware update that renamed its Id), and the node
// would otherwise fail until rota restarts.
func (c *redfishConn) forgetIfGone(err error) {
	if missing(err) {
		c.d.forgetSystem(c.r.node)
	}
}

// Task reads a task monitor: it answers 202 while the task runs, then the task (its TaskState
// says how it ended) or the Reset's own answer; one that is gone (404) leaves the outcome to
// the state, as does a task that completed.
func (c *redfishConn) Task(ctx context.Context, uri string) (bool, error) {
	code, b, err := c.r.fetch(ctx, uri)
	switch {
	case missing(err):
		return true, nil
	case err != nil:
		return false, err
	case code == http.StatusAccepted:
		return false, nil
	}
	var task struct {
		TaskState string
		Messages  []struct{ Message string }
	}
	if json.Unmarshal(b, &task) != nil {
		return true, nil
	}
	switch task.TaskState {
	case "", "Completed":
		return true, nil
	case "Exception", "Killed", "Cancelled":
		failed := &TaskFailedError{Node: c.r.node, Task: uri, State: task.TaskState}
		for _, m := range task.Messages {
			failed.Messages = append(failed.Messages, m.Message)
		}
		return true, failed
	}
	return false, nil
}

// Provider is the library rota's Redfish requests go through.
func (c *redfishConn) Provider() string { return redfishProvider }

func (c *redfishConn) Close(ctx context.Context) error {
	c.r.close(ctx)
	return nil
}

// offered refuses, before anything is sent, an action whose ResetType the node's system does
// not list in ResetType@Redfish.AllowableValues: the BMC would refuse it, and a graceful off
// must not wait out its grace period for a shutdown never asked. The refusal makes the next
// operation read the system again (a firmware update may add the type).
func (c *redfishConn) offered(action string) error {
	if len(c.system.Actions.Reset.Allowed) == 0 {
		return nil
	}
	rt := resetTypes[action]
	if rt == "" || slices.Contains(c.system.Actions.Reset.Allowed, rt) {
		return nil
	}
	c.d.forgetSystem(c.r.node)
	return &RefusedError{Node: c.r.node, Err: fmt.Errorf("system %s does not offer ResetType %s (ResetType@Redfish.AllowableValues: %s)",
		c.system.URI, rt, strings.Join(c.system.Actions.Reset.Allowed, ", "))}
}

// loginRefused returns a *RefusedError when a Redfish login failed because of the BMC's
// session service, which retrying the login would meet again:
//   - the BMC has none: its service root links no Sessions collection (gofish then posts the
//     login nowhere and fails without a request or a status: "no target provided"), or the
//     login was answered 404 or 405. Such a BMC takes basic auth alone, which the endpoint
//     must ask for, and a 404 must not pass for a BMC without a power reading;
//   - it links its Sessions collection on another host (redfishTransport took a link on the
//     endpoint's host to its path), refused as any link there (localURI): gofish, which
//     prefixes the endpoint to it, fails to make a request of it at all.
//
// Anything else returns nil. It reads the service root itself (no credentials needed) only
// when the failure could be one of these: a 404 or 405, or a failure with neither a status
// nor a transport error (a URL that does not parse is no transport error: nothing was sent).
func loginRefused(ctx context.Context, node string, ep Endpoint, hc *http.Client, loginErr error) error {
	if ep.BasicAuth || hc == nil {
		return nil
	}
	code, answered := redfishStatus(loginErr)
	var transport *url.Error
	switch {
	case answered && code != http.StatusNotFound && code != http.StatusMethodNotAllowed:
		return nil
	case !answered && errors.As(loginErr, &transport) && transport.Op != "parse":
		return nil
	}
	sessions, ok := sessionsLink(ctx, hc, ep)
	switch {
	case !ok:
		return nil
	case sessions == "":
		return &RefusedError{Node: node, Err: errors.New("the bmc offers no session service (its service root links no Sessions collection): set basic_auth: true for this node")}
	}
	if _, err := localURI(node, ep.Host, sessions); err != nil {
		return err
	}
	if code != 0 {
		return &RefusedError{Node: node, Status: code, Err: fmt.Errorf("the bmc offers no session service (the login at %s was answered %d): set basic_auth: true for this node", sessions, code)}
	}
	return nil
}

// sessionsLink reads the service root's Links.Sessions; ok is false when the root could not be
// read as JSON.
func sessionsLink(ctx context.Context, hc *http.Client, ep Endpoint) (link string, ok bool) {
	root := "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(portOrDefault(ep))) + "/redfish/v1/"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root, nil)
	if err != nil {
		return "", false
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", false
	}
	defer resp.Body.Close()
	var doc struct {
		Links struct {
			Sessions struct {
				ID string `json:"@odata.id"`
			}
		}
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil {
		return "", false
	}
	return doc.Links.Sessions.ID, true
}
