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
)

// resetTypes are the Redfish ResetTypes bmclib v2.3.4's Redfish provider posts for each action.
var resetTypes = map[string]string{
	actionOn:   "On",
	actionOff:  "ForceOff",
	actionSoft: "GracefulShutdown",
}

// offered refuses, before anything is sent, an action whose ResetType the node's system does
// not list in ResetType@Redfish.AllowableValues. gofish refuses such a Reset itself, without a
// request and with an error of no type or status, which would pass for a transient failure:
// retried, and a graceful off waiting out its grace period for a shutdown never asked. The
// refusal makes the next operation read the system again (a firmware update may add the type).
func (c *bmclibConn) offered(action string) error {
	if c.system == nil || len(c.system.Actions.Reset.Allowed) == 0 {
		return nil
	}
	rt := resetTypes[action]
	if rt == "" || slices.Contains(c.system.Actions.Reset.Allowed, rt) {
		return nil
	}
	c.d.forgetSystem(c.node)
	return &RefusedError{Node: c.node, Err: fmt.Errorf("system %s does not offer ResetType %s (ResetType@Redfish.AllowableValues: %s)",
		c.system.URI, rt, strings.Join(c.system.Actions.Reset.Allowed, ", "))}
}

// noSessionService returns a *RefusedError when a Redfish login failed because the BMC has no
// session service: its service root links no Sessions collection (gofish then posts the login
// nowhere and fails without a request or a status: "no target provided"), or the login was
// answered 404 or 405. Such a BMC takes basic auth alone, which the endpoint must ask for;
// retrying the login would only fail again, and a 404 must not pass for a BMC without a power
// reading. Anything else returns nil. It reads the service root itself (no credentials needed)
// only when the failure could be one of these: a 404 or 405, or a failure with neither a
// status nor a transport error.
func noSessionService(ctx context.Context, node string, ep Endpoint, hc *http.Client, loginErr error) error {
	if ep.BasicAuth || hc == nil {
		return nil
	}
	code, answered := redfishStatus(loginErr)
	var transport *url.Error
	switch {
	case answered && code != http.StatusNotFound && code != http.StatusMethodNotAllowed:
		return nil
	case !answered && errors.As(loginErr, &transport):
		return nil
	}
	sessions, ok := sessionsLink(ctx, hc, ep)
	switch {
	case !ok:
		return nil
	case sessions == "":
		return &RefusedError{Node: node, Err: errors.New("the bmc offers no session service (its service root links no Sessions collection): set basic_auth: true for this node")}
	case code != 0:
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
