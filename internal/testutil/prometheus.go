package testutil

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"
)

// readinessQuery finds the node of rota's readiness query (alerts.Expr.ExporterNewestSample).
var readinessQuery = regexp.MustCompile(`up\{node="([^"]+)"\} == 1`)

// Prometheus starts a stand-in for Prometheus' query API, for tests of the rota binary that
// need no telemetry: every instant query answers an empty vector (no data: no server is ever
// idle), except rota's readiness query for a node that up reports up, which answers one sample
// of that node taken now. It is closed at cleanup; it returns its URL.
func Prometheus(t testing.TB, up func(node string) bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		result := ""
		if m := readinessQuery.FindStringSubmatch(r.Form.Get("query")); m != nil && up(m[1]) {
			now := time.Now().Unix()
			result = fmt.Sprintf(`{"metric":{"node":%q},"value":[%d,"%d"]}`, m[1], now, now)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, result)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
