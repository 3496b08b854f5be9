package config

import (
	"strings"
	"testing"
)

// minimalDigest is the minimal config's digest. It changes with any default that enters the
// digest (a policy default, the BMC limits'): rotas of two releases then report each other's
// config as different until both run the new one, which a closing note should say.
const minimalDigest = "7afe92e4dc0f"

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
	// A config without prometheus.fleet keeps the digest it had before the label entered it
	// (the minimal config's, recorded then): rotas of two releases agree during an upgrade.
	if base != minimalDigest {
		t.Errorf("the minimal config's digest is %s, want %s as before", base, minimalDigest)
	}
	for name, y := range map[string]string{
		"a policy":                       minimal + "policy: {idle: {window: 5m}}\n",
		"a pool":                         strings.Replace(minimal, "cost: {hourly: 1.5}", "cost: {hourly: 2}", 1),
		"the classes":                    minimal + "classes: [{name: all}]\n",
		"bmc limits":                     minimal + "bmc: {concurrency: 4}\n",
		"the fleet label queries select": minimal + "prometheus: {fleet: lab-b}\n",
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
