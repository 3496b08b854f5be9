package bmc

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"

	gofishcommon "github.com/stmcginnis/gofish/common"
)

func TestClassify(t *testing.T) {
	wrap := func(err error) error {
		// bmclib wraps provider errors in a multierror with context: keep the chain.
		return fmt.Errorf("opening connection: %w", errors.Join(fmt.Errorf("provider: gofish: %w", err), errors.New("no Opener implementations found")))
	}
	collection := func(code int) error {
		ce := gofishcommon.NewCollectionError()
		ce.Failures["/redfish/v1/Systems/1"] = gofishcommon.ConstructError(code, []byte(`{"error":{"code":"x","message":"y"}}`))
		return ce
	}
	tests := []struct {
		name   string
		proto  Protocol
		err    error
		pong   bool
		want   error // ErrAuth, ErrRefused, or nil for retryable
		status int
	}{
		{"401 at login", ProtocolRedfish, wrap(gofishcommon.ConstructError(401, nil)), false, ErrAuth, 0},
		{"403", ProtocolRedfish, wrap(gofishcommon.ConstructError(403, nil)), false, ErrAuth, 0},
		{"401 inside a collection", ProtocolRedfish, wrap(collection(401)), false, ErrAuth, 0},
		{"409 refused", ProtocolRedfish, wrap(gofishcommon.ConstructError(409, nil)), false, ErrRefused, 409},
		{"412 is refused (rota sends no If-Match: no etag race to win)", ProtocolRedfish, wrap(gofishcommon.ConstructError(412, nil)), false, ErrRefused, 412},
		{"503 is retried", ProtocolRedfish, wrap(gofishcommon.ConstructError(503, nil)), false, nil, 0},
		{"500 inside a collection is retried", ProtocolRedfish, wrap(collection(500)), false, nil, 0},
		{"untrusted certificate", ProtocolRedfish, wrap(x509.UnknownAuthorityError{}), false, ErrAuth, 0},
		{"network error", ProtocolRedfish, wrap(errors.New("connection refused")), false, nil, 0},
		{"ipmi session refused by a bmc that answers", ProtocolIPMI, wrap(errors.New("Error: Unable to establish IPMI v2 / RMCP+ session")), true, ErrAuth, 0},
		{"ipmi session refused, bmc silent", ProtocolIPMI, wrap(errors.New("Error: Unable to establish IPMI v2 / RMCP+ session")), false, nil, 0},
		{"ipmi other failure", ProtocolIPMI, wrap(errors.New("Get Chassis Power Status failed: Unspecified error")), true, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := classifyRedfish("n", tt.err)
			if tt.proto == ProtocolIPMI {
				c := &bmclibConn{node: "n", ep: Endpoint{Protocol: tt.proto, Host: "h"}, ping: func(context.Context, string) bool { return tt.pong }}
				got = c.classify(context.Background(), tt.err)
			}
			switch {
			case tt.want == nil && !retryable(got):
				t.Errorf("classify = %v, want retryable", got)
			case tt.want != nil && !errors.Is(got, tt.want):
				t.Errorf("classify = %v, want %v", got, tt.want)
			}
			var re *RefusedError
			if tt.status != 0 && (!errors.As(got, &re) || re.Status != tt.status) {
				t.Errorf("want a RefusedError with status %d, got %v", tt.status, got)
			}
		})
	}
}
