package promfacts

import (
	"fmt"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/rotahq/rota/scaler/config"
)

// NewAPI is a Prometheus HTTP API client for p: its URL and HTTP client config (basic auth,
// bearer token file, TLS, proxy).
func NewAPI(p config.Prometheus) (v1.API, error) {
	rt, err := promconfig.NewRoundTripperFromConfig(p.HTTPClient, "rota")
	if err != nil {
		return nil, fmt.Errorf("prometheus http client: %w", err)
	}
	client, err := api.NewClient(api.Config{Address: p.URL, RoundTripper: rt})
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
