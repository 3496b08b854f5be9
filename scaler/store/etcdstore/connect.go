package etcdstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/rotahq/rota/internal/secretfile"
	"github.com/rotahq/rota/scaler/config"
)

// Options say how to reach etcd.
type Options struct {
	Endpoints []string
	// TLS, if set, is used for every endpoint (https:// endpoints need it).
	TLS                *tls.Config
	Username, Password string
	// DialTimeout bounds the first contact with each endpoint, RequestTimeout every request.
	DialTimeout, RequestTimeout time.Duration
}

// reconnectMaxDelay is the longest the client waits between attempts to connect to an etcd
// member it lost (gRPC's own: two minutes), so it is back within seconds of etcd's return.
const reconnectMaxDelay = 2 * time.Second

// Connect makes a client of the etcd cluster at o.Endpoints and checks that it answers within
// o.DialTimeout. When it does not, each endpoint is probed to say why (unreachable, TLS
// refused, plain HTTP against TLS...): the error names the endpoint and what failed.
func Connect(ctx context.Context, o Options) (*clientv3.Client, error) {
	if len(o.Endpoints) == 0 {
		return nil, errors.New("no etcd endpoint")
	}
	bo := backoff.DefaultConfig
	bo.MaxDelay = reconnectMaxDelay
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   o.Endpoints,
		DialTimeout: o.DialTimeout,
		TLS:         o.TLS,
		Username:    o.Username,
		Password:    o.Password,
		Logger:      zap.NewNop(),
		// Keepalive pings find a connection cut off, or a member frozen, within 10 s (gRPC's
		// floor for the ping interval, whatever is asked) and the request timeout, not at the
		// kernel's pace.
		DialKeepAliveTime:    o.RequestTimeout,
		DialKeepAliveTimeout: o.RequestTimeout,
		// etcd's --max-request-bytes decides how large a write may be, not the client's own
		// 2 MiB: the cost books of 10,000 servers are some 2.2 MB (install.md).
		MaxCallSendMsgSize: math.MaxInt32,
		Context:            ctx,
		// Reconnect soon after etcd returns, however long it was away; an attempt that gets
		// no answer (packets dropped) gives up after the dial timeout, not gRPC's 20 s.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: bo, MinConnectTimeout: o.DialTimeout,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("connecting to etcd %s: %w", strings.Join(o.Endpoints, ","), err)
	}
	cctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	// A user whose role reaches only the fleet's prefix may not read the key asked: etcd
	// answered, and took the credentials.
	if _, err := cli.Get(cctx, "rota-connect-check", clientv3.WithCountOnly()); err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
		_ = cli.Close()
		return nil, fmt.Errorf("etcd does not answer (%w): %s", err, diagnose(ctx, o))
	}
	return cli, nil
}

// diagnose probes each endpoint as the client would and says what fails.
func diagnose(ctx context.Context, o Options) string {
	var out []string
	for _, ep := range o.Endpoints {
		out = append(out, ep+": "+probe(ctx, ep, o))
	}
	return strings.Join(out, "; ")
}

func probe(ctx context.Context, ep string, o Options) string {
	host, secure := ep, o.TLS != nil
	if u, err := url.Parse(ep); err == nil && u.Host != "" {
		host = u.Host
		secure = u.Scheme == "https" || u.Scheme == "unixs" || (o.TLS != nil && u.Scheme != "http")
	}
	d := net.Dialer{Timeout: o.DialTimeout}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return "unreachable: " + err.Error()
	}
	defer conn.Close()
	if !secure {
		return "reachable over TCP, but it does not answer etcd requests (a TLS-only etcd needs an https:// endpoint and store.etcd.tls_config; or credentials are refused)"
	}
	cfg := &tls.Config{}
	if o.TLS != nil {
		cfg = o.TLS.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(host)
	}
	hctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(hctx); err != nil {
		return "TLS handshake failed: " + err.Error()
	}
	// A TLS 1.3 server that wants a client certificate refuses it after the handshake, when
	// it reads the client's first bytes: ask for /health (etcd serves HTTP on its client port
	// too) and read the answer or the refusal, however slow the host, rather than guess from
	// silence.
	dl, _ := hctx.Deadline()
	_ = tc.SetDeadline(dl)
	req := "GET /health HTTP/1.1\r\nHost: " + cfg.ServerName + "\r\nConnection: close\r\n\r\n"
	var one [1]byte
	_, err = tc.Write([]byte(req))
	if err == nil {
		_, err = tc.Read(one[:])
	}
	var ne net.Error
	if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
		return "TLS refused: " + err.Error()
	}
	return "TLS works, but it does not answer etcd requests (credentials refused, or no quorum)"
}

// maxPasswordFile bounds what is read of store.etcd.password_file, as a BMC's is bounded.
const maxPasswordFile = 4096

// OptionsFrom is how the config's store.etcd reaches etcd: TLS (prometheus/common's
// tls_config) for https:// endpoints, and the password read from its file, which is refused
// when every user may read or write it (internal/secretfile, as the token and BMC password
// files are).
func OptionsFrom(e config.EtcdStore) (Options, error) {
	o := Options{Endpoints: e.Endpoints, Username: e.Username,
		DialTimeout: time.Duration(e.DialTimeout), RequestTimeout: time.Duration(e.RequestTimeout)}
	if len(e.Endpoints) > 0 && strings.HasPrefix(e.Endpoints[0], "https://") {
		tc, err := promconfig.NewTLSConfig(&e.TLS)
		if err != nil {
			return Options{}, fmt.Errorf("store.etcd.tls_config: %w", err)
		}
		tc.MinVersion = max(tc.MinVersion, tls.VersionTLS12)
		o.TLS = tc
	}
	if e.PasswordFile != "" {
		b, err := secretfile.Read("password_file", e.PasswordFile, maxPasswordFile)
		if err != nil {
			return Options{}, fmt.Errorf("store.etcd.password_file: %w", err)
		}
		o.Password = strings.TrimSpace(string(b))
	}
	return o, nil
}

// ConnectConfig connects as the config's store.etcd says; its errors name the config key.
func ConnectConfig(ctx context.Context, e config.EtcdStore) (*clientv3.Client, error) {
	o, err := OptionsFrom(e)
	if err != nil {
		return nil, err
	}
	cli, err := Connect(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("store.etcd.endpoints: %w", err)
	}
	return cli, nil
}
