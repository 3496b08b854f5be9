package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/rotahq/rota/scaler/api"
)

// apiFlags are the flags of every verb that talks to a running rota.
type apiFlags struct {
	url       string
	tokenFile string
	caFile    string
	timeout   time.Duration
}

// addAPIFlags adds --rota.url, --rota.token-file (or ROTA_TOKEN_FILE), --rota.ca-file and
// --rota.timeout to c.
func addAPIFlags(c *kingpin.CmdClause) *apiFlags {
	f := &apiFlags{}
	checkedValue(c.Flag("rota.url", "URL of the rota to talk to.").Default("http://127.0.0.1:10091"), &f.url, api.CheckURL)
	c.Flag("rota.token-file", "File holding the operator API token (rota's server.api_token_file).").Envar("ROTA_TOKEN_FILE").StringVar(&f.tokenFile)
	c.Flag("rota.ca-file", "PEM file of the CA that signs rota's certificate, for an https --rota.url (default: the system's CAs).").StringVar(&f.caFile)
	positiveDuration(c.Flag("rota.timeout", "Bound on each call to rota.").Default("2m"), &f.timeout)
	return f
}

// client returns an API client; a token file that cannot be read is an error, no token file
// sends no token (rota then answers 401, and apiFailed says what to do).
func (f *apiFlags) client() (*api.Client, error) {
	var tok api.Token
	if f.tokenFile != "" {
		var err error
		if tok, err = api.ReadTokenFile(f.tokenFile); err != nil {
			return nil, err
		}
	}
	hc := &http.Client{Timeout: f.timeout}
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("--rota.ca-file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--rota.ca-file: %s holds no PEM certificate", f.caFile)
		}
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	return api.NewClient(f.url, tok, hc)
}

// apiFailed prints why a call failed, with a hint for the usual causes, and returns exit code 1.
func apiFailed(e env, err error) int {
	fmt.Fprintln(e.stderr, "rotactl:", err)
	var se *api.StatusError
	if errors.As(err, &se) {
		switch se.Code {
		case http.StatusUnauthorized:
			fmt.Fprintln(e.stderr, "rotactl: pass --rota.token-file (or set ROTA_TOKEN_FILE) to the file rota's server.api_token_file names")
		case http.StatusForbidden:
			fmt.Fprintln(e.stderr, "rotactl: the token is not rota's server.api_token_file token, or rota has no API token set")
		case http.StatusNotFound:
			fmt.Fprintln(e.stderr, "rotactl: no rota operator API answers at --rota.url: is it rota's listener (server.listen_address)?")
		case http.StatusServiceUnavailable:
			fmt.Fprintln(e.stderr, "rotactl: that rota does not lead; send the write to the leader (rotactl status names it; with store.etcd.advertise_url set, rotactl follows it itself)")
		}
	}
	return 1
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// withUser prefixes an operator's note with who wrote it, as pins and pauses are audited.
func withUser(note string) string {
	who := os.Getenv("USER")
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	switch {
	case who == "":
		return note
	case note == "":
		return who
	}
	return who + ": " + note
}

// outputFlag adds --output table|json to c.
func outputFlag(c *kingpin.CmdClause, v *string) {
	c.Flag("output", "Output format: table or json.").Short('o').Default("table").EnumVar(v, "table", "json")
}
