package promfacts

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
)

// NewAPI is a Prometheus HTTP API client for p: its URL and HTTP client config (basic auth,
// bearer token file, TLS, proxy). A redirect is followed only where
// prometheus.http_client.follow_redirects says so and it keeps the query (307, 308); any other
// is an error that names where Prometheus sent rota. (The client POSTs its queries: a 301 or
// 302 followed would ask again by GET without the query, and Prometheus answer "no expression
// found", which says nothing of the redirect.)
func NewAPI(p config.Prometheus) (v1.API, error) {
	hc, err := promconfig.NewClientFromConfig(p.HTTPClient, "rota")
	if err != nil {
		return nil, fmt.Errorf("prometheus http client: %w", err)
	}
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		code := req.Response.StatusCode
		switch {
		case !p.HTTPClient.FollowRedirects:
			return fmt.Errorf("prometheus answered %d, redirecting to %s: set prometheus.url to where it redirects (or prometheus.http_client.follow_redirects: true for a 307 or 308)", code, req.URL.Redacted())
		case code != http.StatusTemporaryRedirect && code != http.StatusPermanentRedirect:
			return fmt.Errorf("prometheus answered %d, redirecting to %s: a %d would lose the query; set prometheus.url to where it redirects", code, req.URL.Redacted(), code)
		case len(via) >= 10:
			return fmt.Errorf("prometheus redirected rota 10 times, last to %s", req.URL.Redacted())
		}
		return nil
	}
	client, err := api.NewClient(api.Config{Address: p.URL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return v1.NewAPI(client), nil
}

// AnswerType names what an instant query answered: its value's type, or "success without data"
// where the answer had none (a proxy or store speaking the API badly), which the client gives
// as a nil value whose Type() would panic.
func AnswerType(v model.Value) string {
	if v == nil {
		return "success without data"
	}
	return v.Type().String()
}
