package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// rota started in / (as systemd starts it) reads a relative server.api_token_file from the
// config's folder, and its errors name the field and the path it tried; it tried
// /api.token, and said only "open api.token: no such file or directory".
func TestRelativeTokenFileIsReadBesideTheConfig(t *testing.T) {
	dir := t.TempDir()
	conf := writeFile(t, dir, "rota.yml", "server:\n  api_token_file: api.token\n  webhook_auth_disabled: true\nstore: {path: "+filepath.Join(dir, "rota.db")+"}\n"+onePool)
	token := filepath.Join(dir, "api.token")
	for _, tc := range []struct {
		name  string
		write func()
		want  string
	}{
		{"missing", func() {}, "server.api_token_file: reading token file: open " + token + ": no such file or directory"},
		// Found beside the config: the mode is what is wrong with it.
		{"open to every user", func() { writeFile(t, dir, "api.token", "s3cret\n"); _ = os.Chmod(token, 0o644) },
			"server.api_token_file: token file " + token + " is open to every user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.write()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, rotaBinary, "--config.file", conf)
			cmd.Dir = "/"
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1: %s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
		})
	}
}
