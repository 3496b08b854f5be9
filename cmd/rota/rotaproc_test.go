package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rotahq/rota/internal/testutil"
	"github.com/rotahq/rota/scaler/api"
	"github.com/rotahq/rota/scaler/fleet"
)

// Every rota a test starts with startRota takes these tokens (from the files tokenFiles writes).
const (
	testAPIToken     = "api-token"
	testWebhookToken = "webhook-token"
)

// tokenFiles writes the API and webhook token files into dir.
func tokenFiles(tb testing.TB, dir string) (apiTokenFile, webhookTokenFile string) {
	tb.Helper()
	apiTokenFile, webhookTokenFile = filepath.Join(dir, "api.token"), filepath.Join(dir, "webhook.token")
	for p, tok := range map[string]string{apiTokenFile: testAPIToken, webhookTokenFile: testWebhookToken} {
		if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return apiTokenFile, webhookTokenFile
}

// rotaUnderTest is the rota binary a test started, listening on base, and how the test talks
// to it: the operator API and the Alertmanager webhook.
type rotaUnderTest struct {
	tb      testing.TB
	base    string
	client  *api.Client
	webhook []byte // an Alertmanager notification of a firing rota alert
}

// startRota runs the rota binary on cfg (listening on 127.0.0.1:port, with tokenFiles' tokens)
// with env added, and waits until it is ready. It is stopped at cleanup.
func startRota(tb testing.TB, cfg string, port int, env ...string) *rotaUnderTest {
	tb.Helper()
	testutil.StartEnv(tb, env, rotaBinary, "--config.file", cfg)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testutil.WaitHTTP(tb, base+"/-/ready", 60*time.Second)
	fixture, err := os.ReadFile(filepath.Join(testutil.RepoRoot(tb), "scaler", "api", "testdata", "alertmanager", "alertmanager-v4-backlog.json"))
	if err != nil {
		tb.Fatal(err)
	}
	c, err := api.NewClient(base, api.NewToken(testAPIToken), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &rotaUnderTest{tb: tb, base: base, client: c, webhook: fixture}
}

// nudge sends the webhook: rota runs a pass.
func (r *rotaUnderTest) nudge() {
	r.tb.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.base+"/api/v1/alerts", bytes.NewReader(r.webhook))
	req.Header.Set("Authorization", "Bearer "+testWebhookToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		r.tb.Fatalf("webhook answered %s", resp.Status)
	}
}

// node is what rota's last pass says of one node.
func (r *rotaUnderTest) node(name string) (api.NodeStatus, time.Time, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := r.client.Status(ctx)
	if err != nil {
		return api.NodeStatus{}, time.Time{}, err
	}
	for _, n := range st.Nodes {
		if n.Name == name {
			return n, st.LastPass, nil
		}
	}
	return api.NodeStatus{}, time.Time{}, fmt.Errorf("%s is not in rota's status", name)
}

// waitFor waits until rota reports node in state want, nudging it with a webhook now and then
// when nudge is set (for tests whose passes run only when asked); then until no pass has run
// for a while, so no pass is left pending when the next measurement starts.
func (r *rotaUnderTest) waitFor(node string, want fleet.State, nudge bool) {
	r.tb.Helper()
	var lastNudge time.Time
	testutil.Eventually(r.tb, 60*time.Second, node+" "+string(want), func() error {
		if nudge && time.Since(lastNudge) > time.Second {
			r.nudge()
			lastNudge = time.Now()
		}
		n, _, err := r.node(node)
		if err != nil {
			return err
		}
		if n.State != want {
			return fmt.Errorf("%s is %q (%s: %s)", node, n.State, n.Reason, n.Detail)
		}
		return nil
	})
	quiet := 300 * time.Millisecond
	testutil.Eventually(r.tb, 30*time.Second, "no pass for "+quiet.String(), func() error {
		_, last, err := r.node(node)
		if err != nil {
			return err
		}
		if since := time.Since(last); since < quiet {
			return fmt.Errorf("last pass %s ago", since)
		}
		return nil
	})
}
