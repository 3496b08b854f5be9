package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/mdlayher/vsock"
	"github.com/prometheus/exporter-toolkit/web"

	"github.com/rotahq/rota/internal/webconfig"
)

// listen opens what exporter-toolkit's web.ListenAndServe would listen on, systemd's sockets
// with --web.systemd-socket, else every --web.listen-address (a vsock:// one on vsock), each
// accepting at most max connections at once (--web.max-connections; 0: no limit), counted in
// conns.
// exporter-toolkit has no such bound, so the exporter opens the listeners itself and serves
// them with web.ServeMultiple, which applies the web config (TLS, basic auth) over them as
// before. On error, whatever was opened is closed again.
func listen(f *web.FlagConfig, max int, conns *webconfig.Connections) (ls []net.Listener, err error) {
	defer func() {
		if err != nil {
			for _, l := range ls {
				_ = l.Close()
			}
			ls = nil
		}
	}()
	if *f.WebSystemdSocket {
		all, err := activation.Listeners()
		for i, l := range all {
			switch {
			case l != nil:
				ls = append(ls, l)
			case err == nil: // activation leaves a gap for a socket that is not a stream's
				err = fmt.Errorf("--web.systemd-socket: socket %d of the %d systemd passed is not a stream socket", i+1, len(all))
			}
		}
		if err == nil && len(ls) == 0 {
			err = errors.New("--web.systemd-socket: systemd passed no socket")
		}
		if err != nil {
			return ls, err
		}
	} else {
		for _, address := range *f.WebListenAddresses {
			l, err := listenOn(address)
			if err != nil {
				return ls, err
			}
			ls = append(ls, l)
		}
	}
	for i, l := range ls {
		ls[i] = webconfig.LimitConnections(l, max, conns)
	}
	return ls, nil
}

// listenOn listens on one --web.listen-address: TCP, or vsock for vsock://[cid]:port.
func listenOn(address string) (net.Listener, error) {
	if !strings.HasPrefix(address, "vsock://") {
		return net.Listen("tcp", address)
	}
	port, err := vsockPort(address)
	if err != nil {
		return nil, err
	}
	l, err := vsock.Listen(port, nil)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", address, err)
	}
	return l, nil
}

// vsockPort reads the port of a vsock:// listen address as exporter-toolkit does (the host part
// is not used: vsock listens on the machine's own context id).
func vsockPort(address string) (uint32, error) {
	u, err := url.Parse(address)
	if err != nil {
		return 0, fmt.Errorf("--web.listen-address %q: %w", address, err)
	}
	_, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return 0, fmt.Errorf("--web.listen-address %q: %w", address, err)
	}
	p, err := strconv.ParseUint(port, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("--web.listen-address %q: port %q is not a number from 0 to 4294967295", address, port)
	}
	return uint32(p), nil
}
