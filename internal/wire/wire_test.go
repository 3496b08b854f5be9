package wire

import (
	"testing"
	"time"

	"github.com/rotahq/rota/scaler/config"
)

// TestSpacing: the config's min_command_interval reaches the BMC controller as written, and
// `0s` means no spacing, not bmc.Options' own default of a second.
func TestSpacing(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want time.Duration
	}{
		{"", 5 * time.Second},
		{"bmc: {min_command_interval: 250ms}", 250 * time.Millisecond},
		{"bmc: {min_command_interval: 0s}", -1},
	} {
		cfg, err := config.ParseFor([]byte(tt.yaml+"\npools: [{name: p, profile: {cpu_cores: 8}, nodes: [{name: n1}]}]\n"), config.Replay)
		if err != nil {
			t.Fatal(err)
		}
		if got := spacing(cfg.BMC); got != tt.want {
			t.Errorf("%q: spacing %s, want %s", tt.yaml, got, tt.want)
		}
	}
}
