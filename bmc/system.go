package bmc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/stmcginnis/gofish"

	"github.com/rotahq/rota/internal/errtext"
)

// redfishSystem is one member of a Redfish service's Systems collection, as rota reads it.
type redfishSystem struct {
	URI   string `json:"@odata.id"`
	Name  string
	Links struct {
		Chassis []struct {
			URI string `json:"@odata.id"`
		}
	}
	Actions struct {
		Reset struct {
			// Allowed is ResetType@Redfish.AllowableValues; empty when the BMC does not say
			// (then every type may be tried, as gofish does).
			Allowed []string `json:"ResetType@Redfish.AllowableValues"`
			// Target is where the Reset is posted.
			Target string `json:"target"`
		} `json:"#ComputerSystem.Reset"`
	}
}

// systemChoice is the system a node's commands reach, checked once per endpoint.
type systemChoice struct {
	endpoint string // systemKey of the endpoint it was checked for
	system   redfishSystem
	alone    bool // the BMC serves no other system
}

func systemKey(ep Endpoint) string {
	return fmt.Sprintf("%s:%d/%s", ep.Host, portOrDefault(ep), ep.SystemName)
}

// pickSystem returns the one system of a BMC that power commands reach (its URI and Reset
// target). The server is named by the system's Name: a BMC serving several systems needs a
// system_name that names exactly one, and a system_name must name one that is there. Anything
// else is refused before any command is sent.
func pickSystem(systems []redfishSystem, name string) (redfishSystem, error) {
	var named []redfishSystem
	for _, s := range systems {
		if s.Name == name {
			named = append(named, s)
		}
	}
	switch {
	case len(systems) == 0:
		return redfishSystem{}, fmt.Errorf("the bmc serves no ComputerSystem")
	case name == "" && len(systems) == 1:
		return systems[0], nil
	case name == "":
		return redfishSystem{}, fmt.Errorf("the bmc serves %d systems (%s): set system_name to the one this server is, or a command would reach them all",
			len(systems), listSystems(systems))
	case len(named) == 0:
		return redfishSystem{}, fmt.Errorf("system_name %q names none of its systems (%s)", name, listSystems(systems))
	case len(named) > 1:
		return redfishSystem{}, fmt.Errorf("system_name %q names %d of its systems (%s): system_name picks a system by Name, so rota cannot tell which one this server is",
			name, len(named), listSystems(named))
	}
	return named[0], nil
}

// listSystems names up to 8 systems: Name "a" at URI, "b" at URI, ... and N more.
func listSystems(systems []redfishSystem) string {
	const most = 8
	var parts []string
	for i, s := range systems {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(systems)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("%q at %s", s.Name, s.URI))
	}
	return "Name " + strings.Join(parts, ", ")
}

// redfishReader is one Redfish session (or basic auth) of rota's own: gofish's client over
// rota's HTTP client (httpClient), for the power state, the Reset and its task, the system
// check and the power readings. bmclib's Redfish provider is not used: it drops the answer to
// a Reset (a 202's task monitor), and it clones the HTTP transport it is given, so nothing
// under it could take an absolute link to its path or see a Retry-After.
type redfishReader struct {
	node   string
	host   string
	client *gofish.APIClient
	// rt bounds each request by the context of the call that makes it (within): gofish
	// fixes one context for a client's life, and a connection outlives the call that opened
	// it.
	rt *redfishTransport
}

// openRedfish logs in to a node's BMC (or uses basic auth) with the dialer's HTTP client (TLS,
// CA, session reuse); ctx bounds the login.
func (d *bmclibDialer) openRedfish(ctx context.Context, node string, ep Endpoint, password Secret) (*redfishReader, error) {
	hc, rt, err := d.httpClient(node, ep)
	if err != nil {
		return nil, &RefusedError{Node: node, Err: err}
	}
	defer rt.within(ctx)()
	client, err := gofish.ConnectContext(context.WithoutCancel(ctx), gofish.ClientConfig{
		Endpoint: "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(portOrDefault(ep))), Username: ep.Username,
		Password: password.Reveal(), HTTPClient: hc, BasicAuth: ep.BasicAuth,
	})
	if err != nil {
		if nerr := loginRefused(ctx, node, ep, hc, err); nerr != nil {
			return nil, nerr
		}
		return nil, rt.annotate(classifyRedfish(node, fmt.Errorf("opening connection: %w", err)))
	}
	return &redfishReader{node: node, host: ep.Host, client: client, rt: rt}, nil
}

