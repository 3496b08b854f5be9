package config

import (
	"strings"
	"testing"
)

// TestFleetDigest: the digest follows what decides the fleet's behaviour, not each rota's own
// host settings, and is the same for the same file.
func TestFleetDigest(t *testing.T) {
	digest := func(y string) string {
		t.Helper()
		c, err := Parse([]byte(y))
		if err != nil {
			t.Fatal(err)
		}
		return c.FleetDigest()
	}
	base := digest(minimal)
	if len(base) != 12 || digest(minimal) != base {
		t.Fatalf("digest %q, then %q: want 12 hex digits, the same each time", base, digest(minimal))
	}
	for name, y := range map[string]string{
		"a policy":    minimal + "policy: {idle: {window: 5m}}\n",
		"a pool":      strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 2}", 1),
		"the classes": minimal + "classes: [{name: all}]\n",
		"bmc limits":  minimal + "bmc: {concurrency: 4}\n",
	} {
		if digest(y) == base {
			t.Errorf("%s changed: the digest did not", name)
		}
	}
	for name, y := range map[string]string{
		"the listener":     strings.Replace(minimal, "webhook_auth_disabled: true", "webhook_auth_disabled: true\n  listen_address: 127.0.0.1:10099", 1),
		"prometheus' url":  minimal + "prometheus: {url: http://prom.example:9090}\n",
		"the store's path": minimal + "store: {path: /srv/rota.db}\n",
	} {
		if digest(y) != base {
			t.Errorf("%s changed: the digest did too", name)
		}
	}
}
