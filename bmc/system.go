package bmc

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/stmcginnis/gofish"
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

// pickSystem returns the one system of a BMC that power commands may reach. bmclib's Redfish
// provider commands every system the BMC serves, unless one's Name equals system_name (then
// that one, or the first of several of that Name), and reads the power state of the first it
// read (in no fixed order): so a BMC serving several systems needs a system_name that names
// exactly one, and a system_name must name one that is there. Anything else is refused before
// any command is sent.
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
		return redfishSystem{}, fmt.Errorf("system_name %q names %d of its systems (%s): bmclib picks a system by Name, so rota cannot command one of them alone",
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

// redfishReader reads Redfish resources as JSON over a gofish connection (a session, or basic
// auth).
type redfishReader struct {
	node   string
	client *gofish.APIClient
}

// openRedfish logs in to a node's BMC with the dialer's HTTP client (TLS, CA, session reuse).
func (d *bmclibDialer) openRedfish(ctx context.Context, node string, ep Endpoint, password Secret) (*redfishReader, error) {
	hc, err := d.httpClient(node, ep)
	if err != nil {
		return nil, &RefusedError{Node: node, Err: err}
	}
	client, err := gofish.ConnectContext(ctx, gofish.ClientConfig{
		Endpoint: "https://" + net.JoinHostPort(ep.Host, strconv.Itoa(portOrDefault(ep))), Username: ep.Username,
		Password: password.Reveal(), HTTPClient: hc, BasicAuth: ep.BasicAuth,
	})
	if err != nil {
		if nerr := noSessionService(ctx, node, ep, hc, err); nerr != nil {
			return nil, nerr
		}
		return nil, classifyRedfish(node, fmt.Errorf("opening connection: %w", err))
	}
	return &redfishReader{node: node, client: client}, nil
}

func (r *redfishReader) close() { r.client.Logout() }

// get reads one resource into v (at most 1 MiB of JSON).
func (r *redfishReader) get(uri string, v any) error {
	resp, err := r.client.Get(uri)
	if err != nil {
		return classifyRedfish(r.node, fmt.Errorf("reading %s: %w", uri, err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return &transientError{err: fmt.Errorf("reading %s: %w", uri, err)}
	}
	if err := json.Unmarshal(b, v); err != nil {
		return &transientError{err: fmt.Errorf("reading %s: not the json of a redfish resource: %w", uri, err)}
	}
	return nil
}

// collection reads the @odata.id of each member of a collection.
func (r *redfishReader) collection(uri string) ([]string, error) {
	var coll struct {
		Members []struct {
			ID string `json:"@odata.id"`
		}
	}
	if err := r.get(uri, &coll); err != nil {
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
func (d *bmclibDialer) system(node string, ep Endpoint, r *redfishReader) (systemChoice, error) {
	if c, ok := d.checkedSystem(node, ep); ok {
		return c, nil
	}
	uris, err := r.collection("/redfish/v1/Systems")
	if err != nil {
		return systemChoice{}, err
	}
	systems := make([]redfishSystem, len(uris))
	for i, uri := range uris {
		if err := r.get(uri, &systems[i]); err != nil {
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

// checkSystem makes sure, before bmclib sends anything, that the node's commands reach its
// own system alone (system).
func (d *bmclibDialer) checkSystem(ctx context.Context, node string, ep Endpoint, password Secret) error {
	if _, ok := d.checkedSystem(node, ep); ok {
		return nil
	}
	r, err := d.openRedfish(ctx, node, ep, password)
	if err != nil {
		return err
	}
	defer r.close()
	_, err = d.system(node, ep, r)
	return err
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