// close logs out within ctx; it is given one of its own (the call timeout bounds each request
// too), as the operation's may have ended: the session is given back all the same.
func (r *redfishReader) close(ctx context.Context) {
	defer r.rt.within(ctx)()
	r.client.Logout()
}

// local returns uri to be asked of the endpoint. The transport has taken every link on the
// endpoint's host to its path, so an absolute URI left names another host: refused (a
// *RefusedError naming it), as rota asks nothing of a host it was not given.
func (r *redfishReader) local(uri string) (string, error) { return localURI(r.node, r.host, uri) }

// localURI is redfishReader.local for the node's endpoint on host.
func localURI(node, host, uri string) (string, error) {
	if u, err := url.Parse(uri); err != nil || (u.Scheme == "" && u.Host == "") {
		return uri, nil
	}
	return "", &RefusedError{Node: node, Err: fmt.Errorf("the bmc links %s, not on its endpoint's host %s: rota follows a bmc's links on that host only (if it is the same bmc, set host to the name it gives)",
		errtext.Quote(uri), host)}
}

// fetch reads one resource: the answer's status and body (at most 1 MiB).
func (r *redfishReader) fetch(ctx context.Context, uri string) (int, []byte, error) {
	p, err := r.local(uri)
	if err != nil {
		return 0, nil, err
	}
	defer r.rt.within(ctx)()
	resp, err := r.client.Get(p)
	if err != nil {
		return 0, nil, r.rt.annotate(classifyRedfish(r.node, fmt.Errorf("reading %s: %w", p, err)))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxRedfishBody))
	if err != nil {
		return 0, nil, &transientError{err: fmt.Errorf("reading %s: %w", p, err)}
	}
	return resp.StatusCode, b, nil
}

// get reads one resource's JSON into v.
func (r *redfishReader) get(ctx context.Context, uri string, v any) error {
	_, b, err := r.fetch(ctx, uri)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &transientError{err: fmt.Errorf("reading %s: not the json of a redfish resource: %w", uri, err)}
	}
	return nil
}

// post posts body to uri, without If-Match (Dial says why). task is the task monitor of a 202
// Accepted answer (its Location), empty for any other success.
func (r *redfishReader) post(ctx context.Context, uri string, body any) (task string, err error) {
	p, err := r.local(uri)
	if err != nil {
		return "", err
	}
	defer r.rt.within(ctx)()
	resp, err := r.client.Post(p, body)
	if err != nil {
		return "", r.rt.annotate(classifyRedfish(r.node, fmt.Errorf("posting to %s: %w", p, err)))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusAccepted {
		return resp.Header.Get("Location"), nil
	}
	return "", nil
}

// collection reads the @odata.id of each member of a collection.
func (r *redfishReader) collection(ctx context.Context, uri string) ([]string, error) {
	var coll struct {
		Members []struct {
			ID string `json:"@odata.id"`
		}
	}
	if err := r.get(ctx, uri, &coll); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(coll.Members))
	for _, m := range coll.Members {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// system returns the system the node's commands reach: checked (pickSystem) at the first
// operation on the endpoint, remembered after. A check that fails is made again at the next
// operation.
func (d *bmclibDialer) system(ctx context.Context, node string, ep Endpoint, r *redfishReader) (systemChoice, error) {
	if c, ok := d.checkedSystem(node, ep); ok {
		return c, nil
	}
	uris, err := r.collection(ctx, "/redfish/v1/Systems")
	if err != nil {
		return systemChoice{}, err
	}
	systems := make([]redfishSystem, len(uris))
	for i, uri := range uris {
		if err := r.get(ctx, uri, &systems[i]); err != nil {
			return systemChoice{}, err
		}
		systems[i].URI = uri
	}
	s, err := pickSystem(systems, ep.SystemName)
	if err != nil {
		return systemChoice{}, &RefusedError{Node: node, Err: fmt.Errorf("choosing the system to command: %w", err)}
	}
	c := systemChoice{endpoint: systemKey(ep), system: s, alone: len(systems) == 1}
	d.mu.Lock()
	if d.systems == nil {
		d.systems = map[string]systemChoice{}
	}
	d.systems[node] = c
	d.mu.Unlock()
	return c, nil
}

// forgetSystem drops the node's checked system, so that the next operation reads it again.
func (d *bmclibDialer) forgetSystem(node string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.systems, node)
}

// checkedSystem returns the node's system as checked for this endpoint, if it was.
func (d *bmclibDialer) checkedSystem(node string, ep Endpoint) (systemChoice, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.systems[node]
	return c, ok && c.endpoint == systemKey(ep)
}
