package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string // content, or the error's text when wantErr
		wantErr bool
	}{
		{"owner and group", "s3cret\n", 0o640, "s3cret\n", false},
		{"owner alone", "s3cret", 0o400, "s3cret", false},
		{"every user reads", "s3cret", 0o644, "is open to every user (mode 0644): chmod o-rw", true},
		{"every user writes", "s3cret", 0o662, "(mode 0662)", true},
		{"larger than the limit", strings.Repeat("a", 17), 0o600, "is larger than 16 bytes", true},
		{"at the limit", strings.Repeat("a", 16), 0o600, strings.Repeat("a", 16), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil {
				t.Fatal(err)
			}
			got, err := Read("password_file", path, 16)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error %v, want one naming %s with %q and no secret", err, path, tc.want)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Fatalf("Read = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	if _, err := Read("password_file", filepath.Join(dir, "missing"), 16); err == nil || !strings.HasPrefix(err.Error(), "reading password_file: ") {
		t.Errorf("a missing file: %v", err)
	}
}
